//! `browser_start`: POST /browser `{headless?: true}` starts the server's one Chromium and
//! answers its status. A second start while it runs is 409 `browser_running`; no browser
//! binary is 503 `browser_unavailable` naming the package to install.

use super::BrowserStatus;
use super::{Route, status_json};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema};
use crate::server::route::on;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, start),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/browser",
    body: ExampleBody::Json(r#"{"headless": true}"#),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"running":true,"pid":4242,"url":"about:blank","title":""}"#,
};

fn yes() -> bool {
    true
}

pub(super) const DOC: Doc = Doc::new(EndpointId::BrowserStart, "Start the browser")
    .describe("Starts the server's one Chromium. A second start while it runs is 409 `browser_running`; no browser binary is 503 `browser_unavailable` naming the package to install.")
    .json(|g| g.subschema_for::<StartBody>())
    .answers(&[Answer::json("Its status.", |g| g.subschema_for::<BrowserStatus>())])
    .errors(&[&[Code::BrowserRunning, Code::BrowserUnavailable, Code::BrowserTimeout]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "BrowserStartBody")]
#[serde(deny_unknown_fields)]
struct StartBody {
    /// A headed browser needs a display (`DISPLAY`).
    #[serde(default = "yes")]
    headless: bool,
}

async fn start(
    State(app): State<SharedState>,
    Json(body): Json<StartBody>,
) -> ApiResult<axum::Json<Value>> {
    let status = app.browser.start(body.headless).await?;
    Ok(axum::Json(status_json(&status)))
}
