//! `browser_content`: GET /browser/content answers `{url, title, html, text}`: the page's
//! address and title, its HTML as the DOM is now (`outerHTML`, scripts' changes included)
//! and its visible text (`innerText`).

use super::Route;
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::openapi::op::{Answer, Code, Doc, json_schema};
use crate::server::route::on;
use axum::extract::State;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, content),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/browser/content",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"url":"http://127.0.0.1:8080/","title":"Form","html":"<html><head><title>Form</title></head><body><input id=\"name\"><button id=\"go\" onclick=\"document.getElementById('out').textContent='hello '+document.getElementById('name').value\">Go</button><p id=\"out\">hello world</p></body></html>","text":"Go\n\nhello world"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::BrowserContent, "The page's content")
    .describe("Its address and title, its HTML as the DOM is now (`outerHTML`) and its visible text (`innerText`).")
    .answers(&[Answer::json("The page.", |_| {
        json_schema!({
            "type": "object",
            "required": ["url", "title", "html", "text"],
            "properties": {
                "url": {"type": "string"},
                "title": {"type": "string"},
                "html": {"type": "string"},
                "text": {"type": "string"},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[&[Code::BrowserNotRunning, Code::BrowserTimeout]]);

async fn content(State(app): State<SharedState>) -> ApiResult<axum::Json<Value>> {
    let c = app.browser.content().await?;
    Ok(axum::Json(
        json!({"url": c.url, "title": c.title, "html": c.html, "text": c.text}),
    ))
}
