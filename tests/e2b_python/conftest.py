"""The E2B SDK check: one engine for the whole run, started by `svc e2b env` in a temporary
state folder, its three variables put in this process's environment (where the unchanged
SDKs read them), every sandbox it still has killed and the engine stopped at the end.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]


def _binary() -> Path:
    path = Path(os.environ.get("SVC_BIN") or REPO / "target" / "debug" / "svc")
    if not path.is_file():
        pytest.fail(f"{path} not found: build first with `cargo build --workspace --bins`", pytrace=False)
    return path


@pytest.fixture(scope="session", autouse=True)
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    state = tmp_path_factory.mktemp("engine-state")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "E2B_"))}
    env["SVC_STATE_DIR"] = str(state)
    out = subprocess.run(
        [str(_binary()), "e2b", "env"], env=env, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    exported: dict[str, str] = {}
    for line in out.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        exported[name] = value
    assert set(exported) == {"E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY"}, out
    os.environ.update(exported)
    try:
        yield {**exported, "SVC_STATE_DIR": str(state), "SVC_BIN": str(_binary())}
    finally:
        from e2b import Sandbox

        for listed in Sandbox.list().next_items():
            Sandbox.kill(listed.sandbox_id)
        subprocess.run([str(_binary()), "provider", "engine", "stop"], env=env, timeout=60, check=False)
