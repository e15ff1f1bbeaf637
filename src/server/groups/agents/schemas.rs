//! What the agents group's documents share: the paged list of a typed answer. Every
//! request body and answer derives its schema from its resource's `wire.rs` (or the type
//! beside the code that builds it).
use crate::server::openapi::op::{Schema, SchemaGenerator};
use crate::server::openapi::shared::list_of;
// The deleted object is the domain's typed piece, shared by every resource.
pub(super) use crate::server::agents::wire::Deleted;

/// A paged list of `T`.
pub(super) fn list<T: crate::server::openapi::op::JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    let item = g.subschema_for::<T>();
    list_of(item)
}
