# svc tasks. `just` alone lists them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @just --list

# Everything CI runs: format check, clippy -D warnings, unit, integration, conformance, Python and TypeScript SDK and real-CLI tests, the bounded fuzz run.
test: fmt-check one-build lint
    cargo build --workspace --bins
    cargo test --workspace
    just test-python
    just test-e2b-python
    just test-e2b-ts
    just test-ts
    just test-real
    just fuzz

codex_version := "0.171.0"
claude_version := "2.1.332"
real_clis := env_var_or_default("SVC_REAL_CLIS", env_var("HOME") / ".cache/svc/real-clis")

# The pinned real CLIs, installed with npm into a cache outside the repo (reinstalled only when the pins change).
real-clis:
    #!/usr/bin/env bash
    set -euo pipefail
    dir="{{real_clis}}"
    want="@openai/codex@{{codex_version}} @anthropic-ai/claude-code@{{claude_version}}"
    if [ "$(cat "$dir/.pinned" 2>/dev/null)" != "$want" ]; then
        echo "installing $want into $dir"
        mkdir -p "$dir"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $want
        echo "$want" >"$dir/.pinned"
    fi
    mkdir -p target/real-bin
    ln -sfn "$dir/node_modules/.bin/codex" target/real-bin/rt-one
    ln -sfn "$dir/node_modules/.bin/claude" target/real-bin/rt-two
    target/real-bin/rt-one --version
    target/real-bin/rt-two --version

# End to end with the real Codex CLI and Claude Code (as rt-one and rt-two) against the scripted model.
test-real: real-clis
    cargo build --workspace --bins
    SVC_REAL_BIN="$PWD/target/real-bin" cargo test --test integration real:: -- --ignored

# Drift report (not part of `just test`: versions move under CI's feet): the newest published Codex CLI and Claude Code, installed into a scratch cache (never the pinned one), through the same real-CLI tests and shape diffs, and the newest openai SDKs through the SDK checks. Prints versions, tests passed/failed and per scenario the fields added/removed/retyped; exits non-zero on drift.
real-drift:
    #!/usr/bin/env bash
    set -euo pipefail
    scratch="${SVC_DRIFT_DIR:-$HOME/.cache/svc/drift}"
    rm -rf "$scratch/clis" "$scratch/bin" "$scratch/sdk-repo" "$scratch/venv" "$scratch/shapes.jsonl"
    mkdir -p "$scratch/clis" "$scratch/bin"
    codex="$(npm view @openai/codex version)"
    claude="$(npm view @anthropic-ai/claude-code version)"
    echo "installing @openai/codex@$codex @anthropic-ai/claude-code@$claude into $scratch/clis"
    npm install --prefix "$scratch/clis" --no-audit --no-fund --loglevel=error "@openai/codex@$codex" "@anthropic-ai/claude-code@$claude"
    ln -sfn "$scratch/clis/node_modules/.bin/codex" "$scratch/bin/rt-one"
    ln -sfn "$scratch/clis/node_modules/.bin/claude" "$scratch/bin/rt-two"
    cargo build --workspace --bins
    # A failing run is what this recipe reports, not a reason to stop.
    SVC_REAL_BIN="$scratch/bin" SVC_SHAPES_REPORT="$scratch/shapes.jsonl" cargo test --test integration real:: -- --ignored 2>&1 | tee "$scratch/real.log" || true
    ts_pinned="$(node -p 'require("./tests/typescript/package.json").devDependencies.openai')"
    ts_newest="$(npm view openai version)"
    ts_result="not run"
    if [ "$ts_pinned" != "$ts_newest" ]; then
        # A copy of the check whose `target` is ours, so its server is the one just built.
        copy="$scratch/sdk-repo"; mkdir -p "$copy/tests"; ln -sfn "$PWD/target" "$copy/target"
        cp -r tests/typescript "$copy/tests/" && rm -rf "$copy/tests/typescript/node_modules"
        (cd "$copy/tests/typescript" && npm ci --no-audit --no-fund --loglevel=error \
            && npm install --save-exact --no-audit --no-fund --loglevel=error "openai@$ts_newest" \
            && node_modules/.bin/tsc --noEmit -p . \
            && node --import tsx --test --test-concurrency=1 test/*.test.ts) >"$scratch/ts.log" 2>&1 \
            && ts_result="pass" || ts_result="FAIL (see $scratch/ts.log)"
    fi
    py_pinned="$(sed -n 's/^openai==//p' tests/python/requirements.txt)"
    major="${py_pinned%%.*}"
    python3 -m venv "$scratch/venv"
    py_newest="$("$scratch/venv/bin/python" -m pip index versions openai 2>/dev/null | sed -n 's/^Available versions: //p' | tr ',' '\n' | tr -d ' ' | grep "^$major\." | head -1)"
    py_result="not run"
    if [ -n "$py_newest" ] && [ "$py_pinned" != "$py_newest" ]; then
        sed "s/^openai==.*/openai==$py_newest/" tests/python/requirements.txt >"$scratch/requirements.txt"
        ("$scratch/venv/bin/python" -m pip install -q --disable-pip-version-check -r "$scratch/requirements.txt" \
            && "$scratch/venv/bin/python" -m pytest -q tests/python) >"$scratch/python.log" 2>&1 \
            && py_result="pass" || py_result="FAIL (see $scratch/python.log)"
    fi
    python3 tests/drift/report.py --log "$scratch/real.log" --shapes "$scratch/shapes.jsonl" \
        --cli "codex={{codex_version}}:$codex" --cli "claude-code={{claude_version}}:$claude" \
        --sdk "openai (npm)=$ts_pinned:$ts_newest:$ts_result" --sdk "openai (PyPI $major.x)=$py_pinned:${py_newest:-$py_pinned}:$py_result"

# The official client check: the openai Python SDK (strict validation) against our server.
test-python: python-env
    cargo build --workspace --bins
    "${SVC_VENV:-$HOME/.cache/svc/venv}/bin/python" -m pytest -q tests/python

# The venv of the Python checks and the fuzz run (pinned tests/python/requirements.txt and tests/fuzz/requirements.txt); reinstalled only when they change.
python-env:
    #!/usr/bin/env bash
    set -euo pipefail
    venv="${SVC_VENV:-$HOME/.cache/svc/venv}"
    reqs="tests/python/requirements.txt tests/fuzz/requirements.txt"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    want="$(cat $reqs | sha256sum | cut -d' ' -f1)"
    if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
        echo "installing $reqs into $venv"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check $(printf -- '-r %s ' $reqs)
        echo "$want" >"$venv/.requirements.sha256"
    fi

# Schema-driven fuzzing: schemathesis against a server with every group on, from docs/openapi.json, then against a local engine, from docs/engine-openapi.json (a bounded run; `--long` for many more cases per route; `--target server|engine|all`, default all). Prints requests sent and routes covered per target.
fuzz *args: python-env
    cargo build --workspace --bins
    "${SVC_VENV:-$HOME/.cache/svc/venv}/bin/python" tests/fuzz/run.py {{args}}

# The E2B SDK check: the unchanged, pinned `e2b` Python SDK against the engine's E2B front (an engine of its own, started by `svc e2b env` in a temporary state folder).
test-e2b-python: e2b-python-env
    cargo build --workspace --bins
    "${SVC_E2B_VENV:-$HOME/.cache/svc/e2b-venv}/bin/python" -m pytest -q tests/e2b_python

# The venv of the E2B SDK check (pinned tests/e2b_python/requirements.txt); reinstalled only when it changes.
e2b-python-env:
    #!/usr/bin/env bash
    set -euo pipefail
    venv="${SVC_E2B_VENV:-$HOME/.cache/svc/e2b-venv}"
    reqs="tests/e2b_python/requirements.txt"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    want="$(sha256sum $reqs | cut -d' ' -f1)"
    if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
        echo "installing $reqs into $venv"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check -r $reqs
        echo "$want" >"$venv/.requirements.sha256"
    fi

# The E2B SDK check for TypeScript: the unchanged, pinned npm `e2b` and `@e2b/code-interpreter` SDKs against the engine's E2B front (an engine per test file, started by `svc e2b env` in a temporary state folder), typechecked with strict tsc, run by node:test.
test-e2b-ts: e2b-ts-env
    cargo build --workspace --bins
    cd tests/e2b_typescript && node_modules/.bin/tsc --noEmit -p .
    cd tests/e2b_typescript && node --import tsx --test --test-reporter=spec --test-concurrency=1 test/*.test.ts

# node_modules of the E2B TypeScript check (pinned tests/e2b_typescript/package-lock.json, `npm ci`); reinstalled only when the lock changes.
e2b-ts-env:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=tests/e2b_typescript
    if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' 2>/dev/null; then
        echo "the E2B TypeScript check needs Node.js 20.18 or newer (found: $(node --version 2>/dev/null || echo none))" >&2
        exit 1
    fi
    want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
    if [ "$(cat "$dir/node_modules/.package-lock.sha256" 2>/dev/null)" != "$want" ]; then
        echo "installing $dir/package-lock.json into $dir/node_modules"
        npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
        echo "$want" >"$dir/node_modules/.package-lock.sha256"
    fi

# The official client check for TypeScript: the npm openai SDK against our server, typechecked with tsc, run by node:test.
test-ts: ts-env
    cargo build --workspace --bins
    cd tests/typescript && node_modules/.bin/tsc --noEmit -p .
    cd tests/typescript && node --import tsx --test --test-reporter=spec --test-concurrency=1 test/*.test.ts

# node_modules of the TypeScript check (pinned tests/typescript/package-lock.json, `npm ci`); reinstalled only when the lock changes.
ts-env:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=tests/typescript
    major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
    if [ "$major" -lt 20 ]; then
        echo "the TypeScript check needs Node.js 20 or newer (found: $(node --version 2>/dev/null || echo none))" >&2
        exit 1
    fi
    want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
    if [ "$(cat "$dir/node_modules/.package-lock.sha256" 2>/dev/null)" != "$want" ]; then
        echo "installing $dir/package-lock.json into $dir/node_modules"
        npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
        echo "$want" >"$dir/node_modules/.package-lock.sha256"
    fi

# Fails when `cargo build` and `cargo test` would give a shared crate different features (see "One build" in Cargo.toml): that crate and all above it would compile twice.
one-build:
    #!/usr/bin/env bash
    set -euo pipefail
    features() { cargo tree --workspace -f '{p} [{f}]' --prefix none "$@" | sed 's/ (\*)//; s/ (proc-macro)//' | sort -u; }
    built="$(features -e normal,build)"
    tested="$(features -e normal,build,dev)"
    split="$(comm -23 <(echo "$built") <(echo "$tested"))"
    if [ -n "$split" ]; then
        echo "these crates get other features when the tests are built (add them to \"One build\" in Cargo.toml):" >&2
        echo "$split" >&2
        exit 1
    fi

# Check formatting.
fmt-check:
    cargo fmt --all -- --check

# Lint every target with warnings as errors.
lint:
    cargo clippy --workspace --all-targets -- -D warnings

# Run the server with the fake runtimes first on PATH (e.g. `just serve --port 0`).
serve *args:
    cargo build --workspace --bins
    PATH="$PWD/target/debug:$PATH" target/debug/svc serve {{args}}

# The demo: fake runtimes on PATH, the embedded demo template (agents group on).
demo *args:
    cargo build --workspace --bins
    SVC_AGENTS_WORKSPACE="${SVC_AGENTS_WORKSPACE:-$PWD/target/demo/workspace}" RT_FAKE_STATE_DIR="${RT_FAKE_STATE_DIR:-$PWD/target/demo/rt-state}" PATH="$PWD/target/debug:$PATH" target/debug/svc serve --demo {{args}}

# Run the conformance suite against our server and our engine, its provider cases against every provider kind (extra args go to svc-conformance).
conformance *args:
    cargo build --workspace --bins
    target/debug/svc-conformance --server-cmd "$PWD/target/debug/svc serve --port {port} --terminal-port {terminal_port}" --engine-cmd "$PWD/target/debug/svc provider engine serve --port {port} --idle-timeout 600" --engine-plugins "$PWD/target/debug/svc-plugin-dir" --engine-provider memory --engine-provider dir --engine-provider 'rest={"provider": "rest", "api_url": "{upstream_url}", "api_key": "{upstream_token}"}' {{args}}

# Benchmarks (release build), each against its floor in the same run, then the scale curves again ("How cost grows" in the README: the `scale:` lines of sessions, files, process and engine) and the wall time; about 3 minutes on 2 cores once built (the limit is 10). `just bench --quick`: one round of every bench and each curve at its smallest point, a smoke pass (not figures to quote). Arguments go to every bench; one bench's own options: `cargo bench --bench NAME -- --rounds N` (see the head of benches/NAME.rs).
bench *args:
    #!/usr/bin/env bash
    set -euo pipefail
    started=$SECONDS
    # The fake runtimes are found where this build puts them, CARGO_TARGET_DIR included.
    release="${CARGO_TARGET_DIR:-$PWD/target}/release"
    cargo build --release -p fake-runtimes
    # Everything built first, so no bench's figures share the cores with a compile.
    cargo bench --no-run
    just e2b-python-env
    log="$(mktemp)"
    trap 'rm -f "$log"' EXIT
    {
        cargo bench --bench pipeline -- {{args}}
        RT_FAKE_STATE_DIR="$(mktemp -d)" PATH="$release:$PATH" cargo bench --bench sessions -- {{args}}
        RT_FAKE_STATE_DIR="$(mktemp -d)" PATH="$release:$PATH" cargo bench --bench webhooks -- {{args}}
        cargo bench --bench files -- {{args}}
        cargo bench --bench process -- {{args}}
        cargo bench --bench terminal -- {{args}}
        cargo bench --bench code -- {{args}}
        cargo bench --bench browser -- {{args}}
        cargo bench --bench engine -- {{args}}
        cargo bench --bench e2b -- {{args}}
    } 2>&1 | tee "$log"
    echo
    echo "How cost grows (the scale: lines above, one run):"
    sed -n 's/^scale: /  /p' "$log"
    echo "just bench {{args}}: $((SECONDS - started)) s wall, build included"

# Regenerate docs/endpoints.md, docs/errors.md and docs/openapi.json from the endpoint and error tables.
docs:
    cargo run -q --bin svc -- endpoints --format markdown > docs/endpoints.md
    cargo run -q --bin svc -- errors --format markdown > docs/errors.md
    cargo run -q --bin svc -- openapi --out docs/openapi.json
    cargo run -q --bin svc -- openapi --engine --out docs/engine-openapi.json
    cargo build -q --workspace --bins && SVC_UPDATE_DOCS=1 cargo test -q --test integration -- engine_docs e2b_docs

# Accept changed insta snapshots after reviewing them (needs cargo-insta) or rerun with INSTA_UPDATE=always.
snapshots:
    INSTA_UPDATE=always cargo test --workspace
