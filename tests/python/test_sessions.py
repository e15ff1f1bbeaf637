"""The official client check for the sessions API: the openai SDK (strict response validation) against `svc serve`.

Every call goes through `client.beta.agents.sessions`, so every response body, list page and SSE event is validated by
the SDK's own pydantic models; a mismatch raises `openai.APIResponseValidationError` (the pydantic error is chained).
Turns run on the fake runtimes `rt-one` (Codex CLI) and `rt-two` (Claude Code), selected by `agent.model`.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, List, Type

import openai
import pytest
from openai import OpenAI
from openai.types.beta import (
    AgentCommandExecutionItem,
    AgentReasoningItem,
    AgentSession,
    AgentSessionAssistantMessage,
    AgentSessionDeleted,
    AgentSessionIdleEvent,
    AgentSessionInProgressEvent,
    AgentSessionMessage,
    AgentSessionSubagentCreatedEvent,
    AgentSessionTurnCompletedEvent,
    AgentSessionTurnCreatedEvent,
    AgentSessionTurnInProgressEvent,
    AgentSessionTurnItemAddedEvent,
    AgentSessionTurnItemDoneEvent,
    AgentSessionTurnOutputTextDeltaEvent,
    AgentSessionTurnOutputTextDoneEvent,
    Subagent,
    TokenUsage,
)
from openai.types.beta.agents.sessions import SessionArtifact, SessionArtifactDeleted, Turn

RUNTIMES = ["rt-one", "rt-two"]
MISSING_SESSION = "agsess_" + "0" * 24
SETTLE_TIMEOUT_S = 30
TERMINAL_TURN = {"completed", "failed", "cancelled"}


# --- helpers ---------------------------------------------------------------------------------------------------------


def collect(pager: Any, max_pages: int = 200) -> List[Any]:
    """Every item of an SDK paginator, walking pages the SDK's way (after=<cursor>); fails on a cursor loop."""
    out: List[Any] = []
    for n, page in enumerate(pager.iter_pages()):
        assert n < max_pages, f"more than {max_pages} pages: has_more/cursor never ends"
        out.extend(page.data)
    return out


def input_event(text: str) -> dict:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def text_of(message: Any) -> str:
    return "".join(part.text for part in message.content if part.type in ("output_text", "input_text"))


def wait_settled(client: OpenAI, sid: str) -> AgentSession:
    """Poll (strictly validated) until every turn is finished and the session is idle or failed."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        session = client.beta.agents.sessions.retrieve(sid)
        turns = collect(client.beta.agents.sessions.turns.list(sid))
        if session.status in ("idle", "failed") and turns and all(t.status in TERMINAL_TURN for t in turns):
            return session
        states = [t.status for t in turns]
        assert time.monotonic() < deadline, f"session {sid} did not settle: {session.status}, turns {states}"
        time.sleep(0.1)


def run_turn(client: OpenAI, sid: str, text: str):
    """One turn through the SDK's own `sessions.stream` helper; returns its AgentTurnResult and every event seen."""
    events = []
    with client.beta.agents.sessions.stream(sid, input=text) as stream:
        stream.with_result_collection()
        for event in stream:
            events.append(event)
        result = stream.get_final_result()
    return result, events


def index_of(events: List[Any], cls: Type, pred=lambda e: True) -> int:
    for i, e in enumerate(events):
        if isinstance(e, cls) and pred(e):
            return i
    raise AssertionError(f"no {cls.__name__} in {[type(e).__name__ for e in events]}")


def seq(event: Any) -> int:
    assert event.event_id.startswith("evt_"), event.event_id
    return int(event.event_id[len("evt_") :])


# --- fixtures --------------------------------------------------------------------------------------------------------


@pytest.fixture(params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def session(client: OpenAI, runtime: str) -> Iterable[AgentSession]:
    s = client.beta.agents.sessions.create(environment={"type": "none"}, agent={"model": runtime})
    yield s
    try:
        client.beta.agents.sessions.delete(s.id)
    except openai.NotFoundError:
        pass


# --- tests -----------------------------------------------------------------------------------------------------------


def test_create_retrieve_update_delete(client: OpenAI, runtime: str) -> None:
    sessions = client.beta.agents.sessions
    created = sessions.create(environment={"type": "none"}, agent={"model": runtime}, metadata={"suite": "python"})
    assert isinstance(created, AgentSession)
    assert created.object == "agent.session"
    assert created.id.startswith("agsess_")
    assert created.status == "idle"
    assert created.agent.model == runtime
    assert created.metadata == {"suite": "python"}
    assert created.x_svc["runtime"] == runtime  # our extension, kept by the SDK as an extra field

    got = sessions.retrieve(created.id)
    assert isinstance(got, AgentSession)
    assert (got.id, got.agent.model, got.created_at) == (created.id, runtime, created.created_at)

    updated = sessions.update(created.id, metadata={"k": "v", "n": "1"})
    assert isinstance(updated, AgentSession)
    assert updated.metadata == {"k": "v", "n": "1"}
    assert sessions.retrieve(created.id).metadata == {"k": "v", "n": "1"}
    assert sessions.update(created.id, metadata=None).metadata == {}

    deleted = sessions.delete(created.id)
    assert isinstance(deleted, AgentSessionDeleted)
    assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "agent.session.deleted", True)
    with pytest.raises(openai.NotFoundError):
        sessions.retrieve(created.id)


def test_list_auto_paginates(client: OpenAI) -> None:
    sessions = client.beta.agents.sessions
    mine = [sessions.create(environment={"type": "none"}, agent={"model": "rt-one"}).id for _ in range(3)]
    try:
        first = sessions.list(limit=1)
        assert len(first.data) == 1 and first.has_more is True
        assert all(isinstance(s, AgentSession) for s in first.data)

        listed = list(sessions.list(limit=1))  # the SDK's auto-pagination, one session per page
        desc = [s.id for s in listed]
        assert len(desc) == len(set(desc)), f"a session was listed twice: {desc}"
        assert set(mine) <= set(desc)
        stamps = [s.created_at for s in listed]
        assert stamps == sorted(stamps, reverse=True), "default order is newest first"
        assert desc == [s.id for s in collect(sessions.list(limit=100))]
        assert [s.id for s in sessions.list(limit=2, order="asc")] == desc[::-1]
    finally:
        for sid in mine:
            sessions.delete(sid)


def test_missing_session_is_not_found(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        client.beta.agents.sessions.retrieve(MISSING_SESSION)
    assert err.value.status_code == 404
    assert err.value.code == "resource_not_found"
    assert err.value.type == "not_found_error"
    assert err.value.param == "id"
    assert err.value.response.headers.get("x-svc-local") == "1"


def test_stream_helper_echo_and_resume(client: OpenAI, session: AgentSession) -> None:
    sid = session.id
    first, events = run_turn(client, sid, "hello from python")
    assert "echo (turn 1): hello from python" in first.output_text
    assert first.turn.status == "completed" and first.turn.session_id == sid
    assert isinstance(events[-1], AgentSessionIdleEvent)

    second, _ = run_turn(client, sid, "again")
    assert "echo (turn 2): again" in second.output_text, "the second turn must resume the runtime's thread"
    assert second.turn_id != first.turn_id

    after = client.beta.agents.sessions.retrieve(sid)
    assert after.status == "idle" and after.error is None
    assert after.usage is None or isinstance(after.usage, TokenUsage)


def test_streamed_create_collects_the_first_turn(client: OpenAI, runtime: str) -> None:
    """`sessions.create(..., stream=True)`: the SDK's create-stream helper gets the session's events from its
    creation through its first turn, and its final result is that turn's."""
    stream = client.beta.agents.sessions.create(
        environment={"type": "none"}, agent={"model": runtime}, input="made while streaming", stream=True
    )
    stream.with_result_collection()
    events = list(stream)
    result = stream.get_final_result()
    assert events[0].type == "agent.session.created"
    assert isinstance(events[-1], AgentSessionIdleEvent)
    assert "echo (turn 1): made while streaming" in result.output_text
    assert result.turn.status == "completed"
    assert client.beta.agents.sessions.retrieve(result.turn.session_id).status == "idle"


def test_events_stream_lifecycle(client: OpenAI, session: AgentSession) -> None:
    sid = session.id
    prompt = "lifecycle please"
    stream = client.beta.agents.sessions.events.stream(sid)  # subscribe first (headers are back), then send input
    try:
        assert client.beta.agents.sessions.events.create(sid, events=[input_event(prompt)]) is None
        events = []
        for event in stream:
            events.append(event)
            if isinstance(event, AgentSessionIdleEvent):
                break
    finally:
        stream.close()

    names = [type(e).__name__ for e in events]
    assert isinstance(events[0], AgentSessionTurnCreatedEvent), names
    assert isinstance(events[-1], AgentSessionIdleEvent), names
    lifecycle = [
        type(e)
        for e in events
        if isinstance(e, (AgentSessionTurnCreatedEvent, AgentSessionTurnInProgressEvent,
                          AgentSessionTurnCompletedEvent, AgentSessionIdleEvent))
    ]
    assert lifecycle == [AgentSessionTurnCreatedEvent, AgentSessionTurnInProgressEvent,
                         AgentSessionTurnCompletedEvent, AgentSessionIdleEvent], names
    seqs = [seq(e) for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    for e in events:
        assert getattr(e, "session_id", None) == sid, (type(e).__name__, e)

    created = events[0]
    turn_id = created.turn_id
    assert isinstance(created.turn, Turn)
    assert created.turn.status == "queued" and created.turn.subagent_id is None and created.turn.id == turn_id

    user_added = index_of(
        events, AgentSessionTurnItemAddedEvent, lambda e: e.item.type == "message" and e.item.role == "user"
    )
    assert isinstance(events[user_added].item, AgentSessionMessage)
    assert text_of(events[user_added].item) == prompt
    assert events[user_added].item.turn_id == turn_id
    done = index_of(events, AgentSessionTurnItemDoneEvent, lambda e: e.item.type == "message")
    reply = events[done].item
    assert isinstance(reply, AgentSessionAssistantMessage)
    assert reply.status == "completed" and reply.turn_id == turn_id and reply.id.startswith("msg_")
    assert f"echo (turn 1): {prompt}" in text_of(reply)
    assert index_of(events, AgentSessionTurnInProgressEvent) < user_added < done
    assert done < index_of(events, AgentSessionTurnCompletedEvent)

    deltas = [e.delta for e in events if isinstance(e, AgentSessionTurnOutputTextDeltaEvent) and e.item_id == reply.id]
    text_done = [e for e in events if isinstance(e, AgentSessionTurnOutputTextDoneEvent) and e.item_id == reply.id]
    if deltas:
        assert "".join(deltas) == text_done[-1].text == text_of(reply)

    completed = events[index_of(events, AgentSessionTurnCompletedEvent)]
    assert completed.turn_id == turn_id and completed.turn.status == "completed"
    assert completed.turn.completed_at is not None and completed.turn.started_at is not None
    idle = events[-1]
    assert idle.session.id == sid and idle.session.status == "idle"
    assert any(isinstance(e, AgentSessionInProgressEvent) for e in events)


def test_reasoning_and_command_items(client: OpenAI, session: AgentSession) -> None:
    sid = session.id
    result, events = run_turn(client, sid, "[[scenario:reasoning]] [[scenario:command]] show your work")
    assert result.output_text, "the turn must still end with an assistant reply"

    done_items = [e.item for e in events if isinstance(e, AgentSessionTurnItemDoneEvent)]
    reasoning = [i for i in done_items if isinstance(i, AgentReasoningItem)]
    commands = [i for i in done_items if isinstance(i, AgentCommandExecutionItem)]
    assert reasoning and reasoning[0].summary and reasoning[0].summary[0].text
    assert reasoning[0].turn_id == result.turn_id
    assert commands, [type(i).__name__ for i in done_items]
    cmd = commands[0]
    assert "echo hi" in cmd.command
    # codex reports the raw output ("hi\n"); Claude Code's Bash result has the trailing newline trimmed ("hi").
    assert (cmd.status, cmd.exit_code, cmd.output.rstrip("\n")) == ("completed", 0, "hi")

    items = collect(client.beta.agents.sessions.items.list(sid, order="asc"))
    types = [i.type for i in items]
    assert types[0] == "message" and items[0].role == "user", types
    assert {"reasoning", "command_execution"} <= set(types), types
    assert any(i.type == "message" and i.role == "assistant" for i in items), types
    assert all(i.turn_id == result.turn_id for i in items)
    assert [i.id for i in collect(client.beta.agents.sessions.items.list(sid, limit=1))] == [i.id for i in items][::-1]
    listed_cmd = next(i for i in items if i.type == "command_execution")
    assert isinstance(listed_cmd, AgentCommandExecutionItem) and listed_cmd.id == cmd.id


def test_turns_and_turn_items(client: OpenAI, session: AgentSession) -> None:
    sid = session.id
    first, _ = run_turn(client, sid, "turn one")
    second, _ = run_turn(client, sid, "turn two")

    turns = collect(client.beta.agents.sessions.turns.list(sid))
    assert [t.id for t in turns] == [second.turn_id, first.turn_id], "newest first"
    assert [t.id for t in collect(client.beta.agents.sessions.turns.list(sid, order="asc", limit=1))] == [
        first.turn_id,
        second.turn_id,
    ]
    for t, prompt in ((first, "turn one"), (second, "turn two")):
        got = client.beta.agents.sessions.turns.retrieve(t.turn_id, session_id=sid)
        assert isinstance(got, Turn)
        assert (got.id, got.session_id, got.status, got.subagent_id) == (t.turn_id, sid, "completed", None)
        assert got.agent_id == session.agent.id
        assert got.started_at is not None and got.completed_at is not None and got.started_at <= got.completed_at
        assert got.error is None

        # turns.items.list is the one SyncConversationCursorPage: the SDK pages with after=<last_id>.
        items = collect(client.beta.agents.sessions.turns.items.list(t.turn_id, session_id=sid, order="asc"))
        assert [i.turn_id for i in items] == [t.turn_id] * len(items)
        assert items[0].type == "message" and items[0].role == "user" and text_of(items[0]) == prompt
        assert any(i.type == "message" and i.role == "assistant" for i in items)
        paged = collect(client.beta.agents.sessions.turns.items.list(t.turn_id, session_id=sid, order="asc", limit=1))
        assert [i.id for i in paged] == [i.id for i in items]

    with pytest.raises(openai.NotFoundError) as err:
        client.beta.agents.sessions.turns.retrieve("turn_" + "0" * 24, session_id=sid)
    assert (err.value.code, err.value.param) == ("resource_not_found", "turn_id")

    # Without SVC_AGENTS_TRACES the trace list is empty (and still a valid page).
    traces = client.beta.agents.sessions.traces.list(sid)
    assert traces.data == [] and traces.has_more is False


def test_artifacts(client: OpenAI, session: AgentSession, server: Any) -> None:
    sid = session.id
    artifacts = client.beta.agents.sessions.artifacts
    # file_change items are `tool_call` items in our design (not in the SDK union), so this turn is driven with
    # events.create + polling instead of streaming its items; every call below is still strictly validated.
    prompt = "[[scenario:file_change:notes.txt]] artifact body"
    client.beta.agents.sessions.events.create(sid, events=[input_event(prompt)])
    settled = wait_settled(client, sid)
    assert settled.status == "idle", settled.error
    turn_id = collect(client.beta.agents.sessions.turns.list(sid))[0].id

    listed = collect(artifacts.list(sid))
    assert len(listed) == 1, listed
    art = listed[0]
    assert isinstance(art, SessionArtifact)
    assert art.id.startswith("art_") and art.object == "agent.session.artifact"
    assert (art.session_id, art.turn_id, art.environment_id) == (sid, turn_id, "env_local")
    assert art.path.endswith("/notes.txt"), art.path

    got = artifacts.retrieve(art.id, session_id=sid)
    assert isinstance(got, SessionArtifact) and got.id == art.id and got.path == art.path

    content = artifacts.content(art.id, session_id=sid)
    body = content.read()
    assert b"artifact body" in body
    assert len(body) == art.size_bytes
    assert content.response.headers["content-type"] == "application/octet-stream"
    assert content.response.headers["x-content-type-options"] == "nosniff"
    on_disk = server.workspace / "notes.txt"
    assert on_disk.read_bytes() == body

    deleted = artifacts.delete(art.id, session_id=sid)
    assert isinstance(deleted, SessionArtifactDeleted)
    assert (deleted.id, deleted.object, deleted.deleted) == (art.id, "agent.session.artifact.deleted", True)
    assert collect(artifacts.list(sid)) == []
    with pytest.raises(openai.NotFoundError) as err:
        artifacts.retrieve(art.id, session_id=sid)
    assert (err.value.code, err.value.param) == ("resource_not_found", "artifact_id")
    assert on_disk.read_bytes() == body, "deleting the snapshot must leave the file alone"


def test_subagents(client: OpenAI, session: AgentSession) -> None:
    sid = session.id
    subagents = client.beta.agents.sessions.subagents
    client.beta.agents.sessions.events.create(sid, events=[input_event("[[scenario:subagent]] delegate this")])
    settled = wait_settled(client, sid)
    assert settled.status == "idle", settled.error

    listed = collect(subagents.list(sid))
    assert listed, "the subagent scenario must surface at least one subagent"
    for sub in listed:
        assert isinstance(sub, Subagent)
        assert sub.object == "agent.session.subagent" and sub.session_id == sid
        got = subagents.retrieve(sub.id, session_id=sid)
        assert isinstance(got, Subagent) and got.id == sub.id
        assert collect(subagents.items.list(sub.id, session_id=sid)) == []
        assert collect(subagents.turns.list(sub.id, session_id=sid)) == []
    with pytest.raises(openai.NotFoundError) as err:
        subagents.retrieve("no-such-subagent", session_id=sid)
    assert (err.value.code, err.value.param) == ("resource_not_found", "subagent_id")


def test_subagent_turn_events_and_items_validate(client: OpenAI, session: AgentSession) -> None:
    """The whole event history and item list of a subagent turn must pass strict validation (after=0 replay)."""
    sid = session.id
    client.beta.agents.sessions.events.create(sid, events=[input_event("[[scenario:subagent]] delegate this")])
    wait_settled(client, sid)

    stream = client.beta.agents.sessions.events.stream(sid, extra_query={"after": "0"})
    try:
        events = list(stream)  # replay: the server sends what it kept, then closes
    finally:
        stream.close()
    created = [e for e in events if isinstance(e, AgentSessionSubagentCreatedEvent)]
    assert created, [type(e).__name__ for e in events]
    assert {e.subagent.id for e in created} <= {s.id for s in collect(client.beta.agents.sessions.subagents.list(sid))}
    assert isinstance(events[-1], AgentSessionIdleEvent)

    items = collect(client.beta.agents.sessions.items.list(sid))
    assert items


def test_delete_session(client: OpenAI, runtime: str) -> None:
    sessions = client.beta.agents.sessions
    s = sessions.create(environment={"type": "none"}, agent={"model": runtime})
    run_turn(client, s.id, "before delete")
    deleted = sessions.delete(s.id)
    assert isinstance(deleted, AgentSessionDeleted) and deleted.deleted
    for call in (
        lambda: sessions.retrieve(s.id),
        lambda: sessions.turns.list(s.id),
        lambda: sessions.items.list(s.id),
        lambda: sessions.delete(s.id),
    ):
        with pytest.raises(openai.NotFoundError) as err:
            call()
        assert err.value.code == "resource_not_found"
    assert s.id not in {x.id for x in sessions.list(limit=100)}
