//! `system_env_get`: GET /system/env answers `{env: {NAME: value}}`, the environment a
//! child started now gets (see `env.rs`), secret-like values masked as `***`.

use super::Route;
use super::env::view;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::openapi::op::{Answer, Doc};
use crate::server::route::on;
use axum::extract::State;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, get),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/system/env",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"env":{"HOME":"/home/agent","LANG":"C.UTF-8","PATH":"/usr/local/bin:/usr/bin:/bin"}}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::SystemEnvGet, "The children's environment")
    .describe("What a child started now gets: the operator's child base with the changes of `POST /system/env`, never the server's own variables.")
    .answers(&[Answer::json("The environment.", super::env::view_schema)]);

async fn get(State(app): State<SharedState>) -> axum::Json<Value> {
    axum::Json(view(&app))
}
