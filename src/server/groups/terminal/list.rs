//! `pty_list`: GET /pty answers `{ptys: [record...]}`, the caller's running terminals,
//! oldest first.

use super::Route;
use super::render::record_json;
use super::schemas::TerminalRecord;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::openapi::op::{Answer, Doc, json_schema};
use crate::server::route::on;
use axum::Extension;
use axum::extract::State;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, list),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/pty",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"ptys":[{"id":"pty_5f2c0e8b9a1d4c7e6b3a2f10","pid":4242,"cols":80,"rows":24,"shell":"/bin/bash","cwd":"/workspace","created_at":"2025-06-01T12:00:00Z","clients":0}]}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::PtyList, "List the caller's terminals")
    .describe("The running ones, oldest first.")
    .answers(&[Answer::json("The records.", |g| {
        let record = g.subschema_for::<TerminalRecord>();
        json_schema!({
            "type": "object",
            "required": ["ptys"],
            "properties": {"ptys": {"type": "array", "items": record}},
            "additionalProperties": false,
        })
    })]);

async fn list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
) -> axum::Json<Value> {
    let records = app.ptys.list(&identity.id);
    axum::Json(json!({"ptys": records.iter().map(record_json).collect::<Vec<_>>()}))
}
