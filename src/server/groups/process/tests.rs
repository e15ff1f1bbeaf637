//! The documented examples are true: each route's example runs against the real router
//! (`/workspace` standing for a temp dir), and the answer is the one `docs/endpoints.md`
//! shows, apart from what varies by run (pids, times, durations).

use super::ROUTES;
use crate::server::AppState;
use crate::server::config::Settings;
use crate::server::example::{EXAMPLE_ROOT, Example, ExampleBody};
use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

const VOLATILE: &[&str] = &["pid", "started_at", "ended_at", "duration_ms"];

fn request(x: &Example, root: &str) -> http::Request<Body> {
    let builder = http::Request::builder()
        .method(x.method)
        .uri(x.target.replace(EXAMPLE_ROOT, root));
    match &x.body {
        ExampleBody::None => builder.body(Body::empty()),
        ExampleBody::Json(json) => builder
            .header("content-type", "application/json")
            .body(Body::from(json.replace(EXAMPLE_ROOT, root))),
        other => panic!("the process examples send JSON or nothing, not {other:?}"),
    }
    .unwrap()
}

fn comparable(v: &Value, root: &str) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !VOLATILE.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), comparable(v, root)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| comparable(i, root)).collect()),
        Value::String(s) => Value::String(s.replace(root, EXAMPLE_ROOT)),
        other => other.clone(),
    }
}

/// An event stream's frames, each data member made comparable.
fn comparable_sse(text: &str, root: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|frame| {
            let mut event = String::new();
            let mut data = Value::Null;
            for line in frame.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = name.to_owned();
                } else if let Some(json) = line.strip_prefix("data: ") {
                    data = comparable(&serde_json::from_str(json).unwrap(), root);
                }
            }
            (event, data)
        })
        .collect()
}

#[tokio::test]
async fn every_example_answers_what_the_docs_show() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().display().to_string();
    for route in ROUTES {
        let x = route.example;
        // A server of its own per example: what one starts is not in another's list.
        let app = crate::server::router::app(AppState::with_settings(Settings::defaults()));
        let response = app.clone().oneshot(request(x, &root)).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let what = format!("{:?}: {}", route.id(), x.curl());
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, x.status, "{what}: {text}");
        for (name, value) in x.headers {
            assert_eq!(
                headers.get(*name).and_then(|v| v.to_str().ok()),
                Some(*value),
                "{what}: header {name}"
            );
        }
        match serde_json::from_str::<Value>(x.answer) {
            Ok(documented) => {
                let served: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(
                    comparable(&served, &root),
                    comparable(&documented, &root),
                    "{what}"
                );
            }
            Err(_) => assert_eq!(
                comparable_sse(&text, &root),
                comparable_sse(x.answer, &root),
                "{what}"
            ),
        }
    }
}
