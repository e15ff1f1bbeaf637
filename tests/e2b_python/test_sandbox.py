"""The unchanged `e2b` SDK (pinned in tests/python/requirements.txt) against the engine's
E2B front: each call a program moving from E2B's cloud makes, with the answers it expects."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import time
from datetime import datetime, timezone

import pytest
from e2b import AsyncSandbox, CommandExitException, Sandbox, SandboxQuery
from e2b.exceptions import NotFoundException, SandboxException
from e2b.sandbox.commands.command_handle import PtySize
from e2b.sandbox.filesystem.watch_handle import FilesystemEventType


@pytest.fixture
def sandbox():
    sb = Sandbox.create(metadata={"suite": "e2b-python"})
    try:
        yield sb
    finally:
        Sandbox.kill(sb.sandbox_id)


def test_a_command_runs_as_user_in_home(sandbox: Sandbox) -> None:
    result = sandbox.commands.run("echo hello; id -un; pwd; echo $HOME")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["hello", "user", "/home/user", "/home/user"]


def test_a_failing_command_raises_with_its_output(sandbox: Sandbox) -> None:
    with pytest.raises(CommandExitException) as failed:
        sandbox.commands.run("echo out; echo err >&2; exit 3")
    assert failed.value.exit_code == 3
    assert failed.value.stdout == "out\n"
    assert failed.value.stderr == "err\n"


def test_envs_cwd_user_and_streamed_output(sandbox: Sandbox) -> None:
    seen: list[str] = []
    result = sandbox.commands.run(
        "echo $GREETING; pwd; id -un", envs={"GREETING": "hi"}, cwd="/tmp", user="root", on_stdout=seen.append
    )
    assert result.stdout == "hi\n/tmp\nroot\n"
    assert "".join(seen) == result.stdout


def test_background_reconnect_list_and_kill(sandbox: Sandbox) -> None:
    first = sandbox.commands.run("sleep 0.5; echo done", background=True)
    again = sandbox.commands.connect(first.pid)
    assert again.wait().stdout == "done\n"
    sleeper = sandbox.commands.run("sleep 60", background=True)
    listed = {p.pid: p for p in sandbox.commands.list()}
    assert listed[sleeper.pid].args == ["-l", "-c", "sleep 60"]
    assert sandbox.commands.kill(sleeper.pid)
    with pytest.raises(CommandExitException) as killed:
        sleeper.wait()
    assert killed.value.exit_code != 0
    assert sleeper.pid not in {p.pid for p in sandbox.commands.list()}


def test_stdin_is_written_and_closed(sandbox: Sandbox) -> None:
    cat = sandbox.commands.run("cat", background=True, stdin=True)
    sandbox.commands.send_stdin(cat.pid, "through stdin\n")
    sandbox.commands.close_stdin(cat.pid)
    assert cat.wait().stdout == "through stdin\n"


def test_files_write_read_list_stat_rename_remove(sandbox: Sandbox) -> None:
    info = sandbox.files.write("/home/user/dir/a.txt", "data!")
    assert info.path == "/home/user/dir/a.txt"
    assert sandbox.files.read("/home/user/dir/a.txt") == "data!"
    sandbox.files.write("/home/user/dir/b.bin", b"\x00\xff" * 1000)
    assert sandbox.files.read("/home/user/dir/b.bin", format="bytes") == b"\x00\xff" * 1000
    written = sandbox.files.write_files([{"path": "/home/user/m1", "data": "1"}, {"path": "/home/user/m2", "data": "2"}])
    assert [w.path for w in written] == ["/home/user/m1", "/home/user/m2"]
    names = sorted(e.name for e in sandbox.files.list("/home/user/dir"))
    assert names == ["a.txt", "b.bin"]
    deep = {e.path for e in sandbox.files.list("/home/user", depth=2)}
    assert "/home/user/dir/a.txt" in deep
    stat = sandbox.files.get_info("/home/user/dir/b.bin")
    assert stat.size == 2000 and stat.permissions.startswith("-")
    assert sandbox.files.exists("/home/user/dir/a.txt")
    assert not sandbox.files.exists("/home/user/nope")
    assert sandbox.files.make_dir("/home/user/new/deep")
    assert not sandbox.files.make_dir("/home/user/new/deep")
    assert sandbox.files.get_info("/home/user/new/deep").type.value == "dir"
    moved = sandbox.files.rename("/home/user/dir/a.txt", "/home/user/dir/c.txt")
    assert (moved.name, moved.path) == ("c.txt", "/home/user/dir/c.txt")
    assert sandbox.files.read("/home/user/dir/c.txt") == "data!"
    assert not sandbox.files.exists("/home/user/dir/a.txt")
    sandbox.files.remove("/home/user/dir/c.txt")
    assert not sandbox.files.exists("/home/user/dir/c.txt")
    with pytest.raises(NotFoundException):
        sandbox.files.read("/home/user/missing.txt")


def test_large_files_both_ways(sandbox: Sandbox) -> None:
    # Over axum's default 2 MiB body limit, by multipart (text) and octet-stream (a file).
    text = "0123456789abcdef" * (384 * 1024)
    sandbox.files.write("/home/user/big.txt", text)
    assert sandbox.files.get_info("/home/user/big.txt").size == len(text)
    blob = bytes(range(256)) * (32 * 1024)
    sandbox.files.write("/home/user/big.bin", io.BytesIO(blob))
    assert sandbox.files.read("/home/user/big.bin", format="bytes") == blob


def test_a_gzip_upload_arrives_whole(sandbox: Sandbox) -> None:
    # `gzip=True` sends `Content-Encoding: gzip` on the upload and asks for it on the read.
    # The front never compresses a read (it answers the bytes as they are, which the SDK
    # takes too), so the read only shows the uploaded bytes came back whole.
    blob = b"compressible " * 200_000
    info = sandbox.files.write("/home/user/zipped.bin", blob, gzip=True)
    assert info.path == "/home/user/zipped.bin"
    assert sandbox.files.get_info("/home/user/zipped.bin").size == len(blob)
    assert sandbox.files.read("/home/user/zipped.bin", format="bytes", gzip=True) == blob


def test_watch_by_polling(sandbox: Sandbox) -> None:
    sandbox.files.make_dir("/home/user/watched")
    handle = sandbox.files.watch_dir("/home/user/watched")
    try:
        sandbox.files.write("/home/user/watched/new.txt", "x")
        seen = []
        deadline = time.time() + 10
        while not any(e.name == "new.txt" and e.type == FilesystemEventType.CREATE for e in seen):
            assert time.time() < deadline, seen
            time.sleep(0.05)
            seen.extend(handle.get_new_events())
        assert {e.name for e in seen} == {"new.txt"}, seen
    finally:
        handle.stop()


def test_watch_by_stream_with_the_async_sdk(sandbox: Sandbox) -> None:
    async def watch() -> list:
        remote = await AsyncSandbox.connect(sandbox.sandbox_id)
        await remote.files.make_dir("/home/user/streamed")
        seen: list = []
        arrived = asyncio.Event()

        def on_event(event) -> None:
            seen.append(event)
            if event.name == "new.txt" and event.type == FilesystemEventType.CREATE:
                arrived.set()

        handle = await remote.files.watch_dir("/home/user/streamed", on_event=on_event)
        try:
            await remote.files.write("/home/user/streamed/new.txt", "x")
            await asyncio.wait_for(arrived.wait(), 10)
        finally:
            await handle.stop()
        return seen

    created = [e.name for e in asyncio.run(watch()) if e.type == FilesystemEventType.CREATE]
    assert created == ["new.txt"]


def test_pty_output_and_resize(sandbox: Sandbox) -> None:
    out: list[bytes] = []
    terminal = sandbox.pty.create(PtySize(rows=20, cols=70))
    sandbox.pty.send_stdin(terminal.pid, b"stty size\n")
    time.sleep(0.5)
    sandbox.pty.resize(terminal.pid, PtySize(rows=30, cols=90))
    sandbox.pty.send_stdin(terminal.pid, b"stty size; exit\n")
    terminal.wait(on_pty=out.append)
    text = b"".join(out).decode(errors="replace")
    assert "20 70" in text and "30 90" in text


def test_info_list_metadata_paging_timeout_metrics(sandbox: Sandbox) -> None:
    info = sandbox.get_info()
    assert info.sandbox_id == sandbox.sandbox_id
    assert info.metadata == {"suite": "e2b-python"}
    assert info.state.value == "running"
    other = Sandbox.create(metadata={"suite": "other"})
    try:
        mine = Sandbox.list(query=SandboxQuery(metadata={"suite": "e2b-python"})).next_items()
        assert [s.sandbox_id for s in mine] == [sandbox.sandbox_id]
        pages = Sandbox.list(limit=1)
        first = pages.next_items()
        assert len(first) == 1 and pages.has_next
        second = pages.next_items()
        assert len(second) == 1 and second[0].sandbox_id != first[0].sandbox_id
    finally:
        other.kill()
    sandbox.set_timeout(120)
    info = sandbox.get_info()
    remaining = (info.end_at - datetime.now(timezone.utc)).total_seconds()
    assert 110 <= remaining <= 121, remaining
    sandbox.commands.run("sleep 30", background=True)
    metrics = sandbox.get_metrics()
    assert metrics and metrics[0].cpu_count >= 1 and metrics[0].mem_total > 0
    assert metrics[0].mem_used > 0, "a running process has resident memory"


def test_an_e2b_sandbox_is_an_engine_sandbox(sandbox: Sandbox, engine: dict[str, str]) -> None:
    env = {**os.environ, "SVC_STATE_DIR": engine["SVC_STATE_DIR"]}
    listed = subprocess.run(
        [engine["SVC_BIN"], "sandbox", "list", "--json"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert sandbox.sandbox_id in {s["sandbox_id"] for s in json.loads(listed)["sandboxes"]}


def test_pause_then_connect_resumes_with_the_background_process(sandbox: Sandbox) -> None:
    background = sandbox.commands.run("sleep 1; echo survived", background=True)
    sandbox.pause()
    assert sandbox.get_info().state.value == "paused"
    resumed = Sandbox.connect(sandbox.sandbox_id)
    assert resumed.get_info().state.value == "running"
    assert resumed.commands.connect(background.pid).wait().stdout == "survived\n"


def test_kill_ends_the_sandbox() -> None:
    sb = Sandbox.create()
    assert sb.is_running()
    sb.kill()
    assert not sb.is_running()
    with pytest.raises(SandboxException, match=f"{sb.sandbox_id}.*(not found|killed|timed out)"):
        sb.commands.run("true")
    with pytest.raises(NotFoundException):
        Sandbox.get_info(sb.sandbox_id)


def test_cloud_only_calls_say_so() -> None:
    with pytest.raises(Exception, match="not available in a local engine"):
        Sandbox.create(template="base", mcp={"exa": {"apiKey": "x"}})
