//! What a handler file declares about itself (crates.io style: the handler owns its
//! metadata): how it binds, its OpenAPI declaration (whose id is the row it serves) and its
//! documented example. A group lists its routes once; `server::registry` answers the
//! router, the OpenAPI document and the docs from that list.

use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::Example;
use crate::server::openapi::op::Doc;
use axum::routing::{MethodFilter, MethodRouter};

pub struct Route {
    pub bind: fn(MethodFilter) -> MethodRouter<SharedState>,
    pub example: &'static Example,
    pub doc: &'static Doc,
}

impl Route {
    /// The row it serves.
    pub fn id(&self) -> EndpointId {
        self.doc.id
    }
}
