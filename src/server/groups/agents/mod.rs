//! Thin handlers of the agents group: they read the request, call `agents::Agents`, and
//! shape the answer.

mod definitions;
mod environments;
mod lists;
mod refusals;
mod responses;
mod responses_ws;
mod sessions;
mod stream;
mod vaults;
mod webhooks;

pub use definitions::*;
pub use environments::*;
pub use lists::*;
pub use refusals::refusal;
pub use responses::*;
pub use responses_ws::responses_connect;
pub use sessions::*;
pub use stream::events_stream;
pub use vaults::*;
pub use webhooks::*;

/// A request header's value, trimmed; `None` when absent, empty or not text. Every agents
/// route reads `X-Svc-Adapter` and `Idempotency-Key` through this, so they agree.
pub(super) fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}
