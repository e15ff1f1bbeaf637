//! The dev_tools group (opt-in): snippets run in an interpreter (`code_run`, with
//! contexts that keep state), the languages there are (`code_languages`), and one HTTP
//! request to a URL under the operator's rules (`http_fetch`). One file per operation,
//! each declaring its [`Route`] with its documented example; `languages.rs` decides which
//! languages a caller may use and finds their interpreters, `output.rs` shapes bytes.

mod code_languages;
mod code_run;
mod http_fetch;
mod languages;

#[cfg(test)]
mod tests;

use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::Example;
use crate::server::openapi::op::Doc;
pub(crate) use crate::server::route::Route;
use axum::routing::{MethodFilter, MethodRouter};

pub use languages::offered;

const ROUTES: &[&Route] = &[&code_run::ROUTE, &code_languages::ROUTE, &http_fetch::ROUTE];

/// Binds the handler of a dev_tools row (the router asks each group).
pub fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    crate::server::route::bind(ROUTES, id, f)
}

/// The documented example of a dev_tools row.
pub fn example(id: EndpointId) -> Option<&'static Example> {
    crate::server::route::example(ROUTES, id)
}

/// Every operation's OpenAPI declaration, one per handler file.
const DOCS: &[&Doc] = &[&code_run::DOC, &code_languages::DOC, &http_fetch::DOC];

/// The OpenAPI declaration of a dev_tools row.
pub fn doc(id: EndpointId) -> Option<&'static Doc> {
    DOCS.iter().copied().find(|d| d.id == id)
}
