//! The documented examples are true: they run in order against one real Chromium behind
//! the real router (the browser group switched on, loopback admitted), on the page below
//! served here at the address the examples call `127.0.0.1:8080`. Skipped, with the reason
//! printed, only when no browser binary is installed.

use super::ROUTES;
use crate::server::AppState;
use crate::server::config::Settings;
use crate::server::endpoints::Group;
use crate::server::example::{Example, ExampleBody};
use crate::services::browser::{Browser, Config, VIEWPORT};
use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

/// The page of the examples.
const PAGE: &str = r#"<html><head><title>Form</title></head><body><input id="name"><button id="go" onclick="document.getElementById('out').textContent='hello '+document.getElementById('name').value">Go</button><p id="out">waiting</p></body></html>"#;
const DOC_ADDR: &str = "127.0.0.1:8080";
const VOLATILE: &[&str] = &["pid"];

async fn serve_page() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

fn request(x: &Example, addr: &str) -> http::Request<Body> {
    let builder = http::Request::builder().method(x.method).uri(x.target);
    match &x.body {
        ExampleBody::None => builder.body(Body::empty()),
        ExampleBody::Json(json) => builder
            .header("content-type", "application/json")
            .body(Body::from(json.replace(DOC_ADDR, addr))),
        other => panic!("the browser examples send JSON or nothing, not {other:?}"),
    }
    .unwrap()
}

fn comparable(v: &Value, addr: &str) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !VOLATILE.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), comparable(v, addr)))
                .collect(),
        ),
        Value::String(s) => Value::String(s.replace(addr, DOC_ADDR)),
        other => other.clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_answers_what_the_docs_show() {
    let mut env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    env.insert("SVC_BROWSER_ALLOW_PRIVATE".into(), "loopback".into());
    let config = Config::from_env(&env).unwrap();
    if let Err(why) = crate::services::browser::find_binary(&config) {
        eprintln!("skipped: {why}");
        return;
    }
    let mut settings = Settings::defaults();
    settings.code_groups.insert(Group::Browser, true);
    let mut state = AppState::with_settings(settings);
    Arc::get_mut(&mut state).unwrap().browser = Browser::new(config);
    let app = crate::server::router::app(state.clone());
    let addr = serve_page().await;
    for route in ROUTES {
        let x = route.example;
        let response = app.clone().oneshot(request(x, &addr)).await.unwrap();
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
        if x.headers.contains(&("content-type", "image/png")) {
            let be = |at: usize| u32::from_be_bytes(body[at..at + 4].try_into().unwrap());
            assert_eq!(&body[..8], b"\x89PNG\r\n\x1a\n", "{what}");
            assert_eq!((be(16), be(20)), VIEWPORT, "{what}");
            let documented = format!("<the PNG: {}x{}>", VIEWPORT.0, VIEWPORT.1);
            assert_eq!(x.answer, documented, "{what}");
            continue;
        }
        let documented: Value = serde_json::from_str(x.answer).unwrap();
        let served: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            comparable(&served, &addr),
            comparable(&documented, &addr),
            "{what}"
        );
    }
    state.end_children().await;
}
