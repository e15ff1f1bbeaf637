//! The file_ops group: thin handlers over the file service (`services::files`), one file
//! per operation. Each file declares its [`Route`]: the row it serves, how it binds, and
//! its documented example (shown in `docs/endpoints.md` and run by `server::example_run`).
//! Errors of the service become rows of the server table in `errors.rs`; entry info is
//! rendered by `entry.rs` (shared with the watch stream).

mod delete;
mod download;
pub(crate) mod entry;
mod errors;
mod exists;
mod info;
mod list;
mod mkdir;
mod r#move;
mod read;
mod search;
mod upload;
mod watch;
mod write;

#[cfg(test)]
pub(crate) mod examples;

use crate::error::{ApiError, Code};
use crate::server::AppState;
pub(crate) use crate::server::route::Route;
use crate::services::files::{FileError, FileService};

/// Every route of the group, one per handler file.
pub(crate) const ROUTES: &[&Route] = &[
    &read::ROUTE,
    &write::ROUTE,
    &list::ROUTE,
    &info::ROUTE,
    &exists::ROUTE,
    &mkdir::ROUTE,
    &r#move::ROUTE,
    &delete::ROUTE,
    &upload::ROUTE,
    &download::ROUTE,
    &search::ROUTE,
    &watch::ROUTE,
];

/// The file service over the operator's path rules, relative paths taken from the server's
/// working directory (built once with the app state; a clone is a reference count).
pub(crate) fn service(app: &AppState) -> FileService {
    app.files.clone()
}

/// Runs a blocking file operation on the blocking pool (a panic in it is an I/O error).
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, FileError> + Send + 'static,
) -> Result<T, FileError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        // The panic's text goes to the log, never into an answer (it can quote the input).
        tracing::error!("a file operation stopped: {e}");
        Err(FileError::Io {
            path: Default::default(),
            source: std::io::Error::other(
                "the operation stopped on a bug; the server log has the details",
            ),
        })
    })
}

/// A path the route needs: its absence is `invalid_path` naming the parameter.
pub(crate) fn required(value: Option<String>, param: &str) -> Result<String, ApiError> {
    value.ok_or_else(|| {
        ApiError::new(Code::InvalidPath, format!("`{param}` is required: a path")).with_param(param)
    })
}
