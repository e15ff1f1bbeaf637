//! `process_kill`: DELETE /processes/{pid} sends TERM to the whole process group, waits a
//! grace period (2 s), then KILL, and answers the final record once the group has ended
//! (at once for a process that has already exited).

use super::render::record_json;
use super::schemas::{ProcessRecord, pid_path};
use super::{Route, about, pid_of};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Path;
use crate::server::openapi::op::{Answer, Code, Doc};
use crate::server::route::on;
use axum::Extension;
use axum::extract::State;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, kill),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "DELETE",
    target: "/processes/4242",
    body: ExampleBody::None,
    files: &[],
    status: 404,
    headers: &[("content-type", "application/json")],
    answer: r#"{"error":"no process 4242 was started by this caller (GET /processes lists them)","type":"NotFoundError","code":"not_found","param":"pid"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::ProcessKill, "Kill a process")
    .describe("TERM to the whole group, 2 s, then KILL; answers the final record once the group has ended.")
    .path(pid_path)
    .answers(&[Answer::json("The final record.", |g| g.subschema_for::<ProcessRecord>())])
    .errors(&[&[Code::NotFound]]);

async fn kill(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(pid): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    let pid = pid_of(&pid)?;
    let record = app
        .processes
        .kill(&identity.id, pid)
        .await
        .map_err(about(pid))?;
    Ok(axum::Json(Value::Object(record_json(&record))))
}
