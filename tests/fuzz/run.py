#!/usr/bin/env python3
"""`just fuzz [--long] [--target server|engine|all]`: schemathesis against a running server
with every group on, from docs/openapi.json, then against the local engine, from
docs/engine-openapi.json.

The server runs in a fresh folder with a template that confines it: the path guard allows
only that folder, the command guard only harmless programs, `http_fetch` only a loopback
port nothing listens on; the hooks (`hooks.py`) keep generated URLs and command lines on
the same harmless values. The engine (`svc provider engine serve`) runs with its own fresh
state folder; the run prepares the sandboxes the config's dictionaries aim at, and
`engine.py` keeps its requests harmless (see there); at the end every sandbox is killed,
the engine is shut down, and no process of a sandbox may survive. Checks, for both: no 5xx
but the documented upstream failures, every status documented, every body (errors
included) matching its schema, content types and headers as documented, authentication
enforced. Prints the counts (requests sent, routes covered) and a closing line per target;
exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from xml.etree import ElementTree

from engine import Engine

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TOKEN = "fuzz-token"
LISTENING = re.compile(r"listening on (http://\S+)")

TEMPLATE = """\
server:
  groups: {{core: true, commands: true, file_ops: true, process: true, terminal: true,
           system: true, dev_tools: true, browser: true, agents: true}}
  child_env: ["RT_FAKE_*"]
identities:
  - {{id: fuzz, token_env: SVC_FUZZ_TOKEN, scopes: ["*"]}}
paths:
  allow: ["{root}"]
commands:
  - name: greet
    description: Print a greeting
    argv: ["echo", "hello", "{{who}}"]
    args:
      - {{name: who, type: string, required: true, max_length: 64}}
process:
  allow_commands: [echo, "true", sleep, cat, sh, bash]
dev_tools:
  url_allow: ["127.0.0.1:9"]
"""


def start(folder: Path) -> tuple[subprocess.Popen, str]:
    root = folder / "root"
    (root / "docs").mkdir(parents=True)
    (root / "notes.txt").write_text("hello, fuzz\n")
    (root / "docs" / "guide.md").write_text("# Guide\n")
    config = folder / "template.yaml"
    config.write_text(TEMPLATE.format(root=root))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "RT_FAKE_"))}
    env.update(
        SVC_FUZZ_TOKEN=TOKEN,
        SVC_AGENTS_WORKSPACE=str(root / "workspace"),
        RT_FAKE_STATE_DIR=str(folder / "rt-state"),
        PATH=os.pathsep.join([str(REPO / "target" / "debug"), env.get("PATH", "")]),
    )
    binary = os.environ.get("SVC_BIN") or str(REPO / "target" / "debug" / "svc")
    log = open(folder / "server.log", "wb")
    proc = subprocess.Popen(
        [binary, "serve", "--port", "0", "--terminal-port", "0", "--config", str(config)],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log,
        start_new_session=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            sys.exit(f"svc printed no `listening on` line in 30 s (log: {folder / 'server.log'})")
        line = proc.stdout.readline().decode(errors="replace")
        if not line:
            sys.exit(f"svc exited ({proc.wait()}) before listening (log: {folder / 'server.log'})")
        m = LISTENING.search(line)
        if m:
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, m.group(1)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def start_engine(folder: Path) -> tuple[subprocess.Popen, str, str]:
    """The engine in `folder`, with its own state folder; answers it, its URL and token."""
    state = folder / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "RT_FAKE_"))}
    env["SVC_STATE_DIR"] = str(state)
    binary = os.environ.get("SVC_BIN") or str(REPO / "target" / "debug" / "svc")
    with open(folder / "engine-output.log", "wb") as log:
        proc = subprocess.Popen(
            # A day of idleness: the engine must not leave mid-run; the run stops it.
            [binary, "provider", "engine", "serve", "--port", "0", "--idle-timeout", "86400"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    descriptor = state / "engine.json"
    deadline = time.monotonic() + 30
    while True:
        try:
            info = json.loads(descriptor.read_text())
            # docs/engine-openapi.json: servers `http://127.0.0.1:{port}/v1`, paths below it.
            return proc, f"http://{info['host']}:{info['port']}/v1", info["token"]
        except (OSError, ValueError, KeyError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            log = (folder / "engine-output.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the engine wrote no {descriptor} (exit {proc.returncode}): {log}")
        time.sleep(0.1)


def marked(ids: set[str]) -> list[int]:
    """The live processes of these sandboxes: their mark `SVC_SANDBOX_ID=<id>` (docs/engine.md)."""
    marks = {f"SVC_SANDBOX_ID={i}".encode() for i in ids}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and marks.intersection(environ):
            found.append(int(entry.name))
    return found


def end_engine(proc: subprocess.Popen, url: str, token: str, state: Path) -> list[str]:
    """Kills every sandbox, shuts the engine down and sweeps what a sandbox left running.
    Answers the problems found (an engine that would not stop, surviving processes)."""
    problems = []
    if proc.poll() is None:
        client = Engine(url, token)
        client.end_all()
        try:
            client.call("POST", "/shutdown", timeout=10)
        except (OSError, RuntimeError) as e:
            problems.append(f"the shutdown failed: {e}")
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            problems.append("the engine did not exit within 15 s of its shutdown")
    stop(proc)
    try:
        # Anything of the engine's own group (it ran in a session of its own).
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    ids = {p.name for p in (state / "sandboxes").glob("*")}
    # Sandboxes outlive their engine; any left (another connection's) ends here, as does a
    # process the engine failed to end.
    deadline = time.monotonic() + 5
    while (left := marked(ids)) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
    if left:
        problems.append(f"sandbox processes survive SIGKILL: {left}")
    return problems


def closing_line(junit: Path, target: str) -> str:
    """`fuzz: TARGET: N passed, M failed`, by route (one JUnit test case per operation)."""
    try:
        root = ElementTree.parse(junit).getroot()
    except (OSError, ElementTree.ParseError):
        return f"fuzz: {target}: 0 passed, 1 failed (no report)"
    cases = list(root.iter("testcase"))
    failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    return f"fuzz: {target}: {len(cases) - failed} passed, {failed} failed"


def schemathesis(folder: Path, schema: str, url: str, long: bool, extra: list[str]) -> list[str]:
    venv_bin = Path(sys.executable).parent
    return [
        str(venv_bin / "schemathesis"),
        "--config-file", str(HERE / "schemathesis.toml"),
        "run", str(REPO / "docs" / schema),
        "--url", url,
        "--max-examples", "100" if long else "10",
        # The bounded run: examples, generated valid and invalid requests, no chains.
        *(["--max-time", "2400"] if long else ["--phases", "examples,coverage,fuzzing"]),
        "--report", "junit", "--report-junit-path", str(folder / "junit.xml"),
        *extra,
    ]


def fuzz_server(folder: Path, long: bool, extra: list[str]) -> tuple[int, str]:
    proc, url = start(folder)
    print(f"fuzz: server at {url} (log {folder / 'server.log'})", flush=True)
    env = dict(os.environ, SVC_FUZZ_TARGET="server", SVC_FUZZ_TOKEN=TOKEN,
               SCHEMATHESIS_HOOKS="hooks", PYTHONPATH=str(HERE))
    try:
        code = subprocess.run(schemathesis(folder, "openapi.json", url, long, extra),
                              env=env, cwd=folder).returncode
    finally:
        stop(proc)
    line = closing_line(folder / "junit.xml", "server")
    if proc.returncode not in (0, -signal.SIGTERM):
        print(f"fuzz: the server exited with {proc.returncode}; its log:", file=sys.stderr)
        print((folder / "server.log").read_text(errors="replace")[-4000:], file=sys.stderr)
        return 1, line
    return code, line


def fuzz_engine(folder: Path, long: bool, extra: list[str]) -> tuple[int, str]:
    started = time.monotonic()
    try:
        proc, url, token = start_engine(folder)
    except RuntimeError as e:
        print(f"fuzz: engine: {e}", file=sys.stderr)
        return 1, "fuzz: engine: 0 passed, 1 failed (the engine did not start)"
    print(f"fuzz: engine at {url} (logs {folder / 'state' / 'engine.log'}, "
          f"{folder / 'engine-output.log'})", flush=True)
    code, line = 1, None
    try:
        prepared = Engine(url, token).prepare()
        env = dict(os.environ, SVC_FUZZ_TARGET="engine", SVC_FUZZ_TOKEN=token,
                   SVC_FUZZ_ENGINE_URL=url, SVC_FUZZ_PREPARED=json.dumps(prepared),
                   SCHEMATHESIS_HOOKS="hooks", PYTHONPATH=str(HERE))
        code = subprocess.run(schemathesis(folder, "engine-openapi.json", url, long, extra),
                              env=env, cwd=folder).returncode
        lost = Engine(url, token).lost(prepared)
        for role, answer in lost.items():
            print(f"fuzz: engine: a prepared sandbox ended during the run: {role} "
                  f"({prepared[role]}): {answer}", file=sys.stderr)
        if lost:
            # What the engine logged of them (a kill, an expiry): when it happened.
            ids = [prepared[role] for role in lost]
            log = (folder / "state" / "engine.log").read_text(errors="replace").splitlines()
            for entry in (entry for entry in log if any(i in entry for i in ids)):
                print(f"fuzz: engine: log: {entry[:600]}", file=sys.stderr)
        code = code or int(bool(lost))
    except (OSError, RuntimeError) as e:
        print(f"fuzz: engine: preparing the sandboxes failed: {e}", file=sys.stderr)
        line = "fuzz: engine: 0 passed, 1 failed (no sandboxes prepared)"
    finally:
        problems = end_engine(proc, url, token, folder / "state")
    line = line or closing_line(folder / "junit.xml", "engine")
    for problem in problems:
        print(f"fuzz: engine: {problem}", file=sys.stderr)
    if problems or proc.returncode not in (0, -signal.SIGTERM):
        print(f"fuzz: the engine exited with {proc.returncode}; its log:", file=sys.stderr)
        print((folder / "state" / "engine.log").read_text(errors="replace")[-4000:], file=sys.stderr)
        code = code or 1
    print(f"fuzz: engine: {time.monotonic() - started:.0f} s", flush=True)
    return code, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--long", action="store_true", help="many more cases per route, and chains of calls"
    )
    parser.add_argument(
        "--target", choices=["server", "engine", "all"], default="all",
        help="what to fuzz: the server, the local engine, or both (default, in that order)",
    )
    args, extra = parser.parse_known_args()
    targets = {"server": fuzz_server, "engine": fuzz_engine}
    results = []
    for name, fuzz in targets.items():
        if args.target not in (name, "all"):
            continue
        with tempfile.TemporaryDirectory(prefix=f"svc-fuzz-{name}-", ignore_cleanup_errors=True) as tmp:
            results.append(fuzz(Path(tmp), args.long, extra))
    # The closing lines together at the end, one per target.
    for _, line in results:
        print(line, flush=True)
    return max(code for code, _ in results) if results else 1


if __name__ == "__main__":
    sys.exit(main())
