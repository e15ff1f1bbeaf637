//! The documented examples are true: each route's example runs against the real router.
//! `duration_ms` varies by run; the interpreters' versions vary by machine, so
//! `code_languages` must list the documented languages with the same members (and a
//! version string wherever one is installed that prints one).

use super::ROUTES;
use crate::server::AppState;
use crate::server::config::{LoadOptions, Settings};
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use std::collections::BTreeMap;
use tower::ServiceExt;

/// The server's own environment for the child base (the interpreters are on its `PATH`),
/// with the group switched on.
fn settings() -> Settings {
    let mut env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| !k.starts_with("SVC_"))
        .collect();
    env.insert("SVC_SERVER_ENABLED_GROUPS".into(), "dev_tools".into());
    Settings::load_with_env(&LoadOptions::default(), &env).unwrap()
}

fn request(x: &Example) -> http::Request<Body> {
    let builder = http::Request::builder().method(x.method).uri(x.target);
    match &x.body {
        ExampleBody::None => builder.body(Body::empty()),
        ExampleBody::Json(json) => builder
            .header("content-type", "application/json")
            .body(Body::from(*json)),
        other => panic!("the dev_tools examples send JSON or nothing, not {other:?}"),
    }
    .unwrap()
}

fn without_duration(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(map) = v.as_object_mut() {
        map.remove("duration_ms");
    }
    v
}

#[tokio::test]
async fn every_example_answers_what_the_docs_show() {
    for route in ROUTES {
        let x = route.example;
        let app = crate::server::router::app(AppState::with_settings(settings()));
        let response = app.clone().oneshot(request(x)).await.unwrap();
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
        let documented: Value = serde_json::from_str(x.answer).unwrap();
        if route.id() == EndpointId::CodeLanguages {
            let names = |v: &Value| -> Vec<Value> {
                v["languages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["name"].clone())
                    .collect()
            };
            assert_eq!(names(&served), names(&documented), "{what}");
            for l in served["languages"].as_array().unwrap() {
                let keys: Vec<&String> = l.as_object().unwrap().keys().collect();
                assert_eq!(keys, ["name", "version", "installed", "allowed"], "{what}");
                if l["installed"] == true && l["name"] != "sh" {
                    assert!(l["version"].is_string(), "{what}: {l}");
                }
            }
            continue;
        }
        assert_eq!(
            without_duration(&served),
            without_duration(&documented),
            "{what}"
        );
    }
}
