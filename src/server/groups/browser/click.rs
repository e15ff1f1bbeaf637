//! `browser_click`: POST /browser/click `{selector}` clicks the centre of the first element
//! matching the CSS selector (a real mouse event, scrolled into view) and answers where the
//! page is: `{url, title}`. No match is 404 `selector_not_found`; a malformed selector 400
//! `invalid_request`, both naming `selector`.

use super::BrowserLocation;
use super::{Route, location_json};
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
    bind: |f| on(f, click),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/browser/click",
    body: ExampleBody::Json(r##"{"selector": "#go"}"##),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"url":"http://127.0.0.1:8080/","title":"Form"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::BrowserClick, "Click an element")
    .describe("Clicks the centre of the first element matching the CSS selector (a real mouse event, scrolled into view). A malformed selector is 400 `invalid_request`.")
    .json(|g| g.subschema_for::<ClickBody>())
    .answers(&[Answer::json("Where the page is.", |g| g.subschema_for::<BrowserLocation>())])
    .errors(&[&[Code::BrowserNotRunning, Code::SelectorNotFound, Code::BrowserTimeout]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ClickBody {
    /// A CSS selector.
    #[schemars(length(min = 1))]
    selector: String,
}

async fn click(
    State(app): State<SharedState>,
    Json(body): Json<ClickBody>,
) -> ApiResult<axum::Json<Value>> {
    app.browser.click(&body.selector).await?;
    Ok(axum::Json(location_json(&app).await))
}
