//! `system_metrics`: GET /system/metrics answers how busy the machine is:
//! `{cpu_percent, memory: {total_bytes, used_bytes}, load: [1m, 5m, 15m], processes}`.
//! `cpu_percent` is the machine's busy share over 100 ms watched for this request (all
//! CPUs together, 0 to 100); `processes` counts the processes this server can see.

use super::{Route, reading};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::openapi::op::{Answer, Doc, json_schema};
use crate::server::route::on;
use crate::services::system;
use axum::extract::State;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, metrics),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/system/metrics",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"cpu_percent":12.5,"memory":{"total_bytes":8323878912,"used_bytes":2147483648},"load":[0.42,0.31,0.2],"processes":87}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::SystemMetrics, "How busy the machine is")
    .describe("`cpu_percent` is the machine's busy share over 100 ms watched for this request (all CPUs together, 0 to 100); `processes` counts the processes this server can see.")
    .answers(&[Answer::json("The readings.", |_| {
        json_schema!({
            "type": "object",
            "required": ["cpu_percent", "memory", "load", "processes"],
            "properties": {
                "cpu_percent": {"type": "number", "minimum": 0, "maximum": 100},
                "memory": {
                    "type": "object",
                    "required": ["total_bytes", "used_bytes"],
                    "properties": {
                        "total_bytes": {"type": "integer", "minimum": 0},
                        "used_bytes": {"type": "integer", "minimum": 0},
                    },
                    "additionalProperties": false,
                },
                "load": {"type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 3, "maxItems": 3, "description": "1, 5 and 15 minutes."},
                "processes": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": false,
        })
    })]);

async fn metrics(State(_app): State<SharedState>) -> Result<axum::Json<Value>, ApiError> {
    let m = system::metrics().await.map_err(reading)?;
    Ok(axum::Json(json!({
        "cpu_percent": m.cpu_percent,
        "memory": {"total_bytes": m.memory.total_bytes, "used_bytes": m.memory.used_bytes},
        "load": m.load,
        "processes": m.processes,
    })))
}
