"""Schemathesis hooks of the fuzz run: keep every generated request on this machine, and count.

The fuzzer fills bodies from the schemas, so a URL field could name any host and a command
field any shell line. Before each call, string values that would leave the machine (URLs)
or run something (`cmd`, `code`) are replaced by fixed harmless ones; everything else stays
as generated, and non-string values stay too (the server must refuse them typed). Every
answer is counted per operation; `summary()` prints the counts.

One schemathesis process fuzzes one target, named by `SVC_FUZZ_TARGET` (run.py sets it):
`server` (the default) or `engine`. The engine's requests are tamed further by
`engine.Tamer` (its prepared sandboxes, its connection header), and its 5xx answers are
checked by `engine_server_error`.
"""

from __future__ import annotations

import atexit
import json
import os
from collections import Counter

import schemathesis

TARGET = os.environ.get("SVC_FUZZ_TARGET", "server")

# A loopback port nothing listens on: `http_fetch` is allowed exactly this host and port
# (the run's template), so a fetch is tried and fails typed (502 `fetch_failed`); webhook and
# credential URLs are refused as private before any lookup.
SAFE_URL = "http://127.0.0.1:9/fuzz"
URL_KEYS = {"url", "server_url", "mcp_server_url"}
if TARGET == "engine":
    # The engine's connection fields may come in a POST body too; `api_url` would make the
    # `rest` provider call out (engine.py explains the loopback port it gets instead).
    from engine import SAFE_API_URL, Tamer, rest_unreachable

    SAFE_URL = SAFE_API_URL
    URL_KEYS = URL_KEYS | {"api_url"}
    ENGINE = Tamer()
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
    if TARGET == "engine":
        ENGINE.tame(case)


@schemathesis.hook
def after_call(ctx, case, response):
    REQUESTS[case.operation.label] += 1
    STATUSES[str(response.status_code)] += 1


@schemathesis.check
def engine_server_error(ctx, response, case):
    """The engine's 5xx answers, narrowed to the two a working engine gives (the config
    lets 500 and 501 past `not_a_server_error` on its routes for them): 501 `E8004`, a
    feature the connection's provider does not declare (`memory` runs nothing), and 500
    `E9001` from a `rest` connection, whose upstream is the run's loopback port nothing
    listens on. Any other 5xx (`E9000` above all) is a fault."""
    if TARGET != "engine" or response.status_code < 500:
        return None
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = None
    if response.status_code == 501 and code == "E8004":
        return None
    if response.status_code == 500 and rest_unreachable(case, response):
        return None
    raise AssertionError(
        f"the engine answered {response.status_code} {code or 'without an engine error body'}: "
        f"a 5xx is only 501 E8004 or a rest connection's unreachable upstream (500 E9001)"
    )


@schemathesis.check
def engine_prepared_kept(ctx, response, case):
    """The prepared sandboxes live through the run: a request that ended one (which the
    taming should have aimed at a throwaway) fails here, with the case to replay it."""
    if TARGET != "engine":
        return None
    hole = ENGINE.ended_prepared(response)
    if hole:
        raise AssertionError(hole)
    return None


def summary() -> None:
    total = sum(REQUESTS.values())
    print(f"fuzz: {TARGET}: {total} requests sent, {len(REQUESTS)} routes covered")
    print(f"fuzz: {TARGET}: statuses " + json.dumps(dict(sorted(STATUSES.items()))))
    if TARGET == "engine":
        print(f"fuzz: engine: {ENGINE.helpers} helper requests of the hooks (throwaways, processes, contexts)")
    out = os.environ.get("SVC_FUZZ_COUNTS")
    if out:
        with open(out, "w") as f:
            json.dump({"requests": total, "routes": sorted(REQUESTS), "statuses": STATUSES}, f)


atexit.register(summary)
