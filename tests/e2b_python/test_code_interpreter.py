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
