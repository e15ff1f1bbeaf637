//! What a handler file declares about itself (crates.io style: the handler owns its
//! metadata): how it binds, its OpenAPI declaration (whose id is the row it serves) and its
//! documented example. A group lists its routes once; `server::registry` answers the
//! router, the OpenAPI document and the docs from that list.

use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::Example;
use crate::server::openapi::op::Doc;
use crate::server::pipeline::Admit;
use axum::handler::Handler;
use axum::routing::{MethodFilter, MethodRouter};

pub struct Route {
    pub bind: fn(MethodFilter) -> Bound,
    pub example: &'static Example,
    pub doc: &'static Doc,
}

impl Route {
    /// The row it serves.
    pub fn id(&self) -> EndpointId {
        self.doc.id
    }
}

/// A row's handler bound to its method, waiting for its admission pipeline, which the
/// router puts around the handler itself ([`Bound::admitted`]).
///
/// Why not `MethodRouter::layer`: it wraps the method router's already boxed route in a
/// second boxed route, and axum clones a route's box and boxes its future on every call,
/// so each request paid two more allocations and two more dynamic calls than a handler
/// that carries its layer.
pub struct Bound(Box<dyn FnOnce(Admit) -> MethodRouter<SharedState> + Send>);

/// `axum::routing::on` for a row's handler: the same binding, admitted later.
pub fn on<H, T>(filter: MethodFilter, handler: H) -> Bound
where
    H: Handler<T, SharedState>,
    T: 'static,
{
    Bound(Box::new(move |admit| {
        axum::routing::on(filter, handler.layer(admit))
    }))
}

impl Bound {
    /// The handler behind `admit`, as the router serves it.
    pub fn admitted(self, admit: Admit) -> MethodRouter<SharedState> {
        (self.0)(admit)
    }
}
