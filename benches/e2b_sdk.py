"""The Python side of `cargo bench --bench e2b` (benches/e2b.rs): the unchanged `e2b` SDK,
pointed at the engine's E2B front by the environment, against a sandbox the bench made.

Arguments: SANDBOX_ID ROUNDS SOURCE_FILE. Prints one JSON object: each `commands.run("true")`
in ms, and the seconds of `files.write` and `files.read` of SOURCE_FILE's bytes.
"""

import json
import sys
import time

from e2b import Sandbox


def main() -> None:
    sandbox_id, rounds, source = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    sandbox = Sandbox.connect(sandbox_id)
    for _ in range(10):  # warm: connections open, the sandbox's page cache
        sandbox.commands.run("true")
    runs = []
    for _ in range(rounds):
        started = time.perf_counter()
        result = sandbox.commands.run("true")
        runs.append((time.perf_counter() - started) * 1000)
        assert result.exit_code == 0, result
    with open(source, "rb") as f:
        data = f.read()
    writes, reads = [], []
    for round_ in range(3):
        path = f"/home/user/big-{round_}.bin"
        started = time.perf_counter()
        sandbox.files.write(path, data)
        writes.append(time.perf_counter() - started)
        started = time.perf_counter()
        back = sandbox.files.read(path, format="bytes")
        reads.append(time.perf_counter() - started)
        assert len(back) == len(data), (len(back), len(data))
        sandbox.files.remove(path)
    print(json.dumps({"run_ms": runs, "write_s": writes, "read_s": reads}))


if __name__ == "__main__":
    main()
