//! One operation object: the row's method, path, group and scopes, the declaration's
//! parameters, body and answers, and the route's errors.

use super::errors;
use super::op::{Body, Content, Doc, SchemaFn};
use crate::server::endpoints::{Auth, Endpoint, Port, Status, Transport};
use schemars::SchemaGenerator;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The operation of `endpoint`; its error responses are registered in `shared`.
pub fn build(
    endpoint: &Endpoint,
    doc: Option<&Doc>,
    g: &mut SchemaGenerator,
    shared: &mut Map<String, Value>,
) -> Value {
    let mut op = Map::new();
    op.insert("operationId".into(), json!(endpoint.id));
    op.insert("tags".into(), json!([endpoint.group.name()]));
    let (summary, description) = match (doc, endpoint.status) {
        (_, Status::Refusal(why)) => (
            "Refused: the hosted platform's route".to_owned(),
            format!("Answers 404 `agents.not_implemented_locally`: {why}."),
        ),
        (Some(doc), _) => (doc.summary.to_owned(), doc.description.to_owned()),
        (None, _) => (endpoint.id.to_owned(), String::new()),
    };
    op.insert("summary".into(), json!(summary));
    if !description.is_empty() {
        op.insert("description".into(), json!(description));
    }
    if endpoint.auth == Auth::Public {
        op.insert("security".into(), json!([]));
    }
    if endpoint.port == Port::Terminal {
        op.insert(
            "servers".into(),
            json!([{"url": "http://localhost:9001", "description": "The terminal port (`svc serve --terminal-port`)."}]),
        );
    }
    let parameters = parameters(endpoint, doc, g);
    if !parameters.is_empty() {
        op.insert("parameters".into(), Value::Array(parameters));
    }
    if let Some(body) = doc.and_then(|d| request_body(d.body, g)) {
        op.insert("requestBody".into(), body);
    }
    op.insert("responses".into(), responses(endpoint, doc, g, shared));
    op.insert("x-svc-scopes".into(), json!(endpoint.scopes));
    op.insert("x-svc-access".into(), json!(endpoint.access));
    op.insert("x-svc-transport".into(), json!(endpoint.transport));
    op.insert(
        "x-svc-default".into(),
        json!(if endpoint.default_enabled() {
            "on"
        } else {
            "opt-in"
        }),
    );
    Value::Object(op)
}

/// The `{name}`s of an axum path, which OpenAPI writes the same way.
pub fn path_names(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

/// An object schema's properties and required names, its `$ref` followed.
fn properties(schema: SchemaFn, g: &mut SchemaGenerator) -> (Map<String, Value>, Vec<String>) {
    properties_of(schema(g).to_value(), g)
}

fn properties_of(mut value: Value, g: &SchemaGenerator) -> (Map<String, Value>, Vec<String>) {
    if let Some(name) = value
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
    {
        value = g.definitions().get(name).cloned().unwrap_or_default();
    }
    let props = value
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required = value
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (props, required)
}

/// A parameter's schema: what the field holds, without the `null` an absent `Option` reads
/// as (a parameter is absent or has a value) and with its description moved to the parameter.
fn parameter(name: &str, place: &str, mut schema: Value, required: bool) -> Value {
    let description = schema.as_object_mut().and_then(|o| o.remove("description"));
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types[0].clone();
            schema["type"] = only;
        }
    }
    let mut out = json!({"name": name, "in": place, "required": required, "schema": schema});
    if let Some(description) = description {
        out["description"] = description;
    }
    out
}

fn parameters(endpoint: &Endpoint, doc: Option<&Doc>, g: &mut SchemaGenerator) -> Vec<Value> {
    let mut out = Vec::new();
    let (path_props, _) = match doc.and_then(|d| d.path) {
        Some(schema) => properties(schema, g),
        None => Default::default(),
    };
    for name in path_names(endpoint.path) {
        let schema = path_props
            .get(name)
            .cloned()
            .unwrap_or_else(|| json!({"type": "string"}));
        out.push(parameter(name, "path", schema, true));
    }
    if let Some(query) = doc.and_then(|d| d.query) {
        let (props, required) = properties(query, g);
        for (name, schema) in props {
            let needed = required.contains(&name);
            out.push(parameter(&name, "query", schema, needed));
        }
    }
    for (name, description) in doc.map_or(&[][..], |d| d.headers) {
        out.push(json!({
            "name": name, "in": "header", "required": false,
            "description": description, "schema": {"type": "string"},
        }));
    }
    if endpoint.transport == Transport::Websocket {
        for (name, value) in [
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
        ] {
            out.push(json!({
                "name": name, "in": "header", "required": true,
                "description": "The WebSocket handshake (RFC 6455).",
                "schema": {"type": "string", "const": value},
            }));
        }
        out.push(json!({
            "name": "Sec-WebSocket-Key", "in": "header", "required": true,
            "description": "The handshake's nonce (RFC 6455).", "schema": {"type": "string"},
        }));
    }
    out
}

fn request_body(body: Body, g: &mut SchemaGenerator) -> Option<Value> {
    Some(match body {
        Body::None => return None,
        Body::Json(schema) => {
            let schema = schema(g);
            // An empty body reads as `{}`: it is optional unless `{}` lacks a required field.
            let required = !properties_of(schema.as_value().clone(), g).1.is_empty();
            json!({
                "description": "JSON; an empty body reads as `{}`.",
                "required": required,
                "content": {"application/json": {"schema": schema}},
            })
        }
        Body::Bytes(media) => json!({
            "description": "The raw bytes.",
            "required": false,
            "content": {media: {}},
        }),
        Body::Multipart(schema) => json!({
            "required": true,
            "content": {"multipart/form-data": {"schema": schema(g)}},
        }),
    })
}

fn content(content: Content, g: &mut SchemaGenerator) -> Option<Value> {
    Some(match content {
        Content::Empty => return None,
        Content::Json(schema) => json!({"application/json": {"schema": schema(g)}}),
        Content::Bytes(media) => json!({ media: {} }),
        Content::Events(events) => {
            let described: Vec<Value> = events
                .iter()
                .map(
                    |e| json!({"event": e.name, "description": e.description, "data": (e.data)(g)}),
                )
                .collect();
            json!({"text/event-stream": crate::sse_schema::event_stream(described)})
        }
    })
}

/// The declared answers and the route's errors, by status. An answer declared at an error's
/// status adds its headers to that error (the 416 of a range names the size).
fn responses(
    endpoint: &Endpoint,
    doc: Option<&Doc>,
    g: &mut SchemaGenerator,
    shared: &mut Map<String, Value>,
) -> Value {
    let codes = errors::codes(endpoint, doc.map_or(&[][..], |d| d.errors));
    let mut out: BTreeMap<String, Value> = errors::responses(endpoint, &codes, shared)
        .into_iter()
        .map(|(status, response)| (status.to_string(), response))
        .collect();
    for answer in doc.map_or(&[][..], |d| d.answers) {
        let headers: Map<String, Value> = answer
            .headers
            .iter()
            .map(|(name, description)| {
                (
                    (*name).to_owned(),
                    json!({"description": description, "schema": {"type": "string"}}),
                )
            })
            .collect();
        let response = out
            .entry(answer.status.to_string())
            .or_insert_with(|| json!({"description": answer.description}));
        // An answer declared at an error's status changes that route's error: its own copy
        // of the shared response.
        if let Some(name) = response
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/components/responses/"))
        {
            *response = shared.get(name).cloned().unwrap_or_default();
        }
        // Two answers of one status (JSON, or events when asked to stream) are two media
        // types of one response.
        if let Some(Value::Object(content)) = content(answer.content, g) {
            match response.get_mut("content").and_then(Value::as_object_mut) {
                Some(known) if answer.status < 300 => known.extend(content),
                _ => response["content"] = Value::Object(content),
            }
        }
        if !headers.is_empty() {
            match response.get_mut("headers").and_then(Value::as_object_mut) {
                Some(known) => known.extend(headers),
                None => response["headers"] = Value::Object(headers),
            }
        }
    }
    json!(out)
}
