//! What a plugin answers where the route's answer carries bytes (as base64) or is read only
//! in part: the shapes `ops` reads them as.

use super::protocol;
use crate::engine::provider::{ProcessInfo, ProviderResult};
use serde::Deserialize;

/// `commands/run`'s result: the output as base64.
#[derive(Deserialize)]
pub(super) struct RunResult {
    pub(super) pid: u32,
    pub(super) stdout_b64: String,
    pub(super) stderr_b64: String,
    pub(super) exit_code: i32,
    pub(super) timed_out: bool,
}

#[derive(Deserialize)]
pub(super) struct CodeResult {
    pub(super) stdout_b64: String,
    pub(super) stderr_b64: String,
    pub(super) exit_code: Option<i32>,
    pub(super) timed_out: bool,
    pub(super) duration_ms: u64,
}

#[derive(Deserialize)]
pub(super) struct Processes {
    pub(super) processes: Vec<ProcessInfo>,
}

#[derive(Deserialize)]
pub(super) struct Size {
    pub(super) size: u64,
}

pub(super) fn decode(plugin: &str, field: &str, b64: &str) -> ProviderResult<Vec<u8>> {
    protocol::bytes(plugin, field, b64)
}
