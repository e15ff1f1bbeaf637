use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::capabilities::{self, CheckRequest};
use crate::server::endpoints::EndpointId;
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Doc, json_schema};
use crate::server::route::{Bound, on};
use axum::Extension;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::MethodFilter;
use serde_json::Value;

/// The health answer, serialized straight from its fields: the most called route builds
/// no JSON value on the way.
#[derive(serde::Serialize)]
pub struct Health {
    status: &'static str,
    version: &'static str,
    uptime_s: u64,
}

pub async fn health(State(app): State<SharedState>) -> axum::Json<Health> {
    axum::Json(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
        uptime_s: app.started.elapsed().as_secs(),
    })
}

pub async fn capabilities(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
) -> impl IntoResponse {
    let doc = app.capabilities.get_or_build(&app, &identity);
    ([(http::header::CONTENT_TYPE, "application/json")], doc)
}

pub async fn check(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Json(request): Json<CheckRequest>,
) -> ApiResult<axum::Json<Value>> {
    capabilities::check(&app, &identity, &request).map(axum::Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    use EndpointId::*;
    Some(match id {
        Health => on(f, health),
        Capabilities => on(f, capabilities),
        CapabilitiesCheck => on(f, check),
        _ => return None,
    })
}

/// The OpenAPI declarations of the core rows (this file's handlers).
pub fn doc(id: EndpointId) -> Option<&'static Doc> {
    [&HEALTH, &CAPABILITIES, &CHECK]
        .into_iter()
        .find(|d| d.id == id)
}

const HEALTH: Doc = Doc::new(EndpointId::Health, "Health")
    .describe("Answered to anyone, without a token (orchestrators' health checks).")
    .answers(&[Answer::json("The server is up.", |_| {
        json_schema!({
            "type": "object",
            "required": ["status", "version", "uptime_s"],
            "properties": {
                "status": {"const": "ok"},
                "version": {"type": "string"},
                "uptime_s": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": false,
        })
    })])
    // Past the connection cap, any route answers this before it is reached.
    .errors(&[&[crate::error::Code::TooManyConnections]]);

const CAPABILITIES: Doc = Doc::new(EndpointId::Capabilities, "What the caller may do")
    .describe("Every endpoint of the table with whether it is on and whether this caller may call it (and why not), its limits, the path rules of the routes that take paths, and each group's summary.")
    .answers(&[Answer::json("The capabilities document of the caller.", |_| {
        json_schema!({
            "type": "object",
            "required": ["api_version", "server_version", "identity_id", "scopes", "groups", "group_summary", "endpoints"],
            "properties": {
                "api_version": {"type": "string"},
                "server_version": {"type": "string"},
                "revision": {"type": "string"},
                "configured": {"type": "boolean"},
                "identity_id": {"type": "string"},
                "scopes": {"type": "array", "items": {"type": "string"}},
                "preset": {"type": ["string", "null"]},
                "warnings": {"type": "array", "items": {"type": "string"}},
                "groups": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "terminal_port": {"type": ["integer", "null"], "minimum": 1, "maximum": 65535, "description": "The port the terminal WebSocket listens on (endpoints with `port: terminal`), as bound: the number `--terminal-port 0` picked; null when the server has no terminal listener."},
                "group_summary": {"type": "object", "additionalProperties": {
                    "type": "object",
                    "required": ["enabled", "total"],
                    "properties": {"enabled": {"type": "integer"}, "total": {"type": "integer"}},
                }},
                "endpoints": {"type": "object", "description": "By endpoint id.", "additionalProperties": {
                    "type": "object",
                    "required": ["method", "path", "group", "enabled", "allowed", "scopes", "transport", "port", "status"],
                    "properties": {
                        "method": {"type": "string", "enum": ["GET", "POST", "PUT", "DELETE"]},
                        "path": {"type": "string"},
                        "group": {"type": "string"},
                        "enabled": {"type": "boolean"},
                        "allowed": {"type": "boolean"},
                        "reason": {"type": ["string", "null"], "enum": ["endpoint_disabled", "missing_scope", null]},
                        "rule": {"type": ["string", "null"]},
                        "scopes": {"type": "array", "items": {"type": "string"}},
                        "limits": {"type": "object"},
                        "paths": {"type": ["object", "null"]},
                        "params": {"type": "object"},
                        "transport": {"type": "string", "enum": ["http", "sse", "websocket"]},
                        "port": {"type": "string", "enum": ["main", "terminal"]},
                        "status": {"type": "string", "enum": ["implemented", "refusal", "pending"]},
                    },
                }},
            },
        })
    })]);

const CHECK: Doc = Doc::new(EndpointId::CapabilitiesCheck, "Would a call be allowed")
    .describe("Answers whether this caller may call `endpoint` (and, for a route that takes paths, on `path` with `op`) without calling it; an unknown endpoint is `allowed: false`, `reason: unknown_endpoint`.")
    .json(|_| {
        json_schema!({
            "type": "object",
            "required": ["endpoint"],
            "properties": {
                "endpoint": {"type": "string", "description": "An endpoint id."},
                "path": {"type": ["string", "null"], "description": "Only for a route that takes paths."},
                "op": {"type": ["string", "null"], "enum": ["read", "list", "write", "delete", "exec", null], "description": "What is done at `path` (default: by the endpoint's access)."},
            },
            "additionalProperties": false,
        })
    })
    .answers(&[Answer::json("The verdict.", |_| {
        json_schema!({
            "type": "object",
            "required": ["endpoint", "allowed", "reason", "rule", "status"],
            "properties": {
                "endpoint": {"type": "string"},
                "allowed": {"type": "boolean"},
                "reason": {
                    "type": ["string", "null"],
                    "enum": ["unknown_endpoint", "endpoint_disabled", "missing_scope", "path_not_allowed", "path_denied", "read_only", "symlink_denied", "invalid_path", null],
                    "description": "Why not: the table's code the call would be refused with (the path guard's for a path).",
                },
                "rule": {"type": ["string", "null"]},
                "status": {"type": ["integer", "null"], "description": "The status the call would be refused with."},
                "implemented": {"type": "boolean"},
                "scope": {"type": "string", "description": "The scope the caller lacks."},
                "op": {"type": "string"},
                "path": {"type": "string", "description": "The path as resolved."},
                "exists": {"type": "boolean"},
                "message": {"type": "string"},
            },
        })
    })]);
