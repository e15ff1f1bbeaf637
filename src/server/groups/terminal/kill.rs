//! `pty_kill`: DELETE /pty/{id} hangs up the terminal's session (HUP, CONT, TERM), waits
//! the grace period, KILLs what is left, reaps the shell, closes the attached clients and
//! answers the final record.

use super::Route;
use super::render::record_json;
use super::schemas::TerminalRecord;
use crate::error::ApiError;
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
    target: "/pty/pty_5f2c0e8b9a1d4c7e6b3a2f10",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"id":"pty_5f2c0e8b9a1d4c7e6b3a2f10","pid":4242,"cols":80,"rows":24,"shell":"/bin/bash","cwd":"/workspace","created_at":"2025-06-01T12:00:00Z","clients":0}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::PtyKill, "Kill a terminal")
    .describe("Hangs up the terminal's session (HUP, CONT, TERM), waits the grace period, KILLs what is left, closes the attached clients.")
    .answers(&[Answer::json("The final record.", |g| g.subschema_for::<TerminalRecord>())])
    .errors(&[&[Code::NotFound]]);

async fn kill(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let record = app.ptys.kill(&identity.id, &id).await?;
    Ok(axum::Json(record_json(&record)))
}
