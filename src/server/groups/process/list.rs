//! `process_list`: GET /processes answers `{processes: [record...]}`: the caller's own,
//! oldest first, exited ones while they are kept (the newest 64 per caller, for 15 min).

use super::Route;
use super::render::record_json;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use axum::Extension;
use axum::extract::State;
use axum::routing::on;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    id: EndpointId::ProcessList,
    bind: |f| on(f, list),
    example: &EXAMPLE,
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
