"""Schemathesis hooks of the fuzz run: keep every generated request on this machine, and count.

The fuzzer fills bodies from the schemas, so a URL field could name any host and a command
field any shell line. Before each call, string values that would leave the machine (URLs)
or run something (`cmd`, `code`) are replaced by fixed harmless ones; everything else stays
as generated, and non-string values stay too (the server must refuse them typed). Every
answer is counted per operation; `summary()` prints the counts.
"""

from __future__ import annotations

import atexit
import json
import os
from collections import Counter

import schemathesis

# A loopback port nothing listens on: `http_fetch` is allowed exactly this host and port
# (the run's template), so a fetch is tried and fails typed (502 `fetch_failed`); webhook and
# credential URLs are refused as private before any lookup.
SAFE_URL = "http://127.0.0.1:9/fuzz"
URL_KEYS = {"url", "server_url", "mcp_server_url"}
SAFE_CODE = {"python3": "print(1)", "node": "console.log(1)", "bash": "echo fuzz", "sh": "echo fuzz"}

REQUESTS: Counter[str] = Counter()
STATUSES: Counter[str] = Counter()


def _tame(value, path: tuple[str, ...] = ()):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(item, str) and key in URL_KEYS:
                out[key] = SAFE_URL
            elif isinstance(item, str) and key == "cmd" and not path:
                # With `args` the program runs directly, without a shell.
                out[key] = "echo" if isinstance(value.get("args"), list) else "echo fuzz"
            elif isinstance(item, str) and key == "code" and not path:
                out[key] = SAFE_CODE.get(str(value.get("language")), "echo fuzz")
            else:
                out[key] = _tame(item, path + (str(key),))
        return out
    if isinstance(value, list):
        return [_tame(item, path) for item in value]
    return value


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    if isinstance(case.body, (dict, list)):
        case.body = _tame(case.body)


@schemathesis.hook
def after_call(ctx, case, response):
    REQUESTS[case.operation.label] += 1
    STATUSES[str(response.status_code)] += 1


def summary() -> None:
    total = sum(REQUESTS.values())
    print(f"fuzz: {total} requests sent, {len(REQUESTS)} routes covered")
    print("fuzz: statuses " + json.dumps(dict(sorted(STATUSES.items()))))
    out = os.environ.get("SVC_FUZZ_COUNTS")
    if out:
        with open(out, "w") as f:
            json.dump({"requests": total, "routes": sorted(REQUESTS), "statuses": STATUSES}, f)


atexit.register(summary)
