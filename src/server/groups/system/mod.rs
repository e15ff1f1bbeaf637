//! The system group: what the machine is (`info`), how busy it is (`metrics`), how full a
//! disk is (`disk`), what listens (`ports`), and the environment children start from
//! (`env`, read and changed). One file per operation, each declaring its [`Route`] with
//! its documented example; the readings are the `services::system` service's.

mod disk;
mod env;
mod env_get;
mod env_set;
mod info;
mod metrics;
mod ports;

#[cfg(test)]
pub(crate) mod examples;

use crate::error::{ApiError, Code};
pub(crate) use crate::server::route::Route;

pub(crate) const ROUTES: &[&Route] = &[
    &info::ROUTE,
    &metrics::ROUTE,
    &disk::ROUTE,
    &ports::ROUTE,
    &env_get::ROUTE,
    &env_set::ROUTE,
];

/// The service's errors as rows of the table: a missing path is 404, an unreadable
/// `/proc` a 500 whose message says which file.
fn reading(e: crate::services::system::Error) -> ApiError {
    use crate::services::system::Error;
    match e {
        Error::NotFound(m) => ApiError::new(Code::NotFound, m).with_param("path"),
        Error::Unreadable(m) => ApiError::new(Code::Internal, m),
    }
}

/// Runs a reading of `/proc` off the async threads (a scan of every `/proc/<pid>/fd` can
/// take a while on a busy machine).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::services::system::Error> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| {
            // The panic's text goes to the log, never into an answer.
            tracing::error!("a reading stopped: {e}");
            ApiError::new(
                Code::Internal,
                "the reading stopped on a bug; the server log has the details",
            )
        })?
        .map_err(reading)
}
