//! `system_info`: GET /system/info answers what the machine is:
//! `{os, kernel, arch, cpus, memory_bytes, hostname, uptime_s, server_version}`.

use super::{Route, blocking};
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
    bind: |f| on(f, info),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/system/info",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"os":"linux (Debian GNU/Linux 13 (trixie))","kernel":"6.12.38+deb13-amd64","arch":"x86_64","cpus":2,"memory_bytes":8323878912,"hostname":"sandbox","uptime_s":86400,"server_version":"0.1.0"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::SystemInfo, "What the machine is")
    .answers(&[Answer::json("The machine.", |_| {
        json_schema!({
            "type": "object",
            "required": ["os", "kernel", "arch", "cpus", "memory_bytes", "hostname", "uptime_s", "server_version"],
            "properties": {
                "os": {"type": "string"},
                "kernel": {"type": "string"},
                "arch": {"type": "string"},
                "cpus": {"type": "integer", "minimum": 1},
                "memory_bytes": {"type": "integer", "minimum": 0},
                "hostname": {"type": "string"},
                "uptime_s": {"type": "integer", "minimum": 0},
                "server_version": {"type": "string"},
            },
            "additionalProperties": false,
        })
    })]);

async fn info(State(_app): State<SharedState>) -> Result<axum::Json<Value>, ApiError> {
    let info = blocking(system::info).await?;
    Ok(axum::Json(json!({
        "os": info.os,
        "kernel": info.kernel,
        "arch": info.arch,
        "cpus": info.cpus,
        "memory_bytes": info.memory_bytes,
        "hostname": info.hostname,
        "uptime_s": info.uptime_s,
        "server_version": env!("CARGO_PKG_VERSION"),
    })))
}
