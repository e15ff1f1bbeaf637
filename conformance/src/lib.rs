//! Black-box conformance suite for svc-compatible servers. It only speaks
//! HTTP, SSE and WebSocket to a base URL and asserts on raw JSON; it never
//! links the server crate.

pub mod case;
pub mod cases;
pub mod contract;
pub mod ctx;
pub mod engine;
pub mod launch;
pub mod mcp_mock;
pub mod panic;
pub mod processes;
pub mod profiles;
pub mod providers;
pub mod raw_wire;
pub mod redact;
pub mod report;
pub mod runner;

pub use case::{Case, CaseFuture};
pub use contract::Contract;
pub use ctx::{Ctx, Resp, SseFrame, SseStream, WsStream};
pub use profiles::Profile;
pub use report::{CaseResult, Counts, Report, Status};
pub use runner::{Options, Reach, Target, run_suite};

/// Every case, checked: panics when ids repeat or are malformed, since a
/// broken case list must never produce a green run.
pub fn all_cases() -> Vec<Case> {
    let cases = cases::all();
    if let Err(e) = runner::check_cases(&cases) {
        panic!("{e:#}");
    }
    cases
}

/// Where the committed per-group summary lives.
pub fn summary_file() -> std::path::PathBuf {
    redact::snapshots_dir().join("conformance-summary.txt")
}
