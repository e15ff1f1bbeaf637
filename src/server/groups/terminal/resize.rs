//! `pty_resize`: POST /pty/{id}/resize `{cols, rows}` sets the window size (the shell gets
//! SIGWINCH) and answers the record; each side within 1..=1000.

use super::Route;
use super::render::record_json;
use super::schemas::TerminalRecord;
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::{Json, Path};
use crate::server::openapi::op::{Answer, Code, Doc};
use crate::server::route::on;
use crate::services::pty::Size;
use axum::Extension;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, resize),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/pty/pty_5f2c0e8b9a1d4c7e6b3a2f10/resize",
    body: ExampleBody::Json(r#"{"cols": 132, "rows": 43}"#),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"id":"pty_5f2c0e8b9a1d4c7e6b3a2f10","pid":4242,"cols":132,"rows":43,"shell":"/bin/bash","cwd":"/workspace","created_at":"2025-06-01T12:00:00Z","clients":0}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::PtyResize, "Resize a terminal")
    .describe("Sets the window size (the shell gets SIGWINCH).")
    .json(|g| g.subschema_for::<ResizeBody>())
    .answers(&[Answer::json("The record.", |g| {
        g.subschema_for::<TerminalRecord>()
    })])
    .errors(&[&[Code::NotFound]]);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "PtyResizeBody")]
#[serde(deny_unknown_fields)]
struct ResizeBody {
    #[schemars(range(min = 1, max = 1000))]
    cols: u32,
    #[schemars(range(min = 1, max = 1000))]
    rows: u32,
}

async fn resize(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Json(body): Json<ResizeBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let size = Size::new(body.cols, body.rows)?;
    let record = app.ptys.resize(&identity.id, &id, size)?;
    Ok(axum::Json(record_json(&record)))
}
