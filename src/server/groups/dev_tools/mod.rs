//! The dev_tools group (opt-in): snippets run in an interpreter (`code_run`, with
//! contexts that keep state), the languages there are (`code_languages`), and one HTTP
//! request to a URL under the operator's rules (`http_fetch`). One file per operation,
//! each declaring its [`Route`] with its documented example; `languages.rs` decides which
//! languages a caller may use and finds their interpreters, `output.rs` shapes bytes.

mod code_languages;
mod code_run;
mod http_fetch;
mod languages;
mod output;

#[cfg(test)]
mod tests;

use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::Example;
use axum::routing::{MethodFilter, MethodRouter};

pub use languages::offered;

/// What a handler file declares about itself.
pub(crate) struct Route {
    pub id: EndpointId,
    pub bind: fn(MethodFilter) -> MethodRouter<SharedState>,
    pub example: &'static Example,
}

const ROUTES: &[&Route] = &[&code_run::ROUTE, &code_languages::ROUTE, &http_fetch::ROUTE];

/// Binds the handler of a dev_tools row (the router asks each group).
pub fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    ROUTES.iter().find(|r| r.id == id).map(|r| (r.bind)(f))
}

/// The documented example of a dev_tools row.
pub fn example(id: EndpointId) -> Option<&'static Example> {
    ROUTES.iter().find(|r| r.id == id).map(|r| r.example)
}
