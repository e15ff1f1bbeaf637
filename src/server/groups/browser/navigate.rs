//! `browser_navigate`: POST /browser/navigate `{url}` loads the page and answers `{url,
//! title, status}` where it ended (after redirects). Only http and https (`url_invalid`
//! otherwise); hosts under the operator's lists and never a private, loopback, link-local
//! or metadata address the rules do not admit (`url_denied`), judged on the addresses the
//! browser's proxy connects to, redirects included; a page that cannot be loaded is 502
//! `navigation_failed`.

use super::Route;
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, json_schema};
use crate::server::route::on;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, navigate),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/browser/navigate",
    body: ExampleBody::Json(r#"{"url": "http://127.0.0.1:8080/"}"#),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"url":"http://127.0.0.1:8080/","title":"Form","status":200}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::BrowserNavigate, "Load a page")
    .describe("Only http and https; hosts under the operator's lists and never a private, loopback, link-local or metadata address the rules do not admit, judged on the addresses the browser's proxy connects to, redirects included.")
    .json(|g| g.subschema_for::<NavigateBody>())
    .answers(&[Answer::json("Where it ended, after redirects.", |_| {
        json_schema!({
            "type": "object",
            "required": ["url", "title", "status"],
            "properties": {
                "url": {"type": "string"},
                "title": {"type": "string"},
                "status": {"type": ["integer", "null"], "description": "The page's HTTP status."},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[&[
        Code::BrowserNotRunning,
        Code::UrlInvalid,
        Code::UrlDenied,
        Code::NavigationFailed,
        Code::BrowserTimeout,
    ]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NavigateBody {
    url: String,
}

async fn navigate(
    State(app): State<SharedState>,
    Json(body): Json<NavigateBody>,
) -> ApiResult<axum::Json<Value>> {
    let went = app.browser.navigate(&body.url).await?;
    Ok(axum::Json(
        json!({"url": went.url, "title": went.title, "status": went.status}),
    ))
}
