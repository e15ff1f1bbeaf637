//! `process_start`: POST /processes starts a command that outlives the request and answers
//! its record. The command body is the shell's plus `tag`; stdin stays open for
//! `process_stdin` (the body's `stdin` is written first). A process has no time limit
//! unless the body gives one. Its output is kept in a ring per stream (the newest
//! `process.output_bytes`, 1 MiB by default) for `process_get?output=true`.

use super::Route;
use super::command::{Mode, StartBody, prepare};
use super::render::record_json;
use super::schemas::ProcessRecord;
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Doc, LAUNCH};
use crate::server::route::on;
use axum::Extension;
use axum::extract::State;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, start),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/processes",
    body: ExampleBody::Json(
        r#"{"cmd": "sleep", "args": ["30"], "cwd": "/workspace", "tag": "nap"}"#,
    ),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"pid":4242,"tag":"nap","cmd":"sleep","args":["30"],"cwd":"/workspace","status":"running","exit_code":null,"signal":null,"started_at":"2025-06-01T12:00:00Z","ended_at":null}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::ProcessStart, "Start a process")
    .describe("Starts a command that outlives the request (no time limit unless `timeout`), stdin open for `process_stdin`; its output is kept in a ring per stream for `process_get?output=true`.")
    .json(|g| g.subschema_for::<StartBody>())
    .answers(&[Answer::json("The process's record.", |g| g.subschema_for::<ProcessRecord>())])
    .errors(&[LAUNCH]);

async fn start(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Json(body): Json<StartBody>,
) -> ApiResult<axum::Json<Value>> {
    let (command, tag) = body.split();
    let mode = Mode {
        default_timeout: None,
        keep_stdin_open: true,
    };
    let prepared = prepare(&app, &identity, command, tag, mode)?;
    let record = app
        .processes
        .start_labelled(&identity.id, &prepared.spec, prepared.label)?;
    if let Some(text) = prepared.stdin {
        // A process that exits (or closes stdin) before reading it is not an error of the
        // start: its record says how it ended. One that does not read gets the rest of it
        // never: the start answers within the same wait as `process_stdin`.
        let write = app
            .processes
            .stdin(&identity.id, record.pid, text.as_bytes(), false);
        let _ = tokio::time::timeout(super::stdin::WRITE_WAIT, write).await;
    }
    Ok(axum::Json(Value::Object(record_json(&record))))
}
