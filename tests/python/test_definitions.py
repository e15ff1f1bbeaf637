"""Agent definitions and models through the official SDK, every object validated strictly."""

from __future__ import annotations

import openai
import pytest
from openai import OpenAI
from openai.types.beta.agent import Agent
from openai.types.beta.agent_deleted import AgentDeleted
from openai.types.model import Model

MCP_TOOL = {
    "type": "mcp",
    "server_label": "docs",
    "transport": {"type": "http", "server_url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer py-s3cret"}},
}


def test_definition_lifecycle(client: OpenAI) -> None:
    created = client.beta.agents.create(model="rt-one", name="helper", instructions="be brief", tools=[MCP_TOOL])
    assert isinstance(created, Agent) and created.object == "agent"
    tool = created.tools[0]
    assert tool.type == "mcp" and tool.transport.headers == {"Authorization": "***"}

    fetched = client.beta.agents.retrieve(created.id)
    assert fetched.id == created.id and fetched.instructions == "be brief"

    updated = client.beta.agents.update(created.id, instructions="be thorough")
    assert updated.instructions == "be thorough" and updated.name == "helper"  # omitted fields unchanged

    listed = [a.id for a in client.beta.agents.list()]
    assert created.id in listed

    deleted = client.beta.agents.delete(created.id)
    assert isinstance(deleted, AgentDeleted) and deleted.deleted
    with pytest.raises(openai.NotFoundError) as e:
        client.beta.agents.retrieve(created.id)
    assert e.value.code == "resource_not_found"


def test_definition_refusals_name_the_param(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.create(model="rt-two", reasoning={"effort": "high"})
    assert e.value.param == "reasoning.effort"
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.create(model="rt-one", multi_agent={"enabled": True})
    assert e.value.param == "multi_agent.enabled"


def test_session_from_definition_runs_its_runtime(client: OpenAI) -> None:
    definition = client.beta.agents.create(model="rt-two-alias-1", instructions="v1")
    session = client.beta.agents.sessions.create(environment={"type": "none"}, agent_id=definition.id)
    assert session.agent.id == definition.id and session.agent.instructions == "v1"
    client.beta.agents.update(definition.id, instructions="v2")
    assert client.beta.agents.sessions.retrieve(session.id).agent.instructions == "v1"  # a copy
    with client.beta.agents.sessions.stream(session.id, input="hi") as stream:
        assert "echo (turn 1): hi" in stream.get_final_result().output_text


def test_models(client: OpenAI) -> None:
    definition = client.beta.agents.create(model="rt-one")
    ids = [m.id for m in client.models.list()]
    assert {"rt-one", "rt-two", definition.id} <= set(ids)
    model = client.models.retrieve("rt-two")
    assert isinstance(model, Model) and model.owned_by == "svc-local"
    assert client.models.retrieve(definition.id).id == definition.id
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("no-such-model")
    assert e.value.code == "model_not_found"
