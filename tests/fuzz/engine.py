"""The engine's part of the fuzz run (`svc provider engine serve`, docs/engine.md).

`run.py` uses it to start the engine in its own state folder, prepare the sandboxes the
run aims at, and end everything afterwards; `hooks.py` uses it to keep each generated
request harmless and aimed (`tame`).

What the taming does, and why:

- **Sandboxes.** The config's dictionaries put role names into the `id` path parameter
  (`sandbox-local`, `sandbox-paused`, `sandbox-memory`), a sentinel into `pid` and a role name
  into `context_id`; here they become the ids `run.py` prepared, so routes reach real
  answers and not only `E2009`. The prepared sandboxes must live through the run: a kill,
  pause or timeout (which may be 1 s) aimed at one is aimed at a fresh throwaway sandbox
  of the same provider instead (a resume of the paused one at a fresh paused one), a
  context delete at a fresh context, and a signal, stdin or kill of the pid sentinel at a
  fresh background `sleep` of the local sandbox: the request is still sent as generated,
  it only ends something made for it. schemathesis also reuses ids it saw in answers (the
  list of sandboxes, of processes): a prepared sandbox's or context's own id, or the pid of
  a live process, is tamed as its role or the sentinel would be.
- **The connection** (`X-Svc-Connection`, unpadded base64url of a JSON object). A generated
  value is mostly garbage, which must get a typed 400: an eighth of the requests keep it,
  and an eighth send a well-formed connection whose `provider` is the generated string.
  The others carry a real one, picked from the request's own content (so a replayed case
  sends the same): the owner of the prepared sandbox in the path, or one of `local`,
  `memory` and `rest`. A `rest` connection names a loopback port nothing listens on, so its
  calls fail as an unreachable upstream (500 `E9001`, allowed by the `engine_server_error`
  check for exactly that). A generated value that decodes to an object keeps its
  fields, with every URL tamed the same way.
- **What runs**: command lines, code and URL fields of bodies are tamed by `hooks._tame`
  as for the server; the terminal's `shell` query is `/bin/sh` (without the WebSocket
  handshake the engine refuses before starting anything, but no generated program name
  is ever offered).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

# A loopback port nothing listens on (the `rest` provider's upstream).
SAFE_API_URL = "http://127.0.0.1:9"
# The sentinel of the `pid` dictionary: above any pid_max, so never a real process.
PID_SENTINEL = 999999999
# How long the prepared sandboxes live, and the throwaway ones (they end with the run).
PREPARED_TIMEOUT_S = 86400
THROWAWAY_TIMEOUT_S = 300

LOCAL = {"provider": "local"}
MEMORY = {"provider": "memory"}
REST = {"provider": "rest", "api_url": SAFE_API_URL, "api_key": "fuzz"}
# The connection of each sandbox role (the names of the `sandboxes` dictionary).
ROLES = {"sandbox-local": LOCAL, "sandbox-paused": LOCAL, "sandbox-memory": MEMORY}
CONTEXT_ROLE = "context-local"

# Operations that would end or freeze a prepared sandbox.
ENDS_SANDBOX = {"sandboxes_kill", "sandboxes_pause", "sandboxes_timeout"}
ENDS_PROCESS = {"processes_signal", "processes_kill", "processes_stdin"}


def encode(connection: dict) -> str:
    raw = json.dumps(connection, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(value: str) -> Any:
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


class Engine:
    """A small client of the engine: what run.py prepares and ends, what the hooks create."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: Any = None, connection: dict | None = None,
             raw: bytes | None = None, timeout: float = 30) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"}
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif raw is not None:
            headers["Content-Type"] = "application/octet-stream"
        if connection is not None:
            headers["X-Svc-Connection"] = encode(connection)
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                text = answer.read()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path}: {e.code} {e.read()[:500]!r}") from None
        return json.loads(text) if text else None

    def create(self, connection: dict, timeout: int) -> str:
        record = self.call("POST", "/sandboxes", {"timeout": timeout}, connection)
        return record["sandbox_id"]

    def background(self, sandbox: str) -> int:
        """A fresh `sleep` the sandbox keeps running after the command answers."""
        out = self.call(
            "POST", f"/sandboxes/{sandbox}/commands/run",
            {"cmd": "sleep 120 >/dev/null 2>&1 & echo $!"}, LOCAL,
        )
        return int(out["stdout"].strip())

    def context(self, sandbox: str) -> str:
        record = self.call("POST", f"/sandboxes/{sandbox}/code/contexts", {"language": "python3"}, LOCAL)
        return record["context_id"]

    def prepare(self) -> dict[str, str]:
        """The sandboxes (and the context) the dictionaries name, by role."""
        local = self.create(LOCAL, PREPARED_TIMEOUT_S)
        paused = self.create(LOCAL, PREPARED_TIMEOUT_S)
        memory = self.create(MEMORY, PREPARED_TIMEOUT_S)
        # The files the `paths` dictionary names, so file routes find them.
        for sandbox, connection in ((local, LOCAL), (paused, LOCAL), (memory, MEMORY)):
            for path, text in (("notes.txt", "hello, fuzz\n"), ("docs/guide.md", "# Guide\n")):
                self.call("PUT", f"/sandboxes/{sandbox}/files/content?path={path}&parents=true",
                          connection=connection, raw=text.encode())
        self.call("POST", f"/sandboxes/{paused}/pause", {}, LOCAL)
        return {
            "sandbox-local": local,
            "sandbox-paused": paused,
            "sandbox-memory": memory,
            CONTEXT_ROLE: self.context(local),
        }

    def lost(self, prepared: dict[str, str]) -> dict[str, str]:
        """The prepared sandboxes that did not live through the run, by role, with what the
        engine answered (the taming must keep them: a loss is a hole in it, or the engine
        ending what nobody ended)."""
        lost = {}
        for role, connection in ROLES.items():
            try:
                self.call("GET", f"/sandboxes/{prepared[role]}", connection=connection)
            except (OSError, RuntimeError) as e:
                lost[role] = str(e)
        return lost

    def end_all(self) -> list[str]:
        """Kills every sandbox the run's connections see; answers the ids."""
        ended = []
        for connection in (LOCAL, MEMORY):
            try:
                listed = self.call("GET", "/sandboxes?limit=1000", connection=connection)
            except (OSError, RuntimeError):
                continue
            for record in listed.get("sandboxes", []):
                try:
                    self.call("DELETE", f"/sandboxes/{record['sandbox_id']}", connection=connection)
                    ended.append(record["sandbox_id"])
                except (OSError, RuntimeError):
                    pass
        return ended


def _real_pid(pid: Any) -> bool:
    """The sentinel, or a process that exists (a pid seen in an answer, such as the code
    context's interpreter): a signal, stdin or kill gets a fresh process instead. Other
    numbers stay as generated (the engine's typed refusal of an unknown pid is tested)."""
    if pid == PID_SENTINEL:
        return True
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid < PID_SENTINEL:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (not ours to signal)
    return True


def _pick(case, n: int) -> int:
    """A choice that only depends on the generated request, so a replay makes the same."""
    seed = repr((case.operation.label, case.path_parameters, case.query,
                 {k: v for k, v in (case.headers or {}).items()}, case.body))
    return int(hashlib.sha256(seed.encode(errors="replace")).hexdigest(), 16) % n


def _tame_connection(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (SAFE_API_URL if k in ("api_url", "url") and isinstance(v, str) else _tame_connection(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_tame_connection(v) for v in value]
    return value


class Tamer:
    """The engine's before-call taming (see the module's text); `hooks.py` calls `tame`."""

    def __init__(self) -> None:
        self.engine = Engine(os.environ["SVC_FUZZ_ENGINE_URL"], os.environ["SVC_FUZZ_TOKEN"])
        self.prepared: dict[str, str] = json.loads(os.environ["SVC_FUZZ_PREPARED"])
        self.helpers = 0

    def _throwaway(self, role: str) -> str:
        self.helpers += 1
        sandbox = self.engine.create(ROLES[role], THROWAWAY_TIMEOUT_S)
        if role == "sandbox-paused":
            self.helpers += 1
            self.engine.call("POST", f"/sandboxes/{sandbox}/pause", {}, LOCAL)
        return sandbox

    def tame(self, case) -> None:
        op = case.operation.definition.raw.get("operationId")
        params = case.path_parameters if isinstance(case.path_parameters, dict) else {}
        role = self._role_of(params.get("id"))
        self._connection(case, role)
        if role is not None:
            if op in ENDS_SANDBOX or (op == "sandboxes_resume" and role == "sandbox-paused"):
                params["id"] = self._throwaway(role)
            else:
                params["id"] = self.prepared[role]
        sandbox = params.get("id")
        if role == "sandbox-local" and op in ENDS_PROCESS and _real_pid(params.get("pid")):
            self.helpers += 1
            params["pid"] = self.engine.background(sandbox)
        if params.get("context_id") in (CONTEXT_ROLE, self.prepared[CONTEXT_ROLE]):
            if role == "sandbox-local" and op == "code_contexts_delete":
                self.helpers += 1
                params["context_id"] = self.engine.context(sandbox)
            else:
                params["context_id"] = self.prepared[CONTEXT_ROLE]
        if isinstance(case.body, dict) and case.body.get("context_id") == CONTEXT_ROLE:
            case.body["context_id"] = self.prepared[CONTEXT_ROLE]
        if isinstance(case.query, dict) and "shell" in case.query:
            case.query["shell"] = "/bin/sh"

    def _role_of(self, value: Any) -> str | None:
        """The role a path's sandbox id stands for: a role name, or a prepared sandbox's
        own id (schemathesis reuses ids it saw in answers, the list of sandboxes among
        them, so a generated kill may name a prepared sandbox by its id)."""
        if value in ROLES:
            return value
        return next((role for role in ROLES if self.prepared[role] == value), None)

    def ended_prepared(self, response) -> str | None:
        """What a sent request did to a prepared sandbox that the taming should have aimed
        elsewhere (a kill, pause or timeout of one, or a resume of the paused one, that the
        engine accepted), else None."""
        if response.status_code >= 300:
            return None
        method = response.request.method
        path = urllib.parse.urlsplit(response.request.url).path
        for role in ROLES:
            at = f"/sandboxes/{self.prepared[role]}"
            ending = [("DELETE", at), ("POST", at + "/pause"), ("POST", at + "/timeout")]
            if role == "sandbox-paused":
                ending.append(("POST", at + "/resume"))
            if any(method == m and path.endswith(p) for m, p in ending):
                return (f"{method} {path} ({response.status_code}) ended the prepared {role}: "
                        "the taming let it through")
        return None

    def _connection(self, case, role: str | None) -> None:
        headers = case.headers if case.headers is not None else {}
        name = next((k for k in headers if k.lower() == "x-svc-connection"), "X-Svc-Connection")
        choice = _pick(case, 8)
        raw = headers.get(name)
        if choice == 0 or (choice == 1 and not isinstance(raw, str)):
            # The generated value (or none), garbage mostly; an object keeps its fields,
            # URLs tamed.
            decoded = decode(raw) if isinstance(raw, str) else None
            if isinstance(decoded, dict):
                headers[name] = encode(_tame_connection(decoded))
        elif choice == 1:
            # A well-formed connection naming the generated string as its provider.
            headers[name] = encode({"provider": raw})
        elif role is not None and choice < 7:
            headers[name] = encode(ROLES[role])
        else:
            headers[name] = encode((LOCAL, MEMORY, REST, LOCAL)[choice % 4])
        case.headers = headers


def rest_unreachable(case, response) -> bool:
    """The answer is the typed failure of the `rest` provider at the safe upstream."""
    headers = {k.lower(): v for k, v in response.request.headers.items()}
    connection = decode(headers.get("x-svc-connection", "")) or {}
    if not isinstance(connection, dict) or connection.get("provider") != "rest":
        return False
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return error.get("code") == "E9001" and SAFE_API_URL in error.get("message", "")
