//! `process_list`: GET /processes answers `{processes: [record...]}`: the caller's own,
//! oldest first, exited ones while they are kept (the newest 64 per caller, for 15 min).

use super::Route;
use super::render::record_json;
use super::schemas::ProcessRecord;
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
    target: "/processes",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"processes":[]}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::ProcessList, "List the caller's processes")
    .describe(
        "Oldest first; exited ones while they are kept (the newest 64 per caller, for 15 min).",
    )
    .answers(&[Answer::json("The records.", |g| {
        let record = g.subschema_for::<ProcessRecord>();
        json_schema!({
            "type": "object",
            "required": ["processes"],
            "properties": {"processes": {"type": "array", "items": record}},
            "additionalProperties": false,
        })
    })]);

async fn list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
) -> axum::Json<Value> {
    let processes: Vec<Value> = app
        .processes
        .list(&identity.id)
        .iter()
        .map(|r| Value::Object(record_json(r)))
        .collect();
    axum::Json(json!({ "processes": processes }))
}
