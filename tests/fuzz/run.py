#!/usr/bin/env python3
"""`just fuzz [--long]`: schemathesis against a running server with every group on, from
docs/openapi.json.

The server runs in a fresh folder with a template that confines it: the path guard allows
only that folder, the command guard only harmless programs, `http_fetch` only a loopback
port nothing listens on; the hooks (`hooks.py`) keep generated URLs and command lines on
the same harmless values. Checks: no 5xx but the documented upstream failures, every
status documented, every body (errors included) matching its schema, content types and
headers as documented, authentication enforced. Prints the counts (requests sent, routes
covered); exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
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


def closing_line(junit: Path) -> str:
    """`fuzz: N passed, M failed`, by route (one JUnit test case per operation)."""
    try:
        root = ElementTree.parse(junit).getroot()
    except (OSError, ElementTree.ParseError):
        return "fuzz: 0 passed, 1 failed (no report)"
    cases = list(root.iter("testcase"))
    failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    return f"fuzz: {len(cases) - failed} passed, {failed} failed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--long", action="store_true", help="many more cases per route, and chains of calls"
    )
    args, extra = parser.parse_known_args()
    venv_bin = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="svc-fuzz-") as tmp:
        folder = Path(tmp)
        proc, url = start(folder)
        print(f"fuzz: server at {url} (log {folder / 'server.log'})", flush=True)
        env = dict(os.environ, SVC_FUZZ_TOKEN=TOKEN, SCHEMATHESIS_HOOKS="hooks", PYTHONPATH=str(HERE))
        command = [
            str(venv_bin / "schemathesis"),
            "--config-file", str(HERE / "schemathesis.toml"),
            "run", str(REPO / "docs" / "openapi.json"),
            "--url", url,
            "--max-examples", "100" if args.long else "10",
            # The bounded run: examples, generated valid and invalid requests, no chains.
            *(["--max-time", "2400"] if args.long else ["--phases", "examples,coverage,fuzzing"]),
            "--report", "junit", "--report-junit-path", str(folder / "junit.xml"),
            *extra,
        ]
        try:
            code = subprocess.run(command, env=env, cwd=folder).returncode
        finally:
            stop(proc)
        print(closing_line(folder / "junit.xml"), flush=True)
        if proc.returncode not in (0, -signal.SIGTERM):
            print(f"fuzz: the server exited with {proc.returncode}; its log:", file=sys.stderr)
            print((folder / "server.log").read_text(errors="replace")[-4000:], file=sys.stderr)
            return 1
        return code


if __name__ == "__main__":
    sys.exit(main())
