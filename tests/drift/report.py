"""The short report of `just real-drift`: versions tried, real-CLI tests passed and failed,
per shape scenario the fields the newest CLIs added, removed or retyped, and the SDK checks.

Inputs are what the recipe collected: the `cargo test` log of the real-CLI tests, the shape
diffs the tests appended to `SVC_SHAPES_REPORT` (one JSON line per comparison), and one
`name pinned newest result` line per official SDK. Exits 1 on drift: a failed test, a shape
difference, a failed SDK check, or a newer version than a pin (green: move the pin).
"""

import argparse
import json
import re
import sys
from pathlib import Path

RESULT = re.compile(r"^test (real::\S+) \.\.\. (ok|FAILED|ignored)", re.M)


def tests(log: str) -> tuple[list[str], list[str]]:
    passed, failed = [], []
    for name, outcome in RESULT.findall(log):
        if outcome == "ok":
            passed.append(name)
        elif outcome == "FAILED":
            failed.append(name)
    return passed, failed


def shapes(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", action="append", default=[], help="NAME=PINNED:NEWEST")
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--shapes", type=Path, required=True)
    ap.add_argument("--sdk", action="append", default=[], help="NAME=PINNED:NEWEST:RESULT")
    args = ap.parse_args()
    drift = False

    print("== real CLIs (newest published, in a scratch cache)")
    for spec in args.cli:
        name, versions = spec.split("=", 1)
        pinned, newest = versions.split(":", 1)
        moved = pinned != newest
        drift |= moved
        print(f"  {name}: pinned {pinned}, newest {newest}{'  <- not the pin' if moved else ''}")

    log = args.log.read_text(errors="replace") if args.log.is_file() else ""
    passed, failed = tests(log)
    drift |= bool(failed) or not passed
    print(f"== real-CLI tests on the newest: {len(passed)} passed, {len(failed)} failed")
    for name in failed:
        print(f"  FAILED {name}")
    if not passed and not failed:
        print("  no test ran: see the cargo output above")

    print("== shapes (fake against the newest real CLI), per scenario")
    for entry in sorted(shapes(args.shapes), key=lambda e: e["test"]):
        scenario = entry["test"].removeprefix("real::shapes::")
        changes = [(k, entry.get(k, [])) for k in ("added", "removed", "retyped")]
        if not any(paths for _, paths in changes) and not entry.get("reordered"):
            print(f"  {scenario}: same")
            continue
        drift = True
        print(f"  {scenario}:")
        if entry.get("reordered"):
            print("    the lines come in another order")
        for kind, paths in changes:
            if paths:
                print(f"    {kind} ({len(paths)}): {', '.join(paths)}")

    print("== official SDKs")
    for spec in args.sdk:
        name, rest = spec.split("=", 1)
        pinned, newest, result = rest.split(":", 2)
        if pinned == newest:
            print(f"  {name}: pinned {pinned} is the newest")
            continue
        drift = True
        print(f"  {name}: pinned {pinned}, newest {newest}: checks on {newest} {result}")

    print("== " + ("drift: see above (README, `just real-drift`, says how to move the pins)" if drift else "no drift"))
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
