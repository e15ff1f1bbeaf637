//! What a handler file declares about itself (crates.io style: the handler owns its
//! metadata): the row it serves, how it binds, its documented example. A group lists its
//! routes once and answers the router and the docs from that list.

use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::Example;
use axum::routing::{MethodFilter, MethodRouter};

pub struct Route {
    pub id: EndpointId,
    pub bind: fn(MethodFilter) -> MethodRouter<SharedState>,
    pub example: &'static Example,
}

/// The handler of row `id` among `routes`, bound with the row's method filter.
pub fn bind(
    routes: &[&Route],
    id: EndpointId,
    f: MethodFilter,
) -> Option<MethodRouter<SharedState>> {
    routes.iter().find(|r| r.id == id).map(|r| (r.bind)(f))
}

/// The documented example of row `id` among `routes`.
pub fn example(routes: &[&Route], id: EndpointId) -> Option<&'static Example> {
    routes.iter().find(|r| r.id == id).map(|r| r.example)
}
