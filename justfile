# svc tasks. `just` alone lists them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @just --list

# Everything CI runs: format check, clippy -D warnings, unit, integration and conformance tests.
test: fmt-check lint
    cargo build --workspace --bins
    cargo test --workspace

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
    PATH="$PWD/target/debug:$PATH" target/debug/svc serve --demo {{args}}

# Run the conformance suite against our server (extra args go to svc-conformance).
conformance *args:
    cargo build --workspace --bins
    target/debug/svc-conformance --server-cmd "$PWD/target/debug/svc serve --port {port}" {{args}}

# Benchmarks (release build): pipeline throughput and latency against bare axum.
bench *args:
    cargo bench --bench pipeline -- {{args}}

# Regenerate docs/endpoints.md from the endpoint table.
docs:
    cargo run -q --bin svc -- endpoints --format markdown > docs/endpoints.md

# Accept changed insta snapshots after reviewing them (needs cargo-insta) or rerun with INSTA_UPDATE=always.
snapshots:
    INSTA_UPDATE=always cargo test --workspace
