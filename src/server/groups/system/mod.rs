//! The system group (being built: issue 13).

use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::Example;
use axum::routing::{MethodFilter, MethodRouter};

/// Binds the handler of a system row (the router asks each group).
pub fn handler(_id: EndpointId, _f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    None
}

/// The documented example of a system row.
pub fn example(_id: EndpointId) -> Option<&'static Example> {
    None
}
