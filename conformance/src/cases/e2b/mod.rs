//! The E2B-compatible front of the engine (issue 28): its control plane and the
//! envd it answers for every sandbox, on the listener the descriptor names
//! (`e2b_port`, `e2b_api_key`), checked on the wire the E2B SDKs speak: the
//! Connect protocol's envelopes and end frames, unary error statuses and codes,
//! keep-alives, int64 as strings, unknown fields ignored, and both tokens; then
//! each call as the SDKs rely on it: a sandbox's life, processes, files, code.

mod code;
mod control;
mod filesystem;
mod lifecycle;
mod process;
mod support;
mod wire;

use crate::Case;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(control::cases());
    all.extend(wire::cases());
    all.extend(lifecycle::cases());
    all.extend(process::cases());
    all.extend(filesystem::cases());
    all.extend(code::cases());
    all
}
