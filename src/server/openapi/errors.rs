//! The error answers of a route, from the error table: the pipeline's codes (every route
//! gets them, as every route passes the pipeline), the codes of its row's kind (a refusal
//! row answers only its refusal), and the route's own. One response per status, its body
//! the row's shape with `code` limited to the codes that status carries.

use crate::error::{Code, Shape};
use crate::server::endpoints::{Auth, Endpoint, Status};
use crate::server::router::shape_of;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// What any admitted or refused call of the route may be answered, whatever the handler:
/// the HTTP layer's limits, the switch, rate and concurrency limits, repeated query
/// parameters, the body limit, a bad body or path (the extractors), the safety net.
const PIPELINE: &[Code] = &[
    Code::InvalidRequest,
    Code::DuplicateParameter,
    Code::EndpointDisabled,
    Code::PayloadTooLarge,
    Code::UriTooLong,
    Code::HeadersTooLarge,
    Code::RateLimited,
    Code::ConcurrencyLimited,
    Code::Internal,
];

/// Every code the route may answer with, in table order, no repeats.
pub fn codes(endpoint: &Endpoint, own: &[&[Code]]) -> Vec<Code> {
    let mut wanted: Vec<Code> = PIPELINE.to_vec();
    if endpoint.auth == Auth::Token {
        wanted.extend([Code::Unauthorized, Code::AmbiguousCredentials]);
    }
    if !endpoint.scopes.is_empty() {
        wanted.push(Code::MissingScope);
    }
    if let Status::Refusal(_) = endpoint.status {
        wanted.push(Code::NotImplementedLocally);
    }
    wanted.extend(own.iter().flat_map(|set| set.iter().copied()));
    Code::ALL
        .iter()
        .copied()
        .filter(|c| wanted.contains(c) && !c.stream_only())
        .collect()
}

/// The responses of `codes`, keyed by status: each a `$ref` to a response of the
/// document's components (registered in `shared`), so routes that answer the same codes
/// share one.
pub fn responses(
    endpoint: &Endpoint,
    codes: &[Code],
    shared: &mut Map<String, Value>,
) -> BTreeMap<u16, Value> {
    let shape = shape_of(endpoint);
    let mut by_status: BTreeMap<u16, Vec<Code>> = BTreeMap::new();
    for &code in codes {
        by_status
            .entry(code.status().as_u16())
            .or_default()
            .push(code);
    }
    by_status
        .into_iter()
        .map(|(status, codes)| {
            let name = name(shape, status, &codes);
            shared
                .entry(name.clone())
                .or_insert_with(|| response(shape, status, &codes));
            (
                status,
                json!({"$ref": format!("#/components/responses/{name}")}),
            )
        })
        .collect()
}

/// `Flat400-invalid_path-invalid_request`: the shape, the status and the codes.
fn name(shape: Shape, status: u16, codes: &[Code]) -> String {
    let shape = match shape {
        Shape::OpenAi => "OpenAi",
        _ => "Flat",
    };
    let mut name = format!("{shape}{status}");
    for code in codes {
        name.push('-');
        name.push_str(code.as_str());
    }
    name
}

fn response(shape: Shape, status: u16, codes: &[Code]) -> Value {
    let names: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
    let description = codes
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let code = json!({"code": {"enum": names}});
    let (component, narrowed) = match shape {
        Shape::OpenAi => (
            "OpenAiError",
            json!({"properties": {"error": {"properties": code}}}),
        ),
        _ => ("Error", json!({ "properties": code })),
    };
    let mut headers = Map::new();
    if status == 429 {
        headers.insert(
            "Retry-After".into(),
            json!({
                "description": "Seconds to wait before the next call.",
                "required": true,
                "schema": {"type": "integer", "minimum": 1},
            }),
        );
    }
    if shape == Shape::OpenAi && codes.iter().any(|c| !c.retryable()) {
        headers.insert(
            "x-should-retry".into(),
            json!({
                "description": "`false` on every answer a retry cannot change (the SDKs read it).",
                "schema": {"type": "string", "enum": ["false"]},
            }),
        );
    }
    let mut out = json!({
        "description": format!("Error: {description}. The codes are in docs/errors.md."),
        "content": {"application/json": {"schema": {
            "allOf": [{"$ref": format!("#/components/schemas/{component}")}, narrowed],
        }}},
    });
    if !headers.is_empty() {
        out["headers"] = Value::Object(headers);
    }
    out
}

/// The two error bodies, as components.
pub fn components() -> Map<String, Value> {
    let mut out = Map::new();
    out.insert(
        "Error".into(),
        json!({
            "description": "The server's error body (spec 2.2), rendered from a row of the error table.",
            "type": "object",
            "required": ["error", "type", "code"],
            "properties": {
                "error": {"type": "string", "description": "What went wrong, for a person."},
                "type": {"type": "string", "description": "The row's exception name."},
                "code": {"type": "string", "description": "The row's machine code."},
                "endpoint": {"type": "string", "description": "The endpoint that refused (pipeline and guard refusals)."},
                "rule": {"type": "string", "description": "The policy layer that switched the endpoint off."},
                "param": {"type": "string", "description": "The offending parameter or field."},
            },
        }),
    );
    out.insert(
        "OpenAiError".into(),
        json!({
            "description": "The agents group's OpenAI-style error body.",
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["message", "type", "param", "code"],
                    "properties": {
                        "message": {"type": "string"},
                        "type": {"type": "string", "enum": ["invalid_request_error", "not_found_error", "server_error"]},
                        "param": {"type": ["string", "null"]},
                        "code": {"type": "string"},
                        "endpoint": {"type": "string"},
                        "rule": {"type": "string"},
                    },
                },
                "x_svc": {
                    "type": "object",
                    "description": "Where to look instead (refusals and runtimes that are not local).",
                },
            },
        }),
    );
    out
}
