//! `process_get`: GET /processes/{pid}[?output=true] answers the record; with
//! `output=true` also `stdout` and `stderr`: what the rings keep (the newest
//! `process.output_bytes` of each, 1 MiB by default), with `stdout_dropped` and
//! `stderr_dropped` counting the older bytes no longer kept (0 when nothing was lost).

use super::render::{put_output, record_json};
use super::schemas::{ProcessRecord, pid_path};
use super::{Route, about, pid_of};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::{Path, Query};
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, json_schema};
use crate::server::route::on;
use axum::Extension;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, get),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/processes/4242",
    body: ExampleBody::None,
    files: &[],
    status: 404,
    headers: &[("content-type", "application/json")],
    answer: r#"{"error":"no process 4242 was started by this caller (GET /processes lists them)","type":"NotFoundError","code":"not_found","param":"pid"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::ProcessGet, "A process's record")
    .describe("With `output=true` also what the rings keep of `stdout` and `stderr` (the newest `process.output_bytes` of each), `stdout_dropped` and `stderr_dropped` counting the older bytes no longer kept.")
    .path(pid_path)
    .query(GetQuery::json_schema)
    .answers(&[Answer::json("The record (and the output).", |g| {
        let record = g.subschema_for::<ProcessRecord>();
        json_schema!({
            "allOf": [record],
            "properties": {
                "stdout": {"type": "string"},
                "stdout_b64": {"type": "string", "contentEncoding": "base64"},
                "stderr": {"type": "string"},
                "stderr_b64": {"type": "string", "contentEncoding": "base64"},
                "stdout_dropped": {"type": "integer", "minimum": 0},
                "stderr_dropped": {"type": "integer", "minimum": 0},
            },
        })
    })])
    .errors(&[&[Code::NotFound]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetQuery {
    /// Include the kept output.
    #[serde(default)]
    output: bool,
}

async fn get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(pid): Path<String>,
    Query(query): Query<GetQuery>,
) -> ApiResult<axum::Json<Value>> {
    let pid = pid_of(&pid)?;
    let record = app.processes.get(&identity.id, pid).map_err(about(pid))?;
    let mut map = record_json(&record);
    if query.output {
        let output = app
            .processes
            .output(&identity.id, pid)
            .map_err(about(pid))?;
        put_output(&mut map, "stdout", &output.stdout.bytes);
        put_output(&mut map, "stderr", &output.stderr.bytes);
        map.insert("stdout_dropped".into(), Value::from(output.stdout.offset));
        map.insert("stderr_dropped".into(), Value::from(output.stderr.offset));
    }
    Ok(axum::Json(Value::Object(map)))
}
