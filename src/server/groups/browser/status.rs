//! `browser_status`: GET /browser answers `{running, pid?, url?, title?}`; a browser that
//! died answers `running: false` with `reason` (how it ended). `url` and `title` are left
//! out when the page does not answer within 2 s (in the middle of a navigation).

use super::BrowserStatus;
use super::{Route, status_json};
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::openapi::op::{Answer, Doc};
use crate::server::route::on;
use axum::extract::State;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, status),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/browser",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"running":true,"pid":4242,"url":"http://127.0.0.1:8080/","title":"Form"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::BrowserStatus, "The browser's status")
    .describe("A browser that died answers `running: false` with `reason`; `url` and `title` are left out when the page does not answer within 2 s.")
    .answers(&[Answer::json("Its status.", |g| g.subschema_for::<BrowserStatus>())]);

async fn status(State(app): State<SharedState>) -> axum::Json<Value> {
    axum::Json(status_json(&app.browser.status().await))
}
