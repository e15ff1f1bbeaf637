//! The code interpreter's server (port 49999, `e2b-code-interpreter`) over the engine's
//! code contexts: `POST /execute` answers JSON lines (`stdout`, `stderr`, `result`,
//! `error`, `number_of_executions`, `end_of_execution`), each sent as it happens (the run
//! is followed through `Sandbox::code_run_stream`), and `/contexts` creates, lists,
//! restarts and deletes contexts. Python follows Jupyter's rule for the last expression:
//! a cell ending in `x + 1` has that value as its main result, in the formats of IPython's
//! rich repr protocol (`display(obj)` gives more results), told apart from the cell's own
//! output by a marker new for every run. A run without a context uses the sandbox's
//! default one for its language, so its state carries over from run to run, as in E2B's.

use super::super::provider::{Event, EventStream, Sandbox};
use super::super::routes::RouteId;
use super::Front;
use super::errors::ApiError;
use super::routes::{At, Door, Op};
use crate::error::engine::Code;
use crate::wire::{CodeRunBody, ContextRecord, CreateContext};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use base64::Engine as _;
use futures::StreamExt;
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const OPS: &[Op] = &[
    Op {
        id: "e2b_code_execute",
        door: Door::Code,
        method: "POST",
        at: At::Path("/execute"),
        summary: "run code in a context: JSON lines of logs, results and errors",
        bind: || post(execute),
    },
    Op {
        id: "e2b_code_contexts_list",
        door: Door::Code,
        method: "GET",
        at: At::Path("/contexts"),
        summary: "the sandbox's code contexts",
        bind: || get(list),
    },
    Op {
        id: "e2b_code_contexts_create",
        door: Door::Code,
        method: "POST",
        at: At::Path("/contexts"),
        summary: "a code context of a language, in a directory",
        bind: || post(create),
    },
    Op {
        id: "e2b_code_contexts_delete",
        door: Door::Code,
        method: "DELETE",
        at: At::Path("/contexts/{id}"),
        summary: "end a code context",
        bind: || delete(remove),
    },
    Op {
        id: "e2b_code_contexts_restart",
        door: Door::Code,
        method: "POST",
        at: At::Path("/contexts/{id}/restart"),
        summary: "restart a code context (its state is lost)",
        bind: || post(restart),
    },
];

/// An E2B language name as the engine names it.
fn engine_language(name: Option<&str>) -> Result<&'static str, ApiError> {
    match name.unwrap_or("python") {
        "python" | "python3" => Ok("python3"),
        "bash" => Ok("bash"),
        "sh" => Ok("sh"),
        "js" | "javascript" | "node" => Ok("node"),
        other => Err(ApiError::new(
            400,
            format!("language `{other}` is not available in a local engine: python, bash, sh, js"),
        )),
    }
}

/// The E2B name of an engine language.
fn e2b_language(name: &str) -> &str {
    match name {
        "python3" => "python",
        "node" => "javascript",
        other => other,
    }
}

/// The support of Python cells, made once per interpreter as the module `__e2b__`:
/// `cell` runs a cell in the context's namespace, then evaluates its last expression and
/// writes its formats (IPython's rich repr protocol: `_repr_html_`, `_repr_png_`,
/// `_repr_mimebundle_`...; `text` is always its `repr`) after the marker, or the error;
/// `display(obj)` (a builtin, as in Jupyter) writes an object's formats at once; figures
/// of matplotlib, when the code uses it, are drawn by the Agg renderer and written as
/// PNG when shown (`plt.show()`) and when the cell ends with them open. What follows the
/// marker on its line is `<kind> <JSON>`, kind `result`, `display` or `error`.
const PYTHON_SUPPORT: &str = r#"
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


class _PyplotHook:
    # Makes this module matplotlib's backend (Agg's canvas, shown by `show`) as pyplot is
    # first imported, unless the code chose another.
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib.pyplot":
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
            matplotlib = sys.modules.get("matplotlib")
            if matplotlib is not None and "MPLBACKEND" not in os.environ:
                try:
                    if matplotlib.rcParams._get_backend_or_none() is None:
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
"#;

/// The cell that makes the support once per interpreter (an `exec` of it as a module
/// kept in `sys.modules`) and runs `source` there.
const PYTHON_CELL: &str = r#"import sys as __e2b_sys
if "__e2b__" not in __e2b_sys.modules:
    __e2b_module = type(__e2b_sys)("__e2b__")
    exec(compile(__E2B_SUPPORT__, "<e2b>", "exec"), __e2b_module.__dict__)
    __e2b_sys.modules["__e2b__"] = __e2b_module
    del __e2b_module
__e2b_sys.modules["__e2b__"].cell(__E2B_MARKER__, __E2B_SOURCE__, globals())
del __e2b_sys
"#;

/// The keys of a result line the SDKs read (`Result` of `e2b-code-interpreter`).
const RESULT_KEYS: &[&str] = &[
    "text",
    "html",
    "markdown",
    "svg",
    "png",
    "jpeg",
    "pdf",
    "latex",
    "json",
    "javascript",
    "data",
    "chart",
    "extra",
];

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Execute {
    code: String,
    context_id: Option<String>,
    language: Option<String>,
    /// Refused when not empty: see [`execute`].
    env_vars: Option<BTreeMap<String, String>>,
}

fn now() -> String {
    crate::services::files::rfc3339(std::time::SystemTime::now())
}

/// The sandbox's default context for `language`, made on first use (and again once the
/// one it had is gone).
async fn default_context(
    front: &Front,
    id: &str,
    sandbox: &Arc<dyn Sandbox>,
    language: &str,
) -> Result<String, ApiError> {
    if let Some(default) = front.code.default_of(id, language) {
        return Ok(default);
    }
    let made = sandbox
        .context_create(CreateContext {
            language: Some(language.to_owned()),
            cwd: None,
        })
        .await
        .map_err(|e| ApiError::envd(id, e))?;
    front.code.saw(id, &made.context_id, language);
    let settled = front
        .code
        .settle_default(id, language, made.context_id.clone());
    if settled != made.context_id {
        // Another first run settled its default first: this one's interpreter would live
        // on unused, so it goes (a failure leaves only an idle context behind).
        if let Err(e) = sandbox.context_delete(&made.context_id).await {
            tracing::debug!(sandbox = %id, error = %e.message, "a spare default context stays");
        }
        front.code.forget(id, &made.context_id);
    }
    Ok(settled)
}

/// The engine language of a named context: noted when the front saw it, else listed once.
async fn language_of(
    front: &Front,
    id: &str,
    sandbox: &Arc<dyn Sandbox>,
    context: &str,
) -> Option<String> {
    if let Some(language) = front.code.language_of(id, context) {
        return Some(language);
    }
    let all = sandbox.context_list().await.ok()?;
    front.code.listed(id, &all);
    all.into_iter()
        .find(|c| c.context_id == context)
        .map(|c| c.language)
}

/// The Python cell that runs `source` and writes its last expression's value after `marker`.
fn python_cell(marker: &str, source: &str) -> String {
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    // Each a Python literal as written: base64 and the marker hold no quotes, backslashes
    // nor line ends (the marker's control character stands as itself in a literal).
    PYTHON_CELL
        .replace(
            "__E2B_SUPPORT__",
            &format!(
                "__import__(\"base64\").b64decode(\"{}\").decode()",
                b64(PYTHON_SUPPORT)
            ),
        )
        .replace("__E2B_MARKER__", &format!("\"{marker}\""))
        .replace("__E2B_SOURCE__", &format!("\"{}\"", b64(source)))
}

/// A piece of a run's stdout: output, or what followed the marker on a marked line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Output(String),
    Marked(String),
}

/// A run's stdout as it streams, split from the marked lines: the marker ends its line but
/// may follow output that did not (`print(x, end="")`), and may come cut across chunks, so
/// the end of a chunk that could begin it is held back until the next one tells.
struct Marked {
    marker: String,
    pending: String,
}

impl Marked {
    fn new(marker: &str) -> Marked {
        Marked {
            marker: marker.to_owned(),
            pending: String::new(),
        }
    }

    /// What of `chunk` (after what was held back) is output, and what followed the marker
    /// on each marked line it completed, in the order they came.
    fn push(&mut self, chunk: &str) -> Vec<Piece> {
        self.pending.push_str(chunk);
        let mut pieces = Vec::new();
        let out = |pieces: &mut Vec<Piece>, text: &str| {
            if !text.is_empty() {
                pieces.push(Piece::Output(text.to_owned()));
            }
        };
        loop {
            match self.pending.find(&self.marker) {
                Some(at) => {
                    let rest = at + self.marker.len();
                    let Some(end) = self.pending[rest..].find('\n') else {
                        // The marked line is not whole yet.
                        out(&mut pieces, &self.pending[..at]);
                        self.pending.drain(..at);
                        return pieces;
                    };
                    out(&mut pieces, &self.pending[..at]);
                    let found = self.pending[rest..rest + end].trim().to_owned();
                    pieces.push(Piece::Marked(found));
                    self.pending.drain(..rest + end + 1);
                }
                None => {
                    let keep = (1..self.marker.len().min(self.pending.len() + 1))
                        .rev()
                        .find(|k| {
                            let from = self.pending.len() - k;
                            self.pending.is_char_boundary(from)
                                && self.marker.starts_with(&self.pending[from..])
                        })
                        .unwrap_or(0);
                    let upto = self.pending.len() - keep;
                    out(&mut pieces, &self.pending[..upto]);
                    self.pending.drain(..upto);
                    return pieces;
                }
            }
        }
    }

    /// What was held back at the end of the run: a marked line cut short by the end
    /// (the interpreter died) is dropped, anything else is output.
    fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        if rest.starts_with(&self.marker) {
            String::new()
        } else {
            rest
        }
    }
}

/// The JSON line of what followed the marker: a result (the main one, or one `display`
/// gave), or the cell's error.
fn marked_line(found: &str) -> Option<Value> {
    let (kind, payload) = found.split_once(' ')?;
    let payload: Value = serde_json::from_str(payload).ok()?;
    match kind {
        "result" | "display" => {
            let mut line = serde_json::Map::new();
            line.insert("type".into(), json!("result"));
            if let Value::Object(formats) = payload {
                for (key, value) in formats {
                    if RESULT_KEYS.contains(&key.as_str()) && !value.is_null() {
                        line.insert(key, value);
                    }
                }
            }
            line.insert("is_main_result".into(), json!(kind == "result"));
            Some(Value::Object(line))
        }
        "error" => {
            let mut error = payload;
            error["type"] = json!("error");
            Some(error)
        }
        _ => None,
    }
}

/// The JSON lines of a run as its events come: `stdout` and `stderr` as printed, results
/// and errors as the cell writes them, then the count and `end_of_execution`.
struct Lines {
    events: Option<EventStream>,
    /// Python's: its stdout holds the marked lines.
    marked: Option<Marked>,
    timed_out: bool,
    front: Arc<Front>,
    sandbox: String,
    context: String,
    queue: std::collections::VecDeque<Value>,
}

impl Lines {
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(line) = self.queue.pop_front() {
                return Some(line);
            }
            let events = self.events.as_mut()?;
            match events.next().await {
                Some(Ok(event)) => self.event(event),
                Some(Err(e)) => {
                    let e = ApiError::envd(&self.sandbox, e);
                    self.queue.push_back(json!({"type": "error", "name": "EngineError", "value": e.message, "traceback": ""}));
                    self.end();
                }
                None => self.end(),
            }
        }
    }

    fn event(&mut self, event: Event) {
        let text = || event.data["data"].as_str().unwrap_or_default().to_owned();
        match event.name {
            "stdout" => {
                let pieces = match &mut self.marked {
                    Some(marked) => marked.push(&text()),
                    None => vec![Piece::Output(text())],
                };
                // In the order they came: a `display` between two prints stays there.
                for piece in pieces {
                    match piece {
                        Piece::Output(stdout) => self.stdout(stdout),
                        Piece::Marked(found) => self.queue.extend(marked_line(&found)),
                    }
                }
            }
            "stderr" => {
                let stderr = text();
                if !stderr.is_empty() {
                    self.queue
                        .push_back(json!({"type": "stderr", "text": stderr, "timestamp": now()}));
                }
            }
            "exit" => self.timed_out = event.data["timed_out"] == true,
            _ => {}
        }
    }

    fn stdout(&mut self, text: String) {
        if !text.is_empty() {
            self.queue
                .push_back(json!({"type": "stdout", "text": text, "timestamp": now()}));
        }
    }

    /// The last lines, once the run has ended.
    fn end(&mut self) {
        self.events = None;
        if let Some(rest) = self.marked.as_mut().map(Marked::finish) {
            self.stdout(rest);
        }
        if self.timed_out {
            self.queue.push_back(json!({"type": "error", "name": "TimeoutError", "value": "the execution timed out", "traceback": ""}));
        }
        let count = self.front.code.count(&self.sandbox, &self.context);
        self.queue
            .push_back(json!({"type": "number_of_executions", "execution_count": count}));
        self.queue.push_back(json!({"type": "end_of_execution"}));
    }
}

async fn execute(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let asked: Execute = serde_json::from_slice(&body)
        .map_err(|e| ApiError::new(400, format!("a bad body: {e}")))?;
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeRun, ApiError::envd)
        .await?;
    let named_language = match &asked.context_id {
        Some(context) => language_of(&front, &id, &sandbox, context).await,
        None => None,
    };
    let language = engine_language(named_language.as_deref().or(asked.language.as_deref()))?;
    // It begins with a control character, so output held back as a possible start of it
    // (see `Marked`) is output that ends in that character, which text hardly does.
    let marker = format!("\u{1e}e2b-result-marker-{}", uuid::Uuid::new_v4().simple());
    let code = if language == "python3" {
        python_cell(&marker, &asked.code)
    } else {
        asked.code
    };
    let run = |context: String| {
        sandbox.code_run_stream(CodeRunBody {
            code: code.clone(),
            language: Some(language.to_owned()),
            context_id: Some(context),
            // This run's only, as the code interpreter's `env_vars` are.
            envs: asked.env_vars.clone().filter(|e| !e.is_empty()),
            timeout: None,
        })
    };
    let (context, outcome) = match asked.context_id {
        Some(named) => {
            let outcome = run(named.clone()).await;
            if outcome
                .as_ref()
                .is_err_and(|e| e.code == Code::ContextNotFound)
            {
                front.code.forget(&id, &named);
            }
            (named, outcome)
        }
        None => {
            let default = default_context(&front, &id, &sandbox, language).await?;
            match run(default.clone()).await {
                // The default was deleted behind the front's back (`/v1`): a new one.
                Err(e) if e.code == Code::ContextNotFound => {
                    front.code.forget(&id, &default);
                    let fresh = default_context(&front, &id, &sandbox, language).await?;
                    (fresh.clone(), run(fresh).await)
                }
                outcome => (default, outcome),
            }
        }
    };
    let events = outcome.map_err(|e| ApiError::envd(&id, e))?;
    let lines = Lines {
        events: Some(events),
        marked: (language == "python3").then(|| Marked::new(&marker)),
        timed_out: false,
        front: front.clone(),
        sandbox: id,
        context,
        queue: Default::default(),
    };
    // One JSON line per chunk of the body, sent as soon as it is made.
    let body = futures::stream::unfold(lines, |mut lines| async move {
        let line = lines.next().await?;
        Some((Ok::<_, std::io::Error>(format!("{line}\n")), lines))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        axum::body::Body::from_stream(body),
    )
        .into_response())
}

fn shown(record: &ContextRecord) -> Value {
    json!({"id": record.context_id, "language": e2b_language(&record.language), "cwd": record.cwd})
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NewContext {
    language: Option<String>,
    cwd: Option<String>,
}

async fn create(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let asked: NewContext = if body.is_empty() {
        NewContext::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::new(400, format!("a bad body: {e}")))?
    };
    let language = engine_language(asked.language.as_deref())?;
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeContextsCreate, ApiError::envd)
        .await?;
    let record = sandbox
        .context_create(CreateContext {
            language: Some(language.to_owned()),
            cwd: asked.cwd,
        })
        .await
        .map_err(|e| ApiError::envd(&id, e))?;
    front.code.saw(&id, &record.context_id, &record.language);
    Ok(axum::Json(shown(&record)).into_response())
}

async fn list(State(front): State<Arc<Front>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeContextsList, ApiError::envd)
        .await?;
    let all = sandbox
        .context_list()
        .await
        .map_err(|e| ApiError::envd(&id, e))?;
    front.code.listed(&id, &all);
    Ok(axum::Json(all.iter().map(shown).collect::<Vec<_>>()).into_response())
}

async fn remove(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    Path(context): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeContextsDelete, ApiError::envd)
        .await?;
    let deleted = sandbox.context_delete(&context).await;
    // Deleted now or already gone: either way the front forgets it.
    if !matches!(&deleted, Err(e) if e.code != Code::ContextNotFound) {
        front.code.forget(&id, &context);
    }
    deleted.map_err(|e| ApiError::envd(&id, e))?;
    Ok(StatusCode::NO_CONTENT)
}

async fn restart(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    Path(context): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeContextsRestart, ApiError::envd)
        .await?;
    sandbox
        .context_restart(&context)
        .await
        .map_err(|e| ApiError::envd(&id, e))?;
    // A new interpreter counts its runs from one again, as a restarted Jupyter kernel does.
    front.code.restarted(&id, &context);
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `chunks` fed to a [`Marked`]: the output and the marked lines.
    fn fed(chunks: &[&str], marker: &str) -> (String, Vec<String>) {
        let mut marked = Marked::new(marker);
        let (mut stdout, mut found) = (String::new(), Vec::new());
        for chunk in chunks {
            for piece in marked.push(chunk) {
                match piece {
                    Piece::Output(out) => stdout.push_str(&out),
                    Piece::Marked(more) => found.push(more),
                }
            }
        }
        stdout.push_str(&marked.finish());
        (stdout, found)
    }

    /// The text of the output pieces of one push.
    fn output(pieces: Vec<Piece>) -> String {
        pieces
            .into_iter()
            .filter_map(|p| match p {
                Piece::Output(out) => Some(out),
                Piece::Marked(_) => None,
            })
            .collect()
    }

    #[test]
    fn pieces_keep_their_order_within_a_chunk() {
        let mut marked = Marked::new("MK");
        let pieces = marked.push("a\nMK display {}\nb\nMK result {}\nc");
        let want = [
            Piece::Output("a\n".into()),
            Piece::Marked("display {}".into()),
            Piece::Output("b\n".into()),
            Piece::Marked("result {}".into()),
            Piece::Output("c".into()),
        ];
        assert_eq!(pieces, want);
    }

    #[test]
    fn the_marker_is_found_after_output_without_a_final_newline() {
        let (stdout, found) = fed(&["a\nxMK result \"1\"\nb"], "MK");
        assert_eq!(stdout, "a\nxb");
        assert_eq!(found, vec!["result \"1\"".to_owned()]);
        let (stdout, found) = fed(&["plain\n"], "MK");
        assert_eq!((stdout.as_str(), found.len()), ("plain\n", 0));
    }

    #[test]
    fn a_marker_cut_across_chunks_never_leaks_into_stdout() {
        let whole =
            "out é\nmore e2b-MARK display {\"text\":\"1\"}\ntail e2\ne2b-MARK result {}\nend";
        // Every place the stream could be cut, in two and in three.
        for i in (0..=whole.len()).filter(|i| whole.is_char_boundary(*i)) {
            for j in (i..=whole.len()).filter(|j| whole.is_char_boundary(*j)) {
                let (stdout, found) = fed(&[&whole[..i], &whole[i..j], &whole[j..]], "e2b-MARK");
                assert_eq!(stdout, "out é\nmore tail e2\nend", "cut at {i}, {j}");
                assert_eq!(
                    found,
                    ["display {\"text\":\"1\"}", "result {}"],
                    "cut at {i}, {j}"
                );
            }
        }
        // Output that only looks like the marker's start is output once it cannot be.
        let mut marked = Marked::new("e2b-MARK");
        assert_eq!(output(marked.push("x e2b-MA")), "x ");
        assert_eq!(output(marked.push("NY\n")), "e2b-MANY\n");
        assert_eq!(output(marked.push("e2b")), "");
        assert_eq!(marked.finish(), "e2b");
    }

    #[test]
    fn marked_lines_become_result_and_error_lines_with_the_keys_the_sdk_reads() {
        let main = marked_line(
            r#"result {"text": "1", "html": "<b>1</b>", "png": "iVBO", "nope": 3, "json": null}"#,
        )
        .unwrap();
        assert_eq!(
            main,
            json!({"type": "result", "text": "1", "html": "<b>1</b>", "png": "iVBO", "is_main_result": true})
        );
        let shown = marked_line(r#"display {"text": "x"}"#).unwrap();
        assert_eq!(shown["is_main_result"], false);
        let error = marked_line(r#"error {"name": "E", "value": "v", "traceback": "t"}"#).unwrap();
        assert_eq!(
            error,
            json!({"type": "error", "name": "E", "value": "v", "traceback": "t"})
        );
        assert_eq!(marked_line("result not json"), None);
    }
}
