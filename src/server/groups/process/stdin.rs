//! `process_stdin`: POST /processes/{pid}/stdin `{data, close?}` writes `data` to the
//! process's stdin, then closes it when `close` is true; answers `{pid, written, closed}`.
//! A process that does not read is given 10 s before the write fails (`stdin_closed` is
//! for a closed pipe; a full one that stays full is `process_exited` once it ends).

use super::schemas::pid_path;
use super::{Route, about, pid_of};
use crate::error::{ApiError, ApiResult, Code};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::{Json, Path};
use crate::server::openapi::op::{Answer, Doc, JsonSchema, json_schema};
use crate::server::route::on;
use axum::Extension;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// How long a write may wait for a process that does not read its stdin.
pub(super) const WRITE_WAIT: Duration = Duration::from_secs(10);

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, stdin),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/processes/4242/stdin",
    body: ExampleBody::Json(r#"{"data": "print(1)\n", "close": true}"#),
    files: &[],
    status: 404,
    headers: &[("content-type", "application/json")],
    answer: r#"{"error":"no process 4242 was started by this caller (GET /processes lists them)","type":"NotFoundError","code":"not_found","param":"pid"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::ProcessStdin, "Write to a process's stdin")
    .describe("Writes `data`, then closes stdin when `close` is true. A process that does not read is given 10 s before the write fails.")
    .path(pid_path)
    .json(|g| g.subschema_for::<StdinBody>())
    .answers(&[Answer::json("What was written.", |_| {
        json_schema!({
            "type": "object",
            "required": ["pid", "written", "closed"],
            "properties": {
                "pid": {"type": "integer"},
                "written": {"type": "integer", "minimum": 0, "description": "Bytes."},
                "closed": {"type": "boolean"},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[&[Code::NotFound, Code::ProcessExited, Code::StdinClosed]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("anyOf" = [
    {"required": ["data"], "properties": {"data": {"type": "string"}}},
    {"required": ["close"], "properties": {"close": {"const": true}}},
]))]
struct StdinBody {
    /// Required unless `close` is true.
    data: Option<String>,
    #[serde(default)]
    close: bool,
}

async fn stdin(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(pid): Path<String>,
    Json(body): Json<StdinBody>,
) -> ApiResult<axum::Json<Value>> {
    let pid = pid_of(&pid)?;
    let data = match (body.data, body.close) {
        (Some(data), _) => data,
        (None, true) => String::new(),
        (None, false) => {
            return Err(ApiError::invalid(
                "data",
                "`data` is required (or `close: true` alone to close stdin)",
            ));
        }
    };
    let write = app
        .processes
        .stdin(&identity.id, pid, data.as_bytes(), body.close);
    match tokio::time::timeout(WRITE_WAIT, write).await {
        Ok(result) => result.map_err(about(pid))?,
        Err(_) => {
            return Err(ApiError::new(
                Code::StdinClosed,
                format!(
                    "process {pid} did not read its stdin within {}s; the write was abandoned",
                    WRITE_WAIT.as_secs()
                ),
            ));
        }
    }
    Ok(axum::Json(
        json!({ "pid": pid, "written": data.len(), "closed": body.close }),
    ))
}
