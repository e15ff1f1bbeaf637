"""The unchanged `e2b-code-interpreter` SDK (pinned) against the engine's E2B front: Jupyter's
rule for the last expression, logs, errors, state kept between runs, contexts, other languages."""

from __future__ import annotations

import shutil

import pytest
from e2b_code_interpreter import Sandbox


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
    assert sandbox.run_code("x").text == "41"
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
    assert sandbox.run_code("y = 5\ny * 2", context=context).text == "10"
    missing = sandbox.run_code("shared", context=context)
    assert missing.error is not None and missing.error.name == "NameError"
    assert context.id in {c.id for c in sandbox.list_code_contexts()}
    sandbox.restart_code_context(context)
    assert sandbox.run_code("y", context=context).error is not None
    sandbox.remove_code_context(context)
    assert context.id not in {c.id for c in sandbox.list_code_contexts()}


def test_bash_and_javascript(sandbox: Sandbox) -> None:
    assert sandbox.run_code("echo from bash", language="bash").logs.stdout == ["from bash\n"]
    if shutil.which("node") is None:
        pytest.skip("no node on this machine")
    assert sandbox.run_code("console.log(1 + 2)", language="js").logs.stdout == ["3\n"]
