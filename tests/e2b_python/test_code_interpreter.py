"""The unchanged `e2b-code-interpreter` SDK (pinned) against the engine's E2B front: Jupyter's
rule for the last expression, logs, errors, state kept between runs, contexts, other languages."""

from __future__ import annotations

import base64
import shutil
import time

import pytest
from e2b_code_interpreter import Sandbox, TimeoutException


@pytest.fixture
def sandbox():
    sb = Sandbox.create()
    try:
        yield sb
    finally:
        sb.kill()


def test_the_last_expression_is_the_main_result_and_state_carries_over(sandbox: Sandbox) -> None:
    execution = sandbox.run_code("x = 41\nprint('hi')\nx + 1")
    assert execution.text == "42"
    assert execution.results[0].is_main_result
    assert execution.logs.stdout == ["hi\n"]
    assert execution.error is None
    again = sandbox.run_code("x")
    assert again.text == "41"
    assert again.execution_count == execution.execution_count + 1
    assert sandbox.run_code("x = 1").text is None


def test_an_error_has_its_name_value_and_traceback(sandbox: Sandbox) -> None:
    seen = []
    execution = sandbox.run_code("print('before')\n1/0", on_error=seen.append)
    assert execution.error is not None
    assert execution.error.name == "ZeroDivisionError"
    assert execution.error.value == "division by zero"
    assert "<cell>" in execution.error.traceback
    assert seen and seen[0].name == "ZeroDivisionError"
    assert execution.logs.stdout == ["before\n"]


def test_contexts_are_separate_namespaces(sandbox: Sandbox) -> None:
    sandbox.run_code("shared = 'default'")
    context = sandbox.create_code_context()
    assert context.language == "python"
    first = sandbox.run_code("y = 5\ny * 2", context=context)
    assert first.text == "10" and first.execution_count == 1
    missing = sandbox.run_code("shared", context=context)
    assert missing.error is not None and missing.error.name == "NameError"
    assert context.id in {c.id for c in sandbox.list_code_contexts()}
    sandbox.restart_code_context(context)
    restarted = sandbox.run_code("y", context=context)
    assert restarted.error is not None and restarted.error.name == "NameError"
    assert restarted.execution_count == 1, "a restarted context counts its runs anew"
    sandbox.remove_code_context(context)
    assert context.id not in {c.id for c in sandbox.list_code_contexts()}


def test_bash_and_javascript(sandbox: Sandbox) -> None:
    assert sandbox.run_code("echo from bash", language="bash").logs.stdout == ["from bash\n"]
    if shutil.which("node") is None:
        pytest.skip("no node on this machine")
    assert sandbox.run_code("console.log(1 + 2)", language="js").logs.stdout == ["3\n"]


def test_runs_without_a_context_make_one_default_per_language(sandbox: Sandbox) -> None:
    assert sandbox.run_code("echo a", language="bash").execution_count == 1
    assert sandbox.run_code("a = 1").execution_count == 1
    before = sorted((c.language, c.id) for c in sandbox.list_code_contexts())
    assert [language for language, _ in before] == ["bash", "python"]
    second = sandbox.run_code("echo b", language="bash")
    assert second.logs.stdout == ["b\n"] and second.execution_count == 2
    third = sandbox.run_code("echo c", language="bash")
    assert third.logs.stdout == ["c\n"] and third.execution_count == 3
    again = sandbox.run_code("a")
    assert again.text == "1" and again.execution_count == 2
    assert sorted((c.language, c.id) for c in sandbox.list_code_contexts()) == before


def test_a_run_after_its_default_context_is_removed_gets_a_new_one(sandbox: Sandbox) -> None:
    sandbox.run_code("a = 1")
    sandbox.run_code("echo a", language="bash")
    removed = {c.id for c in sandbox.list_code_contexts()}
    assert len(removed) == 2
    for context in removed:
        sandbox.remove_code_context(context)
    execution = sandbox.run_code("1 + 1")
    assert execution.error is None and execution.text == "2"
    assert execution.execution_count == 1, "a new default counts from one"
    fresh = sandbox.run_code("a")
    assert fresh.error is not None and fresh.error.name == "NameError"
    assert sandbox.run_code("echo again", language="bash").logs.stdout == ["again\n"]
    now = sandbox.list_code_contexts()
    assert sorted(c.language for c in now) == ["bash", "python"]
    assert not removed & {c.id for c in now}


def test_a_runs_env_vars_reach_that_run_only(sandbox: Sandbox) -> None:
    # As under E2B: set for the run, over a variable the sandbox had, and undone after it.
    assert sandbox.run_code("import os\nos.environ['MARK']", envs={"MARK": "x"}).text == "'x'"
    assert sandbox.run_code("import os\nos.environ.get('MARK')").text is None
    bash = sandbox.run_code("echo \"[$MARK]\"", language="bash", envs={"MARK": "it's"})
    assert bash.logs.stdout == ["[it's]\n"]
    assert sandbox.run_code("echo \"[${MARK-unset}]\"", language="bash").logs.stdout == ["[unset]\n"]
    assert sandbox.run_code("1 + 1", envs={}).text == "2", "empty `env_vars` are no variables"


def test_output_without_a_final_newline_keeps_the_result(sandbox: Sandbox) -> None:
    execution = sandbox.run_code("print('x', end='')\n41 + 1")
    assert execution.text == "42"
    assert execution.logs.stdout == ["x"]
    assert execution.error is None
    failed = sandbox.run_code("print('y', end='')\nraise ValueError('bad')")
    assert failed.logs.stdout == ["y"]
    assert failed.error is not None and (failed.error.name, failed.error.value) == ("ValueError", "bad")


def test_stdout_streams_while_the_cell_runs(sandbox: Sandbox) -> None:
    # Each line reaches `on_stdout` as it is printed, not when the cell ends: the first
    # arrives well before the second is printed (the cell sleeps between them).
    arrived: list[tuple[str, float]] = []
    code = "import time\nprint('a')\ntime.sleep(2)\nprint('b')"
    execution = sandbox.run_code(code, on_stdout=lambda out: arrived.append((out.line, time.monotonic())))
    done = time.monotonic()
    assert "".join(line for line, _ in arrived) == "a\nb\n"
    assert "".join(execution.logs.stdout) == "a\nb\n"
    first = next(at for line, at in arrived if line.startswith("a"))
    assert done - first > 1.5, f"`a` came with the end of the cell: {arrived} (done {done})"
    assert execution.error is None


def test_stderr_streams_too_and_results_come_as_the_cell_gives_them(sandbox: Sandbox) -> None:
    arrived: list[tuple[str, float]] = []
    code = "import sys, time\nprint('warn', file=sys.stderr)\ntime.sleep(2)\ndisplay(1)\n2"
    execution = sandbox.run_code(
        code,
        on_stderr=lambda out: arrived.append(("stderr " + out.line, time.monotonic())),
        on_result=lambda result: arrived.append(("result " + str(result.text), time.monotonic())),
    )
    done = time.monotonic()
    assert [what for what, _ in arrived] == ["stderr warn\n", "result 1", "result 2"]
    assert done - arrived[0][1] > 1.5, f"stderr came with the end: {arrived} (done {done})"
    assert execution.logs.stderr == ["warn\n"]


def test_display_gives_results_that_are_not_the_main_one(sandbox: Sandbox) -> None:
    execution = sandbox.run_code("display('first')\nprint('between')\ndisplay({'a': 1})\n3")
    assert [(r.text, r.is_main_result) for r in execution.results] == [
        ("'first'", False),
        ("{'a': 1}", False),
        ("3", True),
    ]
    assert execution.text == "3"
    assert execution.logs.stdout == ["between\n"]
    assert sandbox.run_code("display(4)").results[0].text == "4", "`display` stays defined"


RICH = '''
import base64
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
class Rich:
    def __repr__(self):
        return "Rich()"
    def _repr_html_(self):
        return "<b>rich</b>"
    def _repr_png_(self):
        return PNG
    def _repr_markdown_(self):
        return "**rich**"
    def _repr_json_(self):
        return {"rich": True}
    def _repr_latex_(self):
        return r"$\\alpha$"
    def _repr_svg_(self):
        return "<svg/>"
class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": "a bundle", "text/html": "<i>b</i>", "application/x-thing": "t"}
'''


def test_rich_reprs_give_the_formats_jupyter_would(sandbox: Sandbox) -> None:
    assert sandbox.run_code(RICH).error is None
    execution = sandbox.run_code("Rich()")
    assert execution.error is None
    [main] = execution.results
    assert main.is_main_result
    assert main.text == "Rich()"
    assert main.html == "<b>rich</b>"
    assert main.markdown == "**rich**"
    assert main.svg == "<svg/>"
    assert main.latex == "$\\alpha$"
    assert main.json == {"rich": True}
    assert main.png is not None and base64.b64decode(main.png).startswith(b"\x89PNG")
    assert main.jpeg is None and main.javascript is None
    assert set(main.formats()) == {"text", "html", "markdown", "svg", "png", "latex", "json"}

    shown = sandbox.run_code("display(Rich())").results
    assert [(r.html, r.is_main_result) for r in shown] == [("<b>rich</b>", False)]

    bundle = sandbox.run_code("Bundle()").results[0]
    assert (bundle.text, bundle.html) == ("a bundle", "<i>b</i>")
    assert bundle.extra == {"application/x-thing": "t"}
    # A class is shown by its repr, not its methods (IPython's rule).
    assert sandbox.run_code("Rich").results[0].html is None


def test_a_main_result_x_with_its_formats(sandbox: Sandbox) -> None:
    execution = sandbox.run_code("x = [1, 2]\nx")
    [main] = execution.results
    assert (main.text, main.is_main_result, list(main.formats())) == ("[1, 2]", True, ["text"])


def test_a_client_that_stops_waiting_leaves_no_hang(sandbox: Sandbox) -> None:
    # The SDK's own `timeout` ends its wait (the front's bound is 300 s) and it goes away;
    # the run ends on its own and the context is usable again.
    with pytest.raises(TimeoutException):
        sandbox.run_code("import time\nprint('started')\ntime.sleep(3)", timeout=1)
    time.sleep(3)
    assert sandbox.run_code("1 + 1").text == "2"


def test_a_matplotlib_figure_is_a_png_result(sandbox: Sandbox) -> None:
    # The sandbox's python is the machine's: `.ci/run` installs Debian's python3-matplotlib.
    missing = sandbox.run_code("import matplotlib").error
    assert missing is None, "install python3-matplotlib (Debian), as .ci/run does"
    shown = sandbox.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nprint('after')")
    assert shown.error is None and shown.logs.stdout == ["after\n"]
    [figure] = shown.results
    assert figure.png is not None and base64.b64decode(figure.png).startswith(b"\x89PNG")
    assert not figure.is_main_result and figure.text.startswith("<Figure")
    left_open = sandbox.run_code("plt.figure()\nplt.plot([3, 2, 1])\n'drawn'")
    assert [(r.text, r.png is not None) for r in left_open.results][0] == ("'drawn'", False)
    assert left_open.results[1].png is not None, "a figure left open is shown at the end of its cell"


def test_a_flushed_partial_line_streams_too(sandbox: Sandbox) -> None:
    # Output the front must look at twice (could it begin the cell's marker?) is not held
    # back until the cell ends: `e2b` is how the marker's text begins.
    arrived: list[tuple[str, float]] = []
    code = "import time\nprint('see e2b', end='', flush=True)\ntime.sleep(2)\nprint(' done')"
    execution = sandbox.run_code(code, on_stdout=lambda out: arrived.append((out.line, time.monotonic())))
    done = time.monotonic()
    assert "".join(execution.logs.stdout) == "see e2b done\n"
    assert arrived[0][0] == "see e2b" and done - arrived[0][1] > 1.5, arrived
