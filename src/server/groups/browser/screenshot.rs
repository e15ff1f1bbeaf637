//! `browser_screenshot`: GET /browser/screenshot[?full_page=true] answers `image/png`: the
//! viewport (1280x720), or the whole page's height with `full_page=true`.

use super::Route;
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema};
use crate::server::route::on;
use axum::extract::State;
use axum::response::IntoResponse;
use serde::Deserialize;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, screenshot),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/browser/screenshot",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "image/png")],
    answer: "<the PNG: 1280x720>",
};

pub(super) const DOC: Doc = Doc::new(EndpointId::BrowserScreenshot, "A screenshot")
    .describe("The viewport (1280x720), or the whole page's height with `full_page=true`.")
    .query(ScreenshotQuery::json_schema)
    .answers(&[Answer::bytes("The PNG.", "image/png")])
    .errors(&[&[Code::BrowserNotRunning, Code::BrowserTimeout]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScreenshotQuery {
    #[serde(default)]
    full_page: bool,
}

async fn screenshot(
    State(app): State<SharedState>,
    Query(query): Query<ScreenshotQuery>,
) -> ApiResult<impl IntoResponse> {
    let png = app.browser.screenshot(query.full_page).await?;
    Ok(([(http::header::CONTENT_TYPE, "image/png")], png))
}
