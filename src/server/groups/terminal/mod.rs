//! The terminal group: thin handlers over the terminal service (`services::pty`), one file
//! per operation, each declaring its [`Route`] with its documented example (shown in
//! `docs/endpoints.md` and run by `server::example_run`). `connect.rs` is the WebSocket on
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
pub(crate) mod examples;

pub(crate) use crate::server::route::Route;

/// Every route of the group, one per handler file.
pub(crate) const ROUTES: &[&Route] = &[
    &create::ROUTE,
    &list::ROUTE,
    &get::ROUTE,
    &resize::ROUTE,
    &kill::ROUTE,
    &connect::ROUTE,
];
