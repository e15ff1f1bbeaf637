//! The engine's OpenAPI 3.1 document (`svc openapi --engine`, `docs/engine-openapi.json`),
//! generated from the route table and what each handler file declares of its routes
//! (`handlers::Op`), so it cannot drift: one operation per row (operationId = route id,
//! tag = the feature it needs), the request, query, answer and event schemas of
//! [`crate::wire`] (JSON Schema 2020-12, as 3.1 reads it), and the error answers each route
//! can give, all in the engine body.

use super::handlers::{self, Op, Request, Schema};
use super::routes::{Answer, ROUTES, Route};
use crate::error::engine::Code;
use crate::wire::{ERROR_EVENT, Feature};
use schemars::SchemaGenerator;
use serde_json::{Map, Value, json};

/// A query type's fields as parameters: each field's schema, without the `null` an optional
/// field's schema allows (a query parameter is left out instead).
fn query_parameters(query: Schema, g: &mut SchemaGenerator) -> Vec<(String, bool, Value)> {
    let reference = query(g);
    let name = reference["$ref"]
        .as_str()
        .and_then(|r| r.rsplit('/').next())
        .unwrap_or_default()
        .to_owned();
    let Some(definition) = g.definitions().get(&name).cloned() else {
        return Vec::new();
    };
    let required: Vec<&str> = definition["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let Some(properties) = definition["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(field, schema)| {
            let needed = required.contains(&field.as_str());
            (field.clone(), needed, without_null(schema.clone()))
        })
        .collect()
}

fn without_null(mut schema: Value) -> Value {
    if schema.get("default") == Some(&Value::Null) {
        schema.as_object_mut().map(|o| o.remove("default"));
    }
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            schema["type"] = types[0].clone();
        }
    }
    if let Some(any_of) = schema.get("anyOf").and_then(Value::as_array) {
        let kept: Vec<Value> = any_of
            .iter()
            .filter(|s| s.get("type") != Some(&json!("null")))
            .cloned()
            .collect();
        if kept.len() == 1 {
            let mut only = kept[0].clone();
            if let (Some(only), Some(outer)) = (only.as_object_mut(), schema.as_object()) {
                for (key, value) in outer {
                    if key != "anyOf" {
                        only.entry(key.clone()).or_insert(value.clone());
                    }
                }
            }
            return only;
        }
    }
    schema
}

/// The error codes a route can answer: the door's and the body's for all, the sandbox's,
/// the feature gate's and the route's own.
fn codes(route: &Route, op: &Op) -> Vec<Code> {
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
    codes.extend(op.codes);
    codes
}

fn operation(route: &Route, g: &mut SchemaGenerator) -> Value {
    let Some(op) = handlers::op(route.id) else {
        return Value::Null;
    };
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
    for (name, required, schema) in op.query.map(|q| query_parameters(q, g)).unwrap_or_default() {
        parameters
            .push(json!({"name": name, "in": "query", "required": required, "schema": schema}));
    }
    let success = match route.answer {
        Answer::Json => {
            let answer = op.answer.map_or(Value::Null, |a| a(g));
            json!({"description": route.summary, "content": {"application/json": {"schema": answer}}})
        }
        Answer::Bytes => {
            json!({"description": route.summary, "content": {"application/octet-stream": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}})
        }
        Answer::Sse => {
            let mut events = op.events.map(|e| e(g)).unwrap_or_default();
            events.push((
                ERROR_EVENT,
                "The engine error body. It ends the stream, but for a `files/watch` directory that cannot be watched (the watch goes on).",
                json!({"$ref": "#/components/schemas/EngineError"}),
            ));
            let described: Vec<Value> = events
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
    let status = match (op.creates, route.answer) {
        (true, _) => "201",
        (_, Answer::WebSocket) => "101",
        _ => "200",
    };
    let mut responses = Map::new();
    responses.insert(status.into(), success);
    let mut by_status: std::collections::BTreeMap<u16, Vec<&str>> = Default::default();
    for code in codes(route, op) {
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
    let mut operation = json!({
        "operationId": route.id.as_str(),
        "summary": route.summary,
        "tags": [route.feature.map_or("engine", Feature::name)],
        "parameters": parameters,
        "responses": responses,
    });
    match op.request {
        Request::None => {}
        Request::Json(schema) => {
            operation["requestBody"] =
                json!({"required": false, "content": {"application/json": {"schema": schema(g)}}});
        }
        Request::Bytes => {
            operation["requestBody"] = json!({"required": true, "content": {"application/octet-stream": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}});
        }
    }
    operation
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
            assert_eq!(
                op["operationId"],
                route.id.as_str(),
                "{} {}",
                method,
                route.path
            );
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
