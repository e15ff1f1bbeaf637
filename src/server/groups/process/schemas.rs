//! The shapes the process routes answer (`render.rs` writes them), named in the OpenAPI
//! document, and the `{pid}` of the path.

use crate::server::openapi::op::{Schema, SchemaGenerator, component, json_schema};

component!(pub(super) ProcessRecord, {
    "type": "object",
    "required": ["pid", "tag", "cmd", "args", "cwd", "status", "exit_code", "signal", "started_at", "ended_at"],
    "properties": {
        "pid": {"type": "integer", "minimum": 1},
        "tag": {"type": "string", "description": "The label given at start (empty when none)."},
        "cmd": {"type": "string"},
        "args": {"type": ["array", "null"], "items": {"type": "string"}, "description": "Null for a shell line."},
        "cwd": {"type": ["string", "null"]},
        "status": {"type": "string", "enum": ["running", "exited"]},
        "exit_code": {"type": ["integer", "null"]},
        "signal": {"type": ["integer", "null"], "description": "The signal that ended it."},
        "started_at": {"type": "string", "format": "date-time"},
        "ended_at": {"type": ["string", "null"], "format": "date-time"},
    },
});

component!(pub(super) ShellResult, {
    "type": "object",
    "required": ["stdout", "stderr", "exit_code", "duration_ms", "timed_out", "truncated"],
    "properties": {
        "stdout": {"type": "string"},
        "stdout_b64": {"type": "string", "contentEncoding": "base64", "description": "The exact bytes, when they are not UTF-8."},
        "stderr": {"type": "string"},
        "stderr_b64": {"type": "string", "contentEncoding": "base64", "description": "The exact bytes, when they are not UTF-8."},
        "exit_code": {"type": ["integer", "null"], "description": "Null when a signal or the timeout ended it."},
        "duration_ms": {"type": "integer", "minimum": 0},
        "timed_out": {"type": "boolean"},
        "truncated": {"type": "boolean", "description": "Output past `process.output_bytes` per stream was dropped."},
    },
    "additionalProperties": false,
});

/// `{pid}`: a positive integer (anything else is 400 naming `pid`).
pub(super) fn pid_path(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object", "properties": {"pid": {"type": "integer", "minimum": 1}}})
}
