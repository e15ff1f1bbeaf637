//! The process group (being built: issue 12).

use crate::server::SharedState;
use crate::server::docs::Example;
use crate::server::endpoints::EndpointId;
use axum::routing::{MethodFilter, MethodRouter};

/// Binds the handler of a process row (the router asks each group).
pub fn handler(_id: EndpointId, _f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    None
}

/// The documented example of a process row.
pub fn example(_id: EndpointId) -> Option<&'static Example> {
    None
}
