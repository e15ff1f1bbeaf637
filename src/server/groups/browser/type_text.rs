//! `browser_type`: POST /browser/type `{selector, text}` focuses the first element matching
//! the selector and types the text into it (inserted as a keyboard would, so the page's
//! input handlers run), and answers `{url, title}`. Errors as `browser_click`.

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
    bind: |f| on(f, type_text),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/browser/type",
    body: ExampleBody::Json(r##"{"selector": "#name", "text": "world"}"##),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"url":"http://127.0.0.1:8080/","title":"Form"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::BrowserType, "Type into an element")
    .describe("Focuses the first element matching the selector and types the text (inserted as a keyboard would, so the page's input handlers run).")
    .json(|g| g.subschema_for::<TypeBody>())
    .answers(&[Answer::json("Where the page is.", |g| g.subschema_for::<BrowserLocation>())])
    .errors(&[&[Code::BrowserNotRunning, Code::SelectorNotFound, Code::BrowserTimeout]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TypeBody {
    /// A CSS selector.
    #[schemars(length(min = 1))]
    selector: String,
    text: String,
}

async fn type_text(
    State(app): State<SharedState>,
    Json(body): Json<TypeBody>,
) -> ApiResult<axum::Json<Value>> {
    app.browser.type_text(&body.selector, &body.text).await?;
    Ok(axum::Json(location_json(&app).await))
}
