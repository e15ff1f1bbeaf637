//! The process group: shells run to completion or streamed, and processes that outlive a
//! request, on the one supervisor (`services::supervisor`). One file per operation, each
//! declaring its [`Route`] with its documented example; `command.rs` reads and guards the
//! command body every starting route shares, `render.rs` shapes records and output.

mod command;
mod errors;
mod get;
mod kill;
mod list;
mod render;
mod schemas;
mod shell;
mod shell_stream;
mod signal;
mod start;
mod stdin;

#[cfg(test)]
pub(crate) mod examples;

use crate::error::{ApiError, Code};
pub(crate) use crate::server::route::Route;

pub(crate) const ROUTES: &[&Route] = &[
    &shell::ROUTE,
    &shell_stream::ROUTE,
    &start::ROUTE,
    &list::ROUTE,
    &get::ROUTE,
    &signal::ROUTE,
    &stdin::ROUTE,
    &kill::ROUTE,
];

/// The pid of the path: a positive number, else 400 naming `pid` (a pid of no process of
/// the caller's is 404, see `errors.rs`).
pub(crate) fn pid_of(raw: &str) -> Result<u32, ApiError> {
    raw.parse::<u32>()
        .ok()
        .filter(|pid| *pid > 0)
        .ok_or_else(|| {
            ApiError::new(
                Code::InvalidRequest,
                format!("`{raw}` is not a process id (a positive integer)"),
            )
            .with_param("pid")
        })
}

/// The supervisor's error about process `pid`, with a message that names it.
pub(crate) fn about(pid: u32) -> impl Fn(crate::services::supervisor::Error) -> ApiError {
    move |e| match e {
        crate::services::supervisor::Error::NotFound => ApiError::new(
            Code::NotFound,
            format!("no process {pid} was started by this caller (GET /processes lists them)"),
        )
        .with_param("pid"),
        other => {
            let message = format!("process {pid}: {other}");
            let error = ApiError::from(other);
            ApiError { message, ..error }
        }
    }
}
