//! The answer objects of the agents resources still written as JSON by their domain
//! (sessions, turns, artifacts, responses, models, runtimes, files: each one's `to_json` or
//! `snapshot`), as the OpenAPI document names them. Every request body, and the answers of
//! the typed resources (vaults, webhook endpoints, definitions, environments), derive
//! their schemas from their `wire.rs` instead.
use crate::server::openapi::op::{Schema, SchemaGenerator, component};
use crate::server::openapi::shared::list_of;
// The deleted object is the domain's typed piece, shared by every resource.
pub(super) use crate::server::agents::wire::Deleted;

// The objects.

component!(pub(super) AgentSession, {
    "type": "object",
    "required": ["id", "object", "created_at", "status", "agent", "environment", "metadata"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "agent.session"},
        "created_at": {"type": "integer", "description": "Unix seconds."},
        "last_active_at": {"type": "integer", "description": "Unix seconds."},
        "status": {"type": "string"},
        "agent": {"type": "object"},
        "environment": {"type": "object"},
        "metadata": {"type": "object"},
        "usage": {"type": ["object", "null"]},
        "vault_ids": {"type": "array", "items": {"type": "string"}},
        "error": {},
        "required_actions": {"type": "array"},
        "x_svc": {"type": "object"},
    },
});

component!(pub(super) AgentTurn, {
    "type": "object",
    "required": ["id", "object", "session_id", "status"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "agent.session.turn"},
        "session_id": {"type": "string"},
        "agent_id": {"type": "string"},
        "status": {"type": "string"},
        "usage": {"type": ["object", "null"]},
        "error": {"type": ["object", "null"]},
    },
});

component!(pub(super) AgentArtifact, {
    "type": "object",
    "required": ["id", "object", "session_id", "path", "size_bytes"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "agent.session.artifact"},
        "session_id": {"type": "string"},
        "turn_id": {"type": ["string", "null"]},
        "environment_id": {"type": "string"},
        "path": {"type": "string"},
        "size_bytes": {"type": "integer", "minimum": 0},
        "created_at": {"type": "integer", "description": "Unix seconds."},
    },
});

component!(pub(super) ResponseObject, {
    "type": "object",
    "required": ["id", "object", "status"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "response"},
        "created_at": {"type": "integer", "description": "Unix seconds."},
        "status": {"type": "string", "enum": ["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]},
        "model": {"type": "string"},
        "output": {"type": "array"},
        "usage": {"type": ["object", "null"]},
        "error": {"type": ["object", "null"]},
    },
});

component!(pub(super) Model, {
    "type": "object",
    "required": ["id", "object", "created", "owned_by"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "model"},
        "created": {"type": "integer", "description": "Unix seconds."},
        "owned_by": {"type": "string"},
        "x_svc": {"type": "object"},
    },
});

component!(pub(super) AgentRuntime, {
    "type": "object",
    "required": ["id", "object", "implemented", "installed", "default"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "object": {"const": "agent.runtime"},
        "implemented": {"type": "boolean"},
        "installed": {"type": "boolean"},
        "default": {"type": "boolean"},
        "aliases": {"type": "array", "items": {"type": "string"}},
        "binary": {"type": "string"},
        "path": {"type": ["string", "null"]},
    },
});

component!(pub(super) FileObject, {
    "type": "object",
    "required": ["id", "object", "bytes", "created_at", "filename", "purpose"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "file"},
        "bytes": {"type": "integer", "minimum": 0},
        "created_at": {"type": "integer", "description": "Unix seconds."},
        "filename": {"type": "string"},
        "purpose": {"const": "user_data"},
        "status": {"type": "string"},
    },
});

/// A paged list of `T`.
pub(super) fn list<T: crate::server::openapi::op::JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    let item = g.subschema_for::<T>();
    list_of(item)
}
