"""`client.responses` through the official SDK in strict mode, for both runtimes."""

from __future__ import annotations

import time

import openai
import pytest
from openai import OpenAI
from openai.types.responses import Response

RUNTIMES = ["rt-one", "rt-two"]


@pytest.mark.parametrize("model", RUNTIMES)
def test_create_and_continue(client: OpenAI, model: str) -> None:
    first = client.responses.create(model=model, input="hello [[scenario:reasoning]]", instructions="be brief")
    assert isinstance(first, Response) and first.status == "completed"
    assert first.output_text == "echo (turn 1): hello [[scenario:reasoning]]"
    assert first.usage is not None and first.usage.total_tokens > 0
    assert [o.type for o in first.output] == ["reasoning", "message"]
    second = client.responses.create(model=model, input="again", previous_response_id=first.id)
    assert second.output_text == "echo (turn 2): again"  # the runtime's own thread
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=model, input="x", previous_response_id=first.id)
    assert e.value.code == "agents.previous_response_not_latest"


@pytest.mark.parametrize("model", RUNTIMES)
def test_stream_helper(client: OpenAI, model: str) -> None:
    with client.responses.stream(model=model, input="streamed [[scenario:stream:10]]") as stream:
        types = [event.type for event in stream]
        final = stream.get_final_response()
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert final.output_text == "echo (turn 1): streamed [[scenario:stream:10]]"
    replay = list(client.responses.retrieve(final.id, stream=True, starting_after=2))
    assert [e.sequence_number for e in replay] == list(range(3, 3 + len(replay)))


@pytest.mark.parametrize("model", RUNTIMES)
def test_background_retrieve_and_cancel(client: OpenAI, model: str) -> None:
    running = client.responses.create(model=model, input="wait [[scenario:hang]]", background=True)
    assert running.status in ("queued", "in_progress")
    cancelled = client.responses.cancel(running.id)
    assert cancelled.status == "cancelled"
    assert client.responses.retrieve(running.id).status == "cancelled"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.cancel(running.id)
    assert e.value.code == "agents.not_cancellable"

    done = client.responses.create(model=model, input="later", background=True)
    for _ in range(100):
        if client.responses.retrieve(done.id).status == "completed":
            break
        time.sleep(0.05)
    assert client.responses.retrieve(done.id).output_text == "echo (turn 1): later"


def test_input_items_and_delete(client: OpenAI) -> None:
    response = client.responses.create(
        model="rt-one",
        input=[
            {"role": "developer", "content": "answer tersely"},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ],
    )
    items = list(client.responses.input_items.list(response.id, order="asc"))
    assert [(i.role, i.content[0].text) for i in items] == [("developer", "answer tersely"), ("user", "hi")]
    client.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)


def test_refusals_name_the_param(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="rt-one", input="x", tools=[{"type": "web_search"}])
    assert e.value.param == "tools[0].type"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="rt-one", input="x", store=False, background=True)
    assert e.value.param == "store"


def test_idempotency_key(client: OpenAI) -> None:
    headers = {"Idempotency-Key": "py-idem-1"}
    first = client.responses.create(model="rt-one", input="once", extra_headers=headers)
    again = client.responses.create(model="rt-one", input="once", extra_headers=headers)
    assert again.id == first.id
    with pytest.raises(openai.ConflictError) as e:
        client.responses.create(model="rt-one", input="different", extra_headers=headers)
    assert e.value.code == "idempotency.mismatch"


def test_compact(client: OpenAI) -> None:
    first = client.responses.create(model="rt-two", input="remember me")
    compacted = client.responses.compact(model="rt-two", previous_response_id=first.id)
    assert compacted.object == "response.compaction"
    after = client.responses.create(model="rt-two", input="after", previous_response_id=first.id)
    assert after.output_text.startswith("echo (turn 3)")  # the same thread, compacted in between
    other = client.responses.create(model="rt-one", input="x")
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.compact(model="rt-one", previous_response_id=other.id)
    assert e.value.code == "agents.compact_unsupported"
