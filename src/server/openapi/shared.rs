//! Schemas several groups' declarations share: the agents group's paging query and list
//! envelope (`services::paging`), and a few small shapes. A leaf like `op.rs`.

use super::op::{Schema, SchemaGenerator, json_schema};
use serde_json::json;

/// `?limit=&order=&after=` of every agents list (agents spec 2.3).
pub fn page_query(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "Items per page."},
            "order": {"type": "string", "enum": ["asc", "desc"], "default": "desc", "description": "By creation: `desc` (newest first) or `asc`."},
            "after": {"type": "string", "description": "The id to continue after (the previous page's `last_id`); an id not in the list is 404 `agents.cursor_not_found`."},
        },
    })
}

/// The list envelope around `item`: `{object: "list", data, first_id, last_id, has_more}`.
pub fn list_of(item: Schema) -> Schema {
    json_schema!({
        "type": "object",
        "required": ["object", "data", "first_id", "last_id", "has_more"],
        "properties": {
            "object": {"const": "list"},
            "data": {"type": "array", "items": item},
            "first_id": {"type": ["string", "null"]},
            "last_id": {"type": ["string", "null"]},
            "has_more": {"type": "boolean"},
        },
    })
}

/// Any JSON object (a shape the route passes through as it was given).
pub fn object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object"})
}

/// An empty JSON object.
pub fn empty(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object", "maxProperties": 0})
}

/// An RFC 3339 timestamp.
pub fn timestamp() -> serde_json::Value {
    json!({"type": "string", "format": "date-time"})
}
