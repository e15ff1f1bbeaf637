//! `system_ports`: GET /system/ports answers the listening TCP sockets,
//! `{ports: [{port, address, protocol, pid?, program?}]}` sorted by port, read from
//! `/proc/net/tcp` and `tcp6`; `pid` and `program` appear when `/proc/<pid>/fd` shows who
//! holds the socket (another user's processes are not visible without privileges).

use super::{Route, blocking};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::openapi::op::{Answer, Doc, json_schema};
use crate::server::route::on;
use crate::services::system::ports;
use axum::extract::State;
use serde_json::{Map, Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, list),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/system/ports",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"ports":[{"port":22,"address":"0.0.0.0","protocol":"tcp"},{"port":9000,"address":"127.0.0.1","protocol":"tcp","pid":4242,"program":"svc"}]}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::SystemPorts, "What listens")
    .describe("The listening TCP sockets sorted by port, from `/proc/net/tcp` and `tcp6`; `pid` and `program` when `/proc/<pid>/fd` shows who holds the socket.")
    .answers(&[Answer::json("The sockets.", |_| {
        json_schema!({
            "type": "object",
            "required": ["ports"],
            "properties": {"ports": {"type": "array", "items": {
                "type": "object",
                "required": ["port", "address", "protocol"],
                "properties": {
                    "port": {"type": "integer", "minimum": 0, "maximum": 65535},
                    "address": {"type": "string"},
                    "protocol": {"type": "string"},
                    "pid": {"type": "integer"},
                    "program": {"type": "string"},
                },
                "additionalProperties": false,
            }}},
            "additionalProperties": false,
        })
    })]);

async fn list(State(_app): State<SharedState>) -> Result<axum::Json<Value>, ApiError> {
    let found = blocking(|| Ok(ports::listening())).await?;
    let ports: Vec<Value> = found
        .into_iter()
        .map(|l| {
            let mut entry = Map::new();
            entry.insert("port".into(), json!(l.port));
            entry.insert("address".into(), json!(l.address.to_string()));
            entry.insert("protocol".into(), json!(l.protocol));
            if let Some(pid) = l.pid {
                entry.insert("pid".into(), json!(pid));
            }
            if let Some(program) = l.program {
                entry.insert("program".into(), json!(program));
            }
            Value::Object(entry)
        })
        .collect();
    Ok(axum::Json(json!({ "ports": ports })))
}
