//! The documented examples are true: each route's example runs against the real router
//! (`/workspace` standing for a temp dir, the child base built from a fixed parent
//! environment). The machine's readings differ from machine to machine, so for them the
//! answer must have the documented shape (the same members, of the same types); the
//! environment answers must be the documented ones exactly.

use super::ROUTES;
use crate::server::AppState;
use crate::server::config::{LoadOptions, Settings};
use crate::server::endpoints::EndpointId;
use crate::server::example::{EXAMPLE_ROOT, Example, ExampleBody};
use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use std::collections::BTreeMap;
use tower::ServiceExt;

/// The routes whose answers are readings of the machine.
const READINGS: &[EndpointId] = &[
    EndpointId::SystemInfo,
    EndpointId::SystemMetrics,
    EndpointId::SystemDisk,
    EndpointId::SystemPorts,
];

fn settings() -> Settings {
    let parent: BTreeMap<String, String> = [
        ("HOME", "/home/agent"),
        ("LANG", "C.UTF-8"),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("SVC_SERVER_CHILD_ENV", ""),
        ("AWS_SECRET_ACCESS_KEY", "never shown: not passed on"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    Settings::load_with_env(&LoadOptions::default(), &parent).unwrap()
}

fn request(x: &Example, root: &str) -> http::Request<Body> {
    let builder = http::Request::builder()
        .method(x.method)
        .uri(x.target.replace(EXAMPLE_ROOT, root));
    match &x.body {
        ExampleBody::None => builder.body(Body::empty()),
        ExampleBody::Json(json) => builder
            .header("content-type", "application/json")
            .body(Body::from(json.replace(EXAMPLE_ROOT, root))),
        other => panic!("the system examples send JSON or nothing, not {other:?}"),
    }
    .unwrap()
}

/// The shape of a reading: each value replaced by its type; an array by the distinct
/// shapes of its items, in order of first appearance.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => {
            let mut seen: Vec<Value> = Vec::new();
            for item in items.iter().map(shape) {
                if !seen.contains(&item) {
                    seen.push(item);
                }
            }
            Value::Array(seen)
        }
        Value::String(_) => Value::from("string"),
        Value::Number(n) if n.is_u64() => Value::from("unsigned"),
        Value::Number(_) => Value::from("number"),
        other => other.clone(),
    }
}

#[tokio::test]
async fn every_example_answers_what_the_docs_show() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().display().to_string();
    for route in ROUTES {
        let x = route.example;
        let app = crate::server::router::app(AppState::with_settings(settings()));
        let response = app.clone().oneshot(request(x, &root)).await.unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let what = format!("{:?}: {}", route.id(), x.curl());
        assert_eq!(
            status,
            x.status,
            "{what}: {}",
            String::from_utf8_lossy(&body)
        );
        let served: Value = serde_json::from_slice(&body).unwrap();
        let documented: Value =
            serde_json::from_str(&x.answer.replace(EXAMPLE_ROOT, &root)).unwrap();
        if !READINGS.contains(&route.id()) {
            assert_eq!(served, documented, "{what}");
            continue;
        }
        let (served_shape, documented_shape) = (shape(&served), shape(&documented));
        if route.id() == EndpointId::SystemPorts {
            // Which sockets listen varies; each one listed has a documented shape.
            let listed = served_shape["ports"].as_array().unwrap();
            let known = documented_shape["ports"].as_array().unwrap();
            assert!(listed.iter().all(|s| known.contains(s)), "{what}: {served}");
            continue;
        }
        assert_eq!(served_shape, documented_shape, "{what}: {served}");
        if route.id() == EndpointId::SystemDisk {
            assert_eq!(served["path"], root.as_str(), "{what}");
        }
        if route.id() == EndpointId::SystemMetrics {
            assert_eq!(served["load"].as_array().unwrap().len(), 3, "{what}");
        }
    }
}
