//! `pty_get`: GET /pty/{id} answers the terminal's record (`clients`: attached now); an id
//! of no running terminal of the caller's is 404 `not_found`.

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
    bind: |f| on(f, get),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/pty/pty_5f2c0e8b9a1d4c7e6b3a2f10",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"id":"pty_5f2c0e8b9a1d4c7e6b3a2f10","pid":4242,"cols":80,"rows":24,"shell":"/bin/bash","cwd":"/workspace","created_at":"2025-06-01T12:00:00Z","clients":0}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::PtyGet, "A terminal's record")
    .answers(&[Answer::json("The record.", |g| {
        g.subschema_for::<TerminalRecord>()
    })])
    .errors(&[&[Code::NotFound]]);

async fn get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let record = app.ptys.get(&identity.id, &id)?;
    Ok(axum::Json(record_json(&record)))
}
