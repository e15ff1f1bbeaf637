//! The browser group (opt-in): one real Chromium per server, driven over DevTools by the
//! browser service (`services::browser`): start, status and stop, navigate under the URL
//! rules, click and type by CSS selector, a PNG screenshot, the page's content. One file
//! per operation, each declaring its [`Route`] with its documented example; `errors.rs`
//! maps the service's errors to the table.

mod click;
mod content;
mod errors;
mod navigate;
mod screenshot;
mod start;
mod status;
mod stop;
mod type_text;

#[cfg(test)]
pub(crate) mod examples;

use crate::server::SharedState;
use crate::server::openapi::op::component;
pub(crate) use crate::server::route::Route;
use serde_json::{Map, Value};

/// In the order the examples run against one browser (examples.rs).
pub(crate) const ROUTES: &[&Route] = &[
    &start::ROUTE,
    &navigate::ROUTE,
    &type_text::ROUTE,
    &click::ROUTE,
    &content::ROUTE,
    &screenshot::ROUTE,
    &status::ROUTE,
    &stop::ROUTE,
];

/// `{running, pid?, url?, title?, reason?}`: absent members are left out.
pub(crate) fn status_json(s: &crate::services::browser::Status) -> Value {
    let mut map = Map::new();
    map.insert("running".into(), Value::Bool(s.running));
    if let Some(pid) = s.pid {
        map.insert("pid".into(), Value::from(pid));
    }
    if let Some(url) = &s.url {
        map.insert("url".into(), Value::from(url.as_str()));
    }
    if let Some(title) = &s.title {
        map.insert("title".into(), Value::from(title.as_str()));
    }
    if let Some(reason) = &s.reason {
        map.insert("reason".into(), Value::from(reason.as_str()));
    }
    Value::Object(map)
}

// What `status_json` writes, for the OpenAPI document.
component!(pub(super) BrowserStatus, {
    "type": "object",
    "required": ["running"],
    "properties": {
        "running": {"type": "boolean"},
        "pid": {"type": "integer"},
        "url": {"type": "string"},
        "title": {"type": "string"},
        "reason": {"type": "string", "description": "How a browser that died ended."},
    },
    "additionalProperties": false,
});

// What `location_json` writes, for the OpenAPI document.
component!(pub(super) BrowserLocation, {
    "type": "object",
    "properties": {
        "url": {"type": "string"},
        "title": {"type": "string"},
        "reason": {"type": "string"},
    },
    "additionalProperties": false,
});

/// After a click or typing: where the page is now.
pub(crate) async fn location_json(app: &SharedState) -> Value {
    let s = app.browser.status().await;
    let mut v = status_json(&s);
    if let Value::Object(map) = &mut v {
        map.remove("running");
        map.remove("pid");
    }
    v
}
