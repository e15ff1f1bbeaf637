//! The engine's OpenAPI 3.1 document (`svc openapi --engine`, `docs/engine-openapi.json`),
//! generated from the route table and the wire types so it cannot drift: one operation per
//! row (operationId = route id, tag = the feature it needs), the request and answer schemas
//! of `wire.rs` (JSON Schema 2020-12, as 3.1 reads it), and the error answers each route can
//! give, all in the engine body.

use super::routes::{Answer, ROUTES, Route};
use super::wire::Feature;
use crate::error::engine::Code;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// Adds `T`'s schema to the components and answers a `$ref` to it.
fn component<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    serde_json::to_value(generator.subschema_for::<T>()).unwrap_or(Value::Null)
}

fn object(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

/// The request body and the success answer of a route.
fn bodies(route: &Route, g: &mut SchemaGenerator) -> (Option<Value>, Value) {
    use super::provider::ProcessInfo;
    use super::wire::*;
    let entry = json!({"$ref": "#/components/schemas/EntryInfo"});
    let output = object(json!({
        "stdout": {"type": "string"}, "stderr": {"type": "string"},
        "stdout_b64": {"type": "string", "description": "present when stdout is not UTF-8"},
        "stderr_b64": {"type": "string", "description": "present when stderr is not UTF-8"},
        "exit_code": {"type": ["integer", "null"]}, "timed_out": {"type": "boolean"},
    }));
    match route.id {
        "health" => (None, component::<Health>(g)),
        "shutdown" => (
            None,
            object(json!({"stopping": {"const": true}, "pid": {"type": "integer"}})),
        ),
        "providers_list" => (
            None,
            object(
                json!({"providers": {"type": "array", "items": component::<ProviderRecord>(g)}}),
            ),
        ),
        "sandboxes_create" => (
            Some(component::<CreateSandbox>(g)),
            component::<SandboxRecord>(g),
        ),
        "sandboxes_list" => (None, component::<SandboxList>(g)),
        "sandboxes_connect" | "sandboxes_pause" | "sandboxes_resume" => {
            (Some(object(json!({}))), component::<SandboxRecord>(g))
        }
        "sandboxes_info" | "sandboxes_kill" => (None, component::<SandboxRecord>(g)),
        "sandboxes_running" => (None, component::<Running>(g)),
        "sandboxes_timeout" => (
            Some(component::<SetTimeout>(g)),
            component::<SandboxRecord>(g),
        ),
        "sandboxes_port_url" => (None, component::<PortUrl>(g)),
        "commands_run" => {
            let mut answer = output;
            answer["properties"]["pid"] = json!({"type": "integer"});
            (Some(component::<CommandBody>(g)), answer)
        }
        "commands_stream" => (Some(component::<CommandBody>(g)), Value::Null),
        "processes_list" => (
            None,
            object(json!({"processes": {"type": "array", "items": component::<ProcessInfo>(g)}})),
        ),
        "processes_signal" => (
            Some(component::<SignalBody>(g)),
            object(json!({"pid": {"type": "integer"}, "signal": {"enum": [15, 9]}})),
        ),
        "processes_stdin" => (
            Some(component::<StdinBody>(g)),
            object(
                json!({"pid": {"type": "integer"}, "written": {"type": "integer"}, "closed": {"type": "boolean"}}),
            ),
        ),
        "processes_kill" => (
            None,
            object(json!({"pid": {"type": "integer"}, "killed": {"const": true}})),
        ),
        "files_read" => (None, Value::Null),
        "files_write" => (
            Some(json!({"type": "string", "contentMediaType": "application/octet-stream"})),
            entry,
        ),
        "files_list" => (
            None,
            object(json!({"entries": {"type": "array", "items": entry}})),
        ),
        "files_info" => (None, entry),
        "files_exists" => (None, object(json!({"exists": {"type": "boolean"}}))),
        "files_mkdir" => (Some(component::<MkdirBody>(g)), entry),
        "files_move" => (Some(component::<MoveBody>(g)), entry),
        "files_remove" => (
            None,
            object(json!({"path": {"type": "string"}, "deleted": {"const": true}})),
        ),
        "files_watch" => (None, Value::Null),
        "code_run" => {
            let mut answer = output;
            answer["properties"]["duration_ms"] = json!({"type": "integer"});
            (Some(component::<CodeRunBody>(g)), answer)
        }
        "code_contexts_create" => (
            Some(component::<CreateContext>(g)),
            component::<ContextRecord>(g),
        ),
        "code_contexts_list" => (None, component::<ContextList>(g)),
        "code_contexts_restart" => (Some(object(json!({}))), component::<ContextRecord>(g)),
        "code_contexts_delete" => (
            None,
            object(json!({"context_id": {"type": "string"}, "deleted": {"const": true}})),
        ),
        _ => (None, Value::Null),
    }
}

/// The events of a streamed route: name, what it means, the schema of its data.
fn events(route: &Route) -> Vec<(&'static str, &'static str, Value)> {
    let error = json!({"$ref": "#/components/schemas/EngineError"});
    let kind = json!({"type": "string", "enum": ["file", "dir", "symlink", "other"]});
    let change = json!({
        "type": "object", "required": ["path", "type"],
        "properties": {
            "path": {"type": "string"},
            "from": {"type": "string", "description": "`rename` only: the old name"},
            "type": kind,
            "entry": {"$ref": "#/components/schemas/EntryInfo"},
        },
    });
    let output = json!({
        "type": "object", "required": ["data"],
        "properties": {
            "data": {"type": "string", "description": "the bytes, as UTF-8 (lossy when they are not)"},
            "data_b64": {"type": "string", "contentEncoding": "base64", "description": "the bytes, when they are not UTF-8"},
        },
    });
    if route.id == "commands_stream" {
        vec![
            (
                "start",
                "The command started.",
                json!({"type": "object", "required": ["pid"], "properties": {"pid": {"type": "integer"}}}),
            ),
            ("stdout", "Output, in order.", output.clone()),
            ("stderr", "Output, in order.", output),
            (
                "exit",
                "How it ended.",
                json!({
                    "type": "object", "required": ["exit_code", "timed_out"],
                    "properties": {"exit_code": {"type": ["integer", "null"]}, "timed_out": {"type": "boolean"}},
                }),
            ),
            (
                "end",
                "The last event.",
                json!({"type": "object", "maxProperties": 0}),
            ),
            ("error", "The engine error body; nothing follows it.", error),
        ]
    } else {
        vec![
            ("create", "A path was created.", change.clone()),
            ("modify", "A file was written.", change.clone()),
            (
                "delete",
                "A path was removed.",
                json!({
                    "type": "object", "required": ["path", "type"],
                    "properties": {"path": {"type": "string"}, "type": kind},
                }),
            ),
            (
                "rename",
                "A path was renamed: `path` the new name, `from` the old.",
                change,
            ),
            (
                "overflow",
                "Events were lost; list the path again.",
                json!({
                    "type": "object", "required": ["path", "message"],
                    "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
                }),
            ),
            (
                "error",
                "The engine error body: a directory that cannot be watched (the stream goes on), else the end of the watch.",
                error,
            ),
        ]
    }
}

/// The query parameters of a route and their schemas (the limits the handlers check).
fn query(route: &Route) -> Vec<(&'static str, Value)> {
    let string = || json!({"type": "string"});
    let boolean = || json!({"type": "boolean"});
    let size = || json!({"type": "integer", "minimum": 1, "maximum": 1000});
    match route.id {
        "sandboxes_list" => vec![
            (
                "status",
                json!({"$ref": "#/components/schemas/SandboxStatus"}),
            ),
            (
                "limit",
                json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),
            ),
            ("offset", json!({"type": "integer", "minimum": 0})),
        ],
        "files_read" | "files_info" | "files_exists" => vec![("path", string())],
        "files_list" => vec![
            ("path", string()),
            (
                "depth",
                json!({"type": "integer", "minimum": 1, "maximum": 10, "default": 1}),
            ),
        ],
        "files_remove" | "files_watch" => vec![("path", string()), ("recursive", boolean())],
        "files_write" => vec![
            ("path", string()),
            ("overwrite", boolean()),
            ("parents", boolean()),
        ],
        "terminal" => vec![("cols", size()), ("rows", size()), ("shell", string())],
        _ => vec![],
    }
}

/// The error codes a route can answer: the door's and the body's for all, the sandbox's,
/// the feature gate's and the route's own.
fn codes(route: &Route) -> Vec<Code> {
    let mut codes = vec![
        Code::Unauthorized,
        Code::Forbidden,
        Code::InvalidArgument,
        Code::Internal,
    ];
    if route.feature.is_some() {
        codes.extend([
            Code::Configuration,
            Code::FeatureNotSupported,
            Code::ProviderAuth,
            Code::ProviderFailed,
            Code::ProviderTimeout,
        ]);
    }
    if route.path.contains("{id}") {
        codes.push(Code::SandboxNotFound);
        if !matches!(
            route.feature,
            Some(Feature::Sandboxes | Feature::Timeout | Feature::Pause | Feature::Ports)
        ) && route.feature != Some(Feature::Files)
        {
            codes.push(Code::SandboxNotRunning);
        }
    }
    match route.feature {
        Some(Feature::Files | Feature::Watch) => codes.extend([
            Code::FileNotFound,
            Code::FileExists,
            Code::PathNotAllowed,
            Code::WrongFileType,
        ]),
        Some(Feature::Processes) => codes.extend([Code::ProcessNotFound, Code::ProcessExited]),
        Some(Feature::CodeContexts) | Some(Feature::Code) => codes.push(Code::ContextNotFound),
        _ => {}
    }
    if route.id == "sandboxes_create" {
        codes.push(Code::TemplateNotFound);
    }
    codes
}

fn operation(route: &Route, g: &mut SchemaGenerator) -> Value {
    let (request, answer) = bodies(route, g);
    let mut parameters = vec![json!({
        "name": "X-Svc-Connection", "in": "header", "required": false,
        "description": "the connection: unpadded base64url of its JSON (or its fields in a POST body)",
        "schema": {"type": "string"},
    })];
    for name in ["id", "pid", "port", "context_id"] {
        if route.path.contains(&format!("{{{name}}}")) {
            let schema = match name {
                "pid" => json!({"type": "integer", "minimum": 0, "maximum": u32::MAX}),
                "port" => json!({"type": "integer", "minimum": 1, "maximum": 65535}),
                _ => json!({"type": "string"}),
            };
            parameters
                .push(json!({"name": name, "in": "path", "required": true, "schema": schema}));
        }
    }
    for (name, schema) in query(route) {
        parameters.push(
            json!({"name": name, "in": "query", "required": name == "path", "schema": schema}),
        );
    }
    let success = match route.answer {
        Answer::Json => {
            json!({"description": route.summary, "content": {"application/json": {"schema": answer}}})
        }
        Answer::Bytes => {
            json!({"description": route.summary, "content": {"application/octet-stream": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}})
        }
        Answer::Sse => {
            let described: Vec<Value> = events(route)
                .into_iter()
                .map(|(event, description, data)| json!({"event": event, "description": description, "data": data}))
                .collect();
            json!({
                "description": format!("{}: server-sent events; an `error` event carries the engine error body and ends the stream", route.summary),
                "content": {"text/event-stream": crate::sse_schema::event_stream(described)},
            })
        }
        Answer::WebSocket => {
            json!({"description": "WebSocket: binary frames carry bytes both ways; the one text frame is {\"type\":\"resize\",\"cols\":C,\"rows\":R}; closes 1000 when the shell exits, 1003 for another text frame, 1007 for a bad size"})
        }
    };
    let status = match (route.id, route.answer) {
        ("sandboxes_create" | "code_contexts_create", _) => "201",
        (_, Answer::WebSocket) => "101",
        _ => "200",
    };
    let mut responses = Map::new();
    responses.insert(status.into(), success);
    let mut by_status: std::collections::BTreeMap<u16, Vec<&str>> = Default::default();
    for code in codes(route) {
        by_status
            .entry(code.status().as_u16())
            .or_default()
            .push(code.as_str());
    }
    for (status, codes) in by_status {
        responses.insert(status.to_string(), json!({
            "description": format!("codes {}", codes.join(", ")),
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EngineError"}}},
            "x-codes": codes,
        }));
    }
    let mut op = json!({
        "operationId": route.id,
        "summary": route.summary,
        "tags": [route.feature.map_or("engine", Feature::name)],
        "parameters": parameters,
        "responses": responses,
    });
    if let Some(request) = request {
        let media = if route.id == "files_write" {
            "application/octet-stream"
        } else {
            "application/json"
        };
        op["requestBody"] =
            json!({"required": route.id == "files_write", "content": {media: {"schema": request}}});
    }
    op
}

/// The whole document.
pub fn document() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let mut paths = Map::new();
    for route in ROUTES {
        let op = operation(route, &mut generator);
        let method = route.method.as_str().to_ascii_lowercase();
        let item = paths
            .entry(route.path.to_owned())
            .or_insert_with(|| json!({}));
        item[method.as_str()] = op;
    }
    let mut schemas = serde_json::to_value(generator.take_definitions(true)).unwrap_or_default();
    schemas["EntryInfo"] = object(json!({
        "name": {"type": "string"}, "path": {"type": "string"},
        "type": {"enum": ["file", "dir", "symlink", "other"]}, "size": {"type": "integer"},
        "mode": {"type": "string", "description": "octal, e.g. \"0644\""},
        "modified_at": {"type": "string", "format": "date-time"},
        "symlink_target": {"type": "string", "description": "only for links"},
    }));
    let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    schemas["EngineError"] = json!({
        "type": "object", "required": ["error"],
        "properties": {"error": {
            "type": "object", "required": ["type", "code", "message", "suggestion", "docs_url"],
            "properties": {
                "type": {"type": "string", "description": "the client exception class"},
                "code": {"enum": codes}, "message": {"type": "string"},
                "suggestion": {"type": "string"}, "docs_url": {"type": "string"},
            },
        }},
    });
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "svc local engine",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The local engine, protocol svc-engine/1 (docs/engine.md). Loopback only; every request needs the descriptor's token; requests with an Origin or a non-loopback Host are refused.",
        },
        "servers": [{"url": "http://127.0.0.1:{port}/v1", "variables": {"port": {"default": "0", "description": "the descriptor's port"}}}],
        "security": [{"token": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer", "description": "the `token` of <state_dir>/engine.json"}},
        },
    })
}

pub fn document_json() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    out.push(r.clone());
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn one_operation_per_route_and_every_ref_resolves() {
        let doc = document();
        let mut ids = Vec::new();
        for route in ROUTES {
            let method = route.method.as_str().to_ascii_lowercase();
            let op = &doc["paths"][route.path][&method];
            assert_eq!(op["operationId"], route.id, "{} {}", method, route.path);
            ids.push(route.id);
            assert!(
                op["responses"]["401"]["x-codes"]
                    .to_string()
                    .contains("E1001")
            );
        }
        let mut found = Vec::new();
        for item in doc["paths"].as_object().unwrap().values() {
            for op in item.as_object().unwrap().values() {
                found.push(op["operationId"].as_str().unwrap().to_owned());
            }
        }
        assert_eq!(found.len(), ROUTES.len());
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(!all.is_empty());
        for r in all {
            let pointer = r.trim_start_matches('#');
            assert!(doc.pointer(pointer).is_some(), "unresolved {r}");
        }
    }

    /// A streamed route's schema is that of one event (`event` and `data`), as schemathesis
    /// and the server's document read it; `x-events` names the same events, each with the
    /// schema of its data (the fuzz run found `{"type": "string"}` here).
    #[test]
    fn a_stream_is_described_event_by_event() {
        let doc = document();
        for route in ROUTES.iter().filter(|r| r.answer == Answer::Sse) {
            let method = route.method.as_str().to_ascii_lowercase();
            let content = &doc["paths"][route.path][&method]["responses"]["200"]["content"]["text/event-stream"];
            let schema = &content["schema"];
            assert_eq!(schema["type"], "object", "{}", route.id);
            assert_eq!(schema["required"], json!(["event", "data"]), "{}", route.id);
            let names = schema["properties"]["event"]["enum"].as_array().unwrap();
            let described: Vec<&Value> = content["x-events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| &e["event"])
                .collect();
            assert_eq!(names.iter().collect::<Vec<_>>(), described, "{}", route.id);
            assert!(names.contains(&json!("error")), "{}", route.id);
            for event in content["x-events"].as_array().unwrap() {
                assert!(event["data"].is_object(), "{} {}", route.id, event["event"]);
            }
        }
    }
}
