"""Fixtures for the official client check: one `svc serve` for the whole run, and a strict SDK client.

The server is `target/debug/svc` (or `$SVC_BIN`) with only the agents group on, a temporary workspace and fake-runtime
state dir, and `target/debug` first on PATH so the fake runtimes `rt-one` / `rt-two` are what it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import openai
import pytest
from openai import OpenAI

REPO = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"^listening on (http://\S+?)/?$")
STARTUP_TIMEOUT_S = 30


@dataclass(frozen=True)
class Server:
    url: str  # http://HOST:PORT (no /v1)
    workspace: Path  # SVC_AGENTS_WORKSPACE
    log: Path  # the server's stderr


def _binary() -> Path:
    path = Path(os.environ.get("SVC_BIN") or REPO / "target" / "debug" / "svc")
    if not path.is_file():
        pytest.fail(
            f"server binary {path} not found: build first with `cargo build --workspace --bins` "
            "(or set SVC_BIN to the svc binary)",
            pytrace=False,
        )
    return path


def _env(tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    # The server must see only what this suite sets, not the caller's SVC_* / fake-runtime config.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "RT_FAKE_"))}
    env.update(
        SVC_SERVER_ENABLED_GROUPS="agents",
        SVC_AGENTS_WORKSPACE=str(tmp / "workspace"),
        RT_FAKE_STATE_DIR=str(tmp / "rt-state"),
        SVC_SERVER_CHILD_ENV="RT_FAKE_*",
        PATH=os.pathsep.join([str(REPO / "target" / "debug"), env.get("PATH", "")]),
    )
    env.update(extra)
    return env


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def serve(tmp_path_factory: pytest.TempPathFactory, **extra_env: str) -> Iterator[Server]:
    """A `svc serve` with this suite's settings plus `extra_env`, stopped on exit."""
    binary = _binary()
    tmp = tmp_path_factory.mktemp("svc")
    log = tmp / "server.log"
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(
            [str(binary), "serve", "--port", "0"],
            cwd=tmp,
            env=_env(tmp, extra_env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # its own process group, so teardown can reap runtimes it left behind
        )
    assert proc.stdout is not None
    try:
        url = None
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while url is None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                pytest.fail(f"svc printed no `listening on` line in {STARTUP_TIMEOUT_S}s\n{_tail(log)}", pytrace=False)
            line = proc.stdout.readline().decode(errors="replace")
            if not line:
                pytest.fail(f"svc exited ({proc.wait()}) before listening\n{_tail(log)}", pytrace=False)
            m = LISTENING.match(line.strip())
            if m:
                url = m.group(1).replace("://0.0.0.0:", "://127.0.0.1:")
        # Keep draining stdout so the server can never block on a full pipe.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        yield Server(url=url, workspace=tmp / "workspace", log=log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                pytest.fail(f"svc ignored SIGTERM for 10 s\n{_tail(log)}", pytrace=False)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(tmp_path_factory) as s:
        yield s


def make_client(url: str) -> OpenAI:
    """Strict mode: every response body and SSE event is validated by the SDK's pydantic models."""
    return OpenAI(
        api_key="sk-svc-test",
        base_url=f"{url}/v1",
        _strict_response_validation=True,
        max_retries=0,
        timeout=30,
    )


@pytest.fixture(scope="session")
def client(server: Server) -> Iterator[OpenAI]:
    c = make_client(server.url)
    yield c
    c.close()


def _rejected_body(exc: BaseException | None) -> object:
    """The payload strict validation rejected, if an APIResponseValidationError is in the exception chain."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, openai.APIResponseValidationError):
            return exc.body
        exc = exc.__cause__ or exc.__context__
    return None


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    # On a failure, show the payload the SDK rejected (one line) and what the server logged (its stderr) last.
    if call.when != "call" or call.excinfo is None:
        return
    body = _rejected_body(call.excinfo.value)
    if body is not None:
        item.add_report_section("call", "payload rejected by strict validation", json.dumps(body)[:4000])
    if "server" in getattr(item, "funcargs", {}):
        item.add_report_section("call", "svc stderr (tail)", _tail(item.funcargs["server"].log))
