//! The terminal record as `render.rs` writes it, named in the OpenAPI document.

use crate::server::openapi::op::component;

component!(pub(super) TerminalRecord, {
    "type": "object",
    "required": ["id", "pid", "cols", "rows", "shell", "cwd", "created_at", "clients"],
    "properties": {
        "id": {"type": "string"},
        "pid": {"type": "integer", "minimum": 1},
        "cols": {"type": "integer", "minimum": 1, "maximum": 1000},
        "rows": {"type": "integer", "minimum": 1, "maximum": 1000},
        "shell": {"type": "string"},
        "cwd": {"type": ["string", "null"], "description": "Null only when the shell inherited the server's."},
        "created_at": {"type": "string", "format": "date-time"},
        "clients": {"type": "integer", "minimum": 0, "description": "WebSocket clients attached now."},
    },
    "additionalProperties": false,
});
