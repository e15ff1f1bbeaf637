//! The terminal group: thin handlers over the terminal service (`services::pty`), one file
//! per operation, each declaring its [`Route`] with its documented example (shown in
//! `docs/endpoints.md` and run by this module's tests). `connect.rs` is the WebSocket on
//! the terminal port; `render.rs` shapes records; `errors.rs` maps the service's errors to
//! rows of the server table.

mod connect;
mod create;
mod errors;
mod get;
mod kill;
mod list;
mod render;
mod resize;
mod schemas;

#[cfg(test)]
mod tests;

use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::Example;
use crate::server::openapi::op::Doc;
pub(crate) use crate::server::route::Route;
use axum::routing::{MethodFilter, MethodRouter};

/// Every route of the group, one per handler file.
const ROUTES: &[&Route] = &[
    &create::ROUTE,
    &list::ROUTE,
    &get::ROUTE,
    &resize::ROUTE,
    &kill::ROUTE,
    &connect::ROUTE,
];

/// Binds the handler of a terminal row (the router asks each group).
pub fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    crate::server::route::bind(ROUTES, id, f)
}

/// The documented example of a terminal row.
pub fn example(id: EndpointId) -> Option<&'static Example> {
    crate::server::route::example(ROUTES, id)
}

/// Every operation's OpenAPI declaration, one per handler file.
const DOCS: &[&Doc] = &[
    &create::DOC,
    &list::DOC,
    &get::DOC,
    &resize::DOC,
    &kill::DOC,
    &connect::DOC,
];

/// The OpenAPI declaration of a terminal row.
pub fn doc(id: EndpointId) -> Option<&'static Doc> {
    DOCS.iter().copied().find(|d| d.id == id)
}
