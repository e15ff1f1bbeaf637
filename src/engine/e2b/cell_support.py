import ast, base64, builtins, json, os, sys, traceback

marker = None

MIMES = {
    "text/plain": "text", "text/html": "html", "text/markdown": "markdown",
    "image/svg+xml": "svg", "image/png": "png", "image/jpeg": "jpeg",
    "application/pdf": "pdf", "text/latex": "latex", "application/json": "json",
    "application/javascript": "javascript",
}
METHODS = [
    ("_repr_html_", "html"), ("_repr_markdown_", "markdown"), ("_repr_svg_", "svg"),
    ("_repr_png_", "png"), ("_repr_jpeg_", "jpeg"), ("_repr_pdf_", "pdf"),
    ("_repr_latex_", "latex"), ("_repr_json_", "json"), ("_repr_javascript_", "javascript"),
]
BINARY = ("png", "jpeg", "pdf")
BACKEND = "module://__e2b__"


def emit(kind, payload):
    try:
        sys.stdout.flush()
    except Exception:
        pass
    out = sys.__stdout__
    out.write("%s %s %s\n" % (marker, kind, json.dumps(payload, default=str)))
    out.flush()


def _method(value, name):
    # IPython's rule: no rich methods on a class, nor on an object that answers every name.
    if isinstance(value, type):
        return None
    try:
        if getattr(value, "_ipython_canary_method_should_not_exist_", None) is not None:
            return None
        found = getattr(value, name, None)
    except Exception:
        return None
    return found if callable(found) else None


def _put(found, key, data):
    if isinstance(data, tuple) and len(data) == 2:
        data = data[0]
    if data is None:
        return
    if key in BINARY and isinstance(data, (bytes, bytearray)):
        data = base64.b64encode(bytes(data)).decode()
    elif key == "json" and isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError:
            return
    elif isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8", "replace")
    found[key] = data


def formats(value):
    found = {}
    bundle = _method(value, "_repr_mimebundle_")
    if bundle is not None:
        try:
            data = bundle(include=None, exclude=None)
        except Exception:
            data = None
        if isinstance(data, tuple):
            data = data[0]
        if isinstance(data, dict):
            for mime, item in data.items():
                key = MIMES.get(mime)
                if key is not None:
                    _put(found, key, item)
                elif item is not None:
                    found.setdefault("extra", {})[mime] = item
    for name, key in METHODS:
        method = None if key in found else _method(value, name)
        if method is not None:
            try:
                _put(found, key, method())
            except Exception:
                pass
    if "text" not in found:
        found["text"] = repr(value)
    return found


def display(*objs, **kwargs):
    for obj in objs:
        if marker is None:
            print(repr(obj))
        else:
            emit("display", formats(obj))


def show(*args, **kwargs):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or marker is None:
        return
    import io
    for number in plt.get_fignums():
        figure = plt.figure(number)
        png = io.BytesIO()
        try:
            figure.savefig(png, format="png", bbox_inches="tight")
        except Exception:
            continue
        emit("display", {"text": repr(figure), "png": base64.b64encode(png.getvalue()).decode()})
    plt.close("all")


def _backend_unchosen(matplotlib):
    # None, or the one the machine's matplotlibrc names (Debian's says TkAgg, which has no
    # display here): the code did not choose it.
    chosen = matplotlib.rcParams._get_backend_or_none()
    if chosen is None:
        return True
    try:
        rc = matplotlib.rc_params_from_file(matplotlib.matplotlib_fname(), use_default_template=False)
        return chosen == rc.get("backend")
    except Exception:
        return False


class _PyplotHook:
    # Makes this module matplotlib's backend (Agg's canvas, shown by `show`) as pyplot is
    # first imported, unless the code chose another.
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib.pyplot":
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
            matplotlib = sys.modules.get("matplotlib")
            if matplotlib is not None and "MPLBACKEND" not in os.environ:
                try:
                    if _backend_unchosen(matplotlib):
                        from matplotlib.backends.backend_agg import FigureCanvasAgg
                        globals()["FigureCanvas"] = FigureCanvasAgg
                        matplotlib.use(BACKEND)
                except Exception:
                    pass
        return None


sys.meta_path.insert(0, _PyplotHook())
builtins.display = display


def cell(mark, source, g):
    global marker
    marker = mark
    # The interpreter is unbuffered (`-u`): a `print` would come as two writes, its text
    # and its newline. Whole lines, each written as it ends, are what streams best.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(write_through=False, line_buffering=True)
        except Exception:
            pass
    try:
        tree = ast.parse(base64.b64decode(source).decode(), "<cell>")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), g)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), g)
            if value is not None:
                emit("result", formats(value))
    except BaseException as e:
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))
        emit("error", {"name": type(e).__name__, "value": str(e), "traceback": tb})
    finally:
        try:
            matplotlib = sys.modules.get("matplotlib")
            if matplotlib is not None and matplotlib.get_backend() == BACKEND:
                show()
        except Exception:
            pass
        marker = None
