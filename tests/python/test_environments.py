"""Environments, their files and templates, vaults and credentials through the official SDK, strictly validated."""

from __future__ import annotations

import base64

import openai
import pytest
from openai import OpenAI
from openai.types.beta.agents.environment_info import EnvironmentInfo
from openai.types.beta.agents.environments.environment_file import EnvironmentFile
from openai.types.beta.agents.environments.environment_template import EnvironmentTemplate
from openai.types.beta.agents.environments.environment_template_deleted import EnvironmentTemplateDeleted

from conftest import Server


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_environment_and_its_files(client: OpenAI, server: Server) -> None:
    envs = client.beta.agents.environments
    created = envs.create(environment={"type": "openai_hosted"})
    assert isinstance(created, EnvironmentInfo) and created.type == "self_hosted" and created.status == "ready"
    assert created.id.startswith("env_")
    assert envs.retrieve(created.id).id == created.id
    assert created.id in [e.id for e in envs.list()]

    written = envs.files.create(created.id, type="inline", path="/workspace/py/a.txt", data=b64("alpha"))
    assert isinstance(written, EnvironmentFile) and written.size_bytes == 5
    assert written.path.endswith("/py/a.txt")
    for name in ["b.txt", "c.txt", "d.txt"]:
        envs.files.create(created.id, type="inline", path=f"py/{name}", data=b64(name))

    # SyncTokenPage follows `next` on its own.
    paths = [f.path for f in envs.files.list(created.id, limit=2, order="asc", path="/workspace/py")]
    assert [p.rsplit("/", 1)[1] for p in paths] == ["a.txt", "b.txt", "c.txt", "d.txt"]

    with pytest.raises(openai.BadRequestError) as e:
        envs.files.create(created.id, type="inline", path="AGENTS.md", data=b64("x"))
    assert e.value.code == "agents.path_refused"
    with pytest.raises(openai.BadRequestError) as e:
        envs.files.create(created.id, type="inline", path="py/a.txt", data=b64("changed"))
    assert e.value.code == "agents.file_exists"
    with pytest.raises(openai.BadRequestError) as e:
        envs.create(environment={"type": "openai_hosted", "network": {"access": "enabled"}})
    assert e.value.code == "invalid_request"


def test_template_lifecycle_and_session_use(client: OpenAI) -> None:
    templates = client.beta.agents.environments.templates
    t = templates.create(name="py", env={"PY_MODE": "strict"}, files=[{"type": "inline", "path": "/workspace/seed.txt", "data": b64("seed")}])
    assert isinstance(t, EnvironmentTemplate) and t.files[0].type == "inline" and t.files[0].size_bytes == 4
    assert "strict" not in t.model_dump_json()
    assert templates.retrieve(t.id).name == "py"
    assert t.id in [x.id for x in templates.list()]
    updated = templates.update(t.id, name="renamed")
    assert updated.name == "renamed" and len(updated.files) == 1

    session = client.beta.agents.sessions.create(
        environment={"type": "none"}, agent={"model": "rt-one"}, extra_body={"environment_template_id": t.id}
    )
    assert session.id.startswith("agsess_")

    deleted = templates.delete(t.id)
    assert isinstance(deleted, EnvironmentTemplateDeleted) and deleted.deleted
    with pytest.raises(openai.NotFoundError):
        templates.retrieve(t.id)


def test_vault_credentials_attach_to_sessions(client: OpenAI, server: Server) -> None:
    # The spec fixes a vault at exactly id, name, metadata, created_at; the SDK's model also
    # wants `object`, so vaults are read with the SDK's default (non-strict) validation.
    lenient = OpenAI(api_key="sk-svc-test", base_url=f"{server.url}/v1", max_retries=0, timeout=30)
    vault = lenient.beta.agents.vaults.create(name="py-vault", metadata={"team": "py"})
    assert vault.id.startswith("vault_") and vault.metadata == {"team": "py"}
    vaults = client.beta.agents.vaults
    credential = vaults.credentials.create(
        vault.id, name="docs", auth={"type": "static_bearer", "token": "py-secret-token", "mcp_server_url": "https://mcp.example.com/mcp"}
    )
    assert "py-secret-token" not in credential.model_dump_json()
    assert [c.id for c in vaults.credentials.list(vault.id)] == [credential.id]

    tool = {"type": "mcp", "server_label": "docs", "transport": {"type": "http", "server_url": "https://mcp.example.com/mcp"}}
    session = client.beta.agents.sessions.create(environment={"type": "none"}, agent={"model": "rt-one", "tools": [tool]}, vault_ids=[vault.id])
    assert session.vault_ids == [vault.id]

    vaults.credentials.delete(credential.id, vault_id=vault.id)
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.sessions.events.create(
            session.id, events=[{"type": "agent.session.input.message", "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}]
        )
    assert e.value.code == "agents.credential_unavailable"
