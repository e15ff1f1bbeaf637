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
pub(crate) mod examples;

pub(crate) use crate::server::route::Route;

pub use languages::offered;

pub(crate) const ROUTES: &[&Route] =
    &[&code_run::ROUTE, &code_languages::ROUTE, &http_fetch::ROUTE];
