"""Webhook endpoints through the official SDK (strict validation), and real deliveries verified by two independent
receivers: the `standardwebhooks` reference library and the SDK's own `client.webhooks.unwrap`.

Deliveries need a server that may post to a loopback receiver over http, so these tests start their own server with
`SVC_AGENTS_WEBHOOK_ALLOW_HTTP=1` and `SVC_AGENTS_ALLOW_PRIVATE_URLS=1` (local development switches).
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Iterator, List, Tuple

import openai
import pytest
from openai import OpenAI
from openai.types.webhooks import (
    AgentSessionCreatedWebhookEvent,
    AgentSessionFailedWebhookEvent,
    AgentSessionIdleWebhookEvent,
    AgentSessionInProgressWebhookEvent,
    DeletedWebhookEndpoint,
    WebhookEndpoint,
    WebhookEndpointTestResult,
    WebhookEndpointWithSecret,
    WebhookEventTypeList,
)
from standardwebhooks.webhooks import Webhook

from conftest import make_client, serve

SESSION_TYPES = ["agent.session.created", "agent.session.in_progress", "agent.session.idle", "agent.session.failed"]
ARRIVAL_TIMEOUT_S = 30

Delivery = Tuple[Dict[str, str], bytes]


class Receiver:
    """A local HTTP receiver that records every POST and answers the given statuses in turn (then 200)."""

    def __init__(self, statuses: List[int] | None = None) -> None:
        self.deliveries: List[Delivery] = []
        self._statuses = list(statuses or [])
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with outer._lock:
                    outer.deliveries.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    status = outer._statuses.pop(0) if outer._statuses else 200
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def wait(self, n: int) -> List[Delivery]:
        deadline = time.monotonic() + ARRIVAL_TIMEOUT_S
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.deliveries) >= n:
                    return list(self.deliveries)
            time.sleep(0.05)
        pytest.fail(f"{n} deliveries expected within {ARRIVAL_TIMEOUT_S}s, got {len(self.deliveries)}")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def hook_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenAI]:
    env = {
        "SVC_AGENTS_WEBHOOK_ALLOW_HTTP": "1",
        "SVC_AGENTS_ALLOW_PRIVATE_URLS": "1",
        "SVC_AGENTS_WEBHOOK_RETRY_BASE_MS": "50",
    }
    with serve(tmp_path_factory, **env) as s:
        c = make_client(s.url)
        yield c
        c.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def verified(client: OpenAI, secret: str, delivery: Delivery) -> object:
    """Both verifiers accept the delivery; returns the SDK's typed event."""
    headers, body = delivery
    Webhook(secret).verify(body, headers)  # raises WebhookVerificationError on a bad signature
    return client.webhooks.unwrap(body, headers, secret=secret)


def test_endpoint_lifecycle(client: OpenAI) -> None:
    hooks = client.webhooks
    created = hooks.create(url="https://hooks.example.com/py", event_types=["agent.session.idle"], name="py")
    assert isinstance(created, WebhookEndpointWithSecret) and created.object == "webhook_endpoint"
    secret = created.signing_secret
    assert secret.startswith("whsec_")

    fetched = hooks.retrieve(created.id)
    assert isinstance(fetched, WebhookEndpoint) and fetched.url == "https://hooks.example.com/py"
    assert secret[6:] not in fetched.to_json()
    assert created.id in [e.id for e in hooks.list()]
    assert all(secret[6:] not in e.to_json() for e in hooks.list())

    updated = hooks.update(created.id, name="py2", event_types=["agent.session.created", "agent.session.failed"])
    assert updated.name == "py2" and updated.event_types == ["agent.session.created", "agent.session.failed"]
    assert updated.url == "https://hooks.example.com/py"

    rotated = hooks.rotate_secret(created.id)
    assert isinstance(rotated, WebhookEndpointWithSecret) and rotated.signing_secret != secret
    with pytest.raises(openai.BadRequestError) as e:
        hooks.rotate_secret(created.id, keep_old_secret_active_for_24_hours=True)
    assert e.value.param == "keep_old_secret_active_for_24_hours"

    types = hooks.event_types.list()
    assert isinstance(types, WebhookEventTypeList) and types.data == SESSION_TYPES

    deleted = hooks.delete(created.id)
    assert isinstance(deleted, DeletedWebhookEndpoint) and deleted.deleted and deleted.id == created.id
    with pytest.raises(openai.NotFoundError) as e:
        hooks.retrieve(created.id)
    assert e.value.code == "resource_not_found"


def test_refusals_name_the_param(client: OpenAI) -> None:
    hooks = client.webhooks
    with pytest.raises(openai.BadRequestError) as e:
        hooks.create(url="https://hooks.example.com/py", event_types=["agent.session.action_required"], name="x")
    assert e.value.param == "event_types"
    for url in ["http://hooks.example.com/py", "https://127.0.0.1/py", "https://hooks.example.com/py?a=1"]:
        with pytest.raises(openai.BadRequestError) as e:
            hooks.create(url=url, event_types=["agent.session.idle"], name="x")
        assert e.value.param == "url", url


def test_test_route_delivery_verifies_with_both_libraries(hook_client: OpenAI, receiver: Receiver) -> None:
    created = hook_client.webhooks.create(url=receiver.url, event_types=["agent.session.idle"], name="py")
    result = hook_client.webhooks.test(created.id, event_type="agent.session.failed")
    assert isinstance(result, WebhookEndpointTestResult)
    assert result.status_code == 200 and result.success and result.webhook_endpoint_id == created.id
    event = verified(hook_client, created.signing_secret, receiver.wait(1)[0])
    assert isinstance(event, AgentSessionFailedWebhookEvent) and event.object == "event"

    rotated = hook_client.webhooks.rotate_secret(created.id)
    hook_client.webhooks.test(created.id, event_type="agent.session.idle")
    delivery = receiver.wait(2)[1]
    assert isinstance(verified(hook_client, rotated.signing_secret, delivery), AgentSessionIdleWebhookEvent)
    with pytest.raises(openai.InvalidWebhookSignatureError):
        hook_client.webhooks.unwrap(delivery[1], delivery[0], secret=created.signing_secret)
    hook_client.webhooks.delete(created.id)


def test_session_changes_are_delivered_in_order(hook_client: OpenAI, receiver: Receiver) -> None:
    created = hook_client.webhooks.create(url=receiver.url, event_types=SESSION_TYPES, name="py")
    try:
        session = hook_client.beta.agents.sessions.create(
            environment={"type": "none"}, agent={"model": "rt-two"}, input="hello webhooks"
        )
        events = [verified(hook_client, created.signing_secret, d) for d in receiver.wait(3)]
        assert [type(e) for e in events] == [
            AgentSessionCreatedWebhookEvent,
            AgentSessionInProgressWebhookEvent,
            AgentSessionIdleWebhookEvent,
        ]
        assert all(e.data.id == session.id for e in events)  # type: ignore[attr-defined]
        assert len({e.id for e in events}) == 3  # type: ignore[attr-defined]
    finally:
        hook_client.webhooks.delete(created.id)


def test_failed_deliveries_are_retried(hook_client: OpenAI) -> None:
    receiver = Receiver(statuses=[500])
    created = hook_client.webhooks.create(url=receiver.url, event_types=["agent.session.created"], name="py")
    try:
        session = hook_client.beta.agents.sessions.create(environment={"type": "none"}, agent={"model": "rt-one"})
        first, second = receiver.wait(2)[:2]
        assert first[0]["webhook-id"] == second[0]["webhook-id"]
        event = verified(hook_client, created.signing_secret, second)
        assert isinstance(event, AgentSessionCreatedWebhookEvent) and event.data.id == session.id
    finally:
        hook_client.webhooks.delete(created.id)
        receiver.close()
