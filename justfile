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

# Benchmarks (release build): pipeline against bare axum, sessions, webhook deliveries, files, terminal echo.
bench *args:
    cargo build --release -p fake-runtimes
    cargo bench --bench pipeline -- {{args}}
    RT_FAKE_STATE_DIR="$(mktemp -d)" PATH="$PWD/target/release:$PATH" cargo bench --bench sessions
    RT_FAKE_STATE_DIR="$(mktemp -d)" PATH="$PWD/target/release:$PATH" cargo bench --bench webhooks
    cargo bench --bench files
    cargo bench --bench process
    cargo bench --bench terminal
    cargo bench --bench code
    cargo bench --bench browser
    cargo bench --bench engine

# Regenerate docs/endpoints.md, docs/errors.md and docs/openapi.json from the endpoint and error tables.
docs:
    cargo run -q --bin svc -- endpoints --format markdown > docs/endpoints.md
    cargo run -q --bin svc -- errors --format markdown > docs/errors.md
    cargo run -q --bin svc -- openapi --out docs/openapi.json
    cargo run -q --bin svc -- openapi --engine --out docs/engine-openapi.json
    cargo build -q --workspace --bins && SVC_UPDATE_DOCS=1 cargo test -q --test integration engine_docs

# Accept changed insta snapshots after reviewing them (needs cargo-insta) or rerun with INSTA_UPDATE=always.
snapshots:
    INSTA_UPDATE=always cargo test --workspace
