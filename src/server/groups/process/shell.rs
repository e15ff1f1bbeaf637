//! `shell`: POST /shell runs a command to completion and answers
//! `{stdout, stderr, exit_code, duration_ms, timed_out, truncated}`. A timeout stops the
//! whole process group (TERM, 2 s, KILL) and keeps the output so far, with `exit_code`
//! null; output past `process.output_bytes` (1 MiB by default) per stream is read and
//! dropped (the program never blocks on it) and `truncated` is set. A client that hangs up
//! ends the command.

use super::Route;
use super::command::{CommandBody, DEFAULT_TIMEOUT, Mode, prepare};
use super::render::put_output;
use super::schemas::ShellResult;
use crate::error::{ApiError, ApiResult, Code};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Doc, LAUNCH};
use crate::server::route::on;
use crate::services::supervisor;
use axum::Extension;
use axum::extract::State;
use serde_json::{Map, Value};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, shell),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/shell",
    body: ExampleBody::Json(r#"{"cmd": "echo hello; echo oops >&2; exit 3", "cwd": "/workspace"}"#),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"stdout":"hello\n","stderr":"oops\n","exit_code":3,"duration_ms":4,"timed_out":false,"truncated":false}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::Shell, "Run a command to completion")
    .describe("`cmd` alone is a shell line; with `args` the program runs directly. A timeout (default 60 s, at most 3600) stops the whole process group and keeps the output so far, `exit_code` null; output past `process.output_bytes` per stream is dropped and `truncated` set. A client that hangs up ends the command.")
    .json(|g| g.subschema_for::<CommandBody>())
    .answers(&[Answer::json("How it ran.", |g| g.subschema_for::<ShellResult>())])
    .errors(&[LAUNCH]);

async fn shell(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Json(body): Json<CommandBody>,
) -> ApiResult<axum::Json<Value>> {
    let mode = Mode {
        default_timeout: Some(DEFAULT_TIMEOUT),
        keep_stdin_open: false,
    };
    let prepared = prepare(&app, &identity, body, None, mode)?;
    let outcome = supervisor::run(&prepared.spec).await.map_err(|e| {
        ApiError::new(
            Code::ProcessInvalid,
            format!("cannot start the command: {e}"),
        )
    })?;
    let mut map = Map::new();
    put_output(&mut map, "stdout", &outcome.stdout.bytes);
    put_output(&mut map, "stderr", &outcome.stderr.bytes);
    map.insert("exit_code".into(), Value::from(outcome.exit_code));
    map.insert(
        "duration_ms".into(),
        Value::from(outcome.duration.as_millis() as u64),
    );
    map.insert("timed_out".into(), Value::from(outcome.timed_out));
    map.insert(
        "truncated".into(),
        Value::from(outcome.stdout.truncated || outcome.stderr.truncated),
    );
    Ok(axum::Json(Value::Object(map)))
}
