//! Thin handlers of the agents group: they read the request, call `agents::Agents`, and
//! shape the answer.

mod body;
mod definitions;
mod environments;
mod lists;
mod refusals;
mod responses;
mod responses_ws;
mod schemas;
mod sessions;
mod stream;
mod vaults;
mod webhooks;

use crate::server::endpoints::EndpointId;
use crate::server::openapi::op::Doc;
use crate::server::route::Bound;
use axum::routing::MethodFilter;
pub use refusals::refusal;

/// How a file binds its rows.
type Bind = fn(EndpointId, MethodFilter) -> Option<Bound>;

/// The handler of an agents row: each file binds its own.
pub fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    let files: [Bind; 9] = [
        sessions::handler,
        stream::handler,
        lists::handler,
        definitions::handler,
        responses::handler,
        responses_ws::handler,
        vaults::handler,
        environments::handler,
        webhooks::handler,
    ];
    files.iter().find_map(|bind| bind(id, f))
}

/// How a file declares its rows for the OpenAPI document.
type Docs = fn(EndpointId) -> Option<&'static Doc>;

/// The OpenAPI declaration of an agents row: each file declares its own (the refusal rows
/// are documented from the table).
pub fn doc(id: EndpointId) -> Option<&'static Doc> {
    let files: [Docs; 9] = [
        sessions::doc,
        stream::doc,
        lists::doc,
        definitions::doc,
        responses::doc,
        responses_ws::doc,
        vaults::doc,
        environments::doc,
        webhooks::doc,
    ];
    files.iter().find_map(|doc| doc(id))
}

/// A request header's value, trimmed; `None` when absent, empty or not text. Every agents
/// route reads `X-Svc-Adapter` and `Idempotency-Key` through this, so they agree.
pub(super) fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}
