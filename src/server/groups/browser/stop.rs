//! `browser_stop`: DELETE /browser ends the browser's whole process group (TERM, 2 s, KILL),
//! removes its profile directory and answers the status (`running: false`); 409
//! `browser_not_running` when none runs.

use super::BrowserStatus;
use super::{Route, status_json};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::openapi::op::{Answer, Code, Doc};
use crate::server::route::on;
use axum::extract::State;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, stop),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "DELETE",
    target: "/browser",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"running":false}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::BrowserStop, "Stop the browser")
    .describe("Ends the browser's whole process group (TERM, 2 s, KILL) and removes its profile directory.")
    .answers(&[Answer::json("Its status (`running: false`).", |g| g.subschema_for::<BrowserStatus>())])
    .errors(&[&[Code::BrowserNotRunning]]);

async fn stop(State(app): State<SharedState>) -> ApiResult<axum::Json<Value>> {
    app.browser.stop().await?;
    Ok(axum::Json(status_json(&app.browser.status().await)))
}
