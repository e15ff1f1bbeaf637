//! The documented examples are true: each route's example runs against the real routers of
//! a fresh server state (the HTTP routes through the main router, the WebSocket handshake
//! over a real socket to the terminal router), with a temp dir standing for `/workspace`.
//! Routes whose example names a terminal get one made first (80 × 24, in that directory);
//! the answer is the one `docs/endpoints.md` shows, its id, pid and `created_at` aside.

use super::ROUTES;
use crate::server::config::{LoadOptions, Settings};
use crate::server::endpoints::EndpointId;
use crate::server::example::{EXAMPLE_ROOT, Example, ExampleBody};
use crate::server::{AppState, SharedState, router};
use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use std::collections::BTreeMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

/// The id the examples show.
const EXAMPLE_ID: &str = "pty_5f2c0e8b9a1d4c7e6b3a2f10";

fn state() -> SharedState {
    let settings = Settings::load_with_env(&LoadOptions::default(), &BTreeMap::new()).unwrap();
    AppState::with_settings(settings)
}

fn request(x: &Example, root: &str, id: &str) -> http::Request<Body> {
    let target = x.target.replace(EXAMPLE_ID, id);
    let builder = http::Request::builder().method(x.method).uri(target);
    match &x.body {
        ExampleBody::None => builder.body(Body::empty()),
        ExampleBody::Json(json) => builder
            .header("content-type", "application/json")
            .body(Body::from(json.replace(EXAMPLE_ROOT, root))),
        other => panic!("no terminal HTTP example sends {other:?}"),
    }
    .unwrap()
}

/// Id, pid and `created_at` dropped (they differ on every run), the temp dir spelled
/// `/workspace`.
fn comparable(v: &Value, root: &str) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "id" | "pid" | "created_at"))
                .map(|(k, v)| (k.clone(), comparable(v, root)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| comparable(i, root)).collect()),
        Value::String(s) => Value::String(s.replace(root, EXAMPLE_ROOT)),
        other => other.clone(),
    }
}

/// A terminal in `root` through the route, as the examples that name one assume.
async fn make_terminal(app: &axum::Router, root: &str) -> String {
    let body = serde_json::json!({"cwd": root}).to_string();
    let req = http::Request::post("/pty")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let response = app.clone().oneshot(req).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let record: Value = serde_json::from_slice(&body).unwrap();
    record["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{record}"))
        .to_owned()
}

/// The WebSocket handshake of the example over a real socket: the status and headers.
async fn handshake(state: &SharedState, x: &Example, id: &str) -> (u16, Vec<(String, String)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server =
        tokio::spawn(axum::serve(listener, router::terminal_app(state.clone())).into_future());
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let ExampleBody::Headers(headers) = &x.body else {
        panic!("the connect example sends the handshake headers");
    };
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {addr}\r\n",
        x.method,
        x.target.replace(EXAMPLE_ID, id)
    );
    for (name, value) in *headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(tcp.read(&mut byte).await.unwrap(), 1, "{answer:?}");
        answer.push(byte[0]);
    }
    server.abort();
    let text = String::from_utf8(answer).unwrap();
    let mut lines = text.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
        .collect();
    (status, headers)
}

#[tokio::test]
async fn every_example_answers_what_the_docs_show() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().display().to_string();
    for route in ROUTES {
        let x = route.example;
        let what = format!("{:?}: {}", route.id(), x.curl());
        // A fresh server per example: the list shows exactly the terminal made for it.
        let state = state();
        let app = router::app(state.clone());
        let id = match route.id() {
            EndpointId::PtyCreate => String::new(),
            _ => make_terminal(&app, &root).await,
        };
        if route.id() == EndpointId::PtyConnect {
            let (status, headers) = handshake(&state, x, &id).await;
            assert_eq!(status, x.status, "{what}");
            for (name, value) in x.headers {
                let served = headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
                assert_eq!(
                    served.map(|v| v.to_ascii_lowercase()),
                    Some(value.to_ascii_lowercase()),
                    "{what}: {name}"
                );
            }
            state.end_children().await;
            continue;
        }
        let response = app.clone().oneshot(request(x, &root, &id)).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            status,
            x.status,
            "{what}: {}",
            String::from_utf8_lossy(&body)
        );
        for (name, value) in x.headers {
            assert_eq!(
                headers.get(*name).and_then(|v| v.to_str().ok()),
                Some(*value),
                "{what}: header {name}"
            );
        }
        let served: Value = serde_json::from_slice(&body).unwrap();
        let documented: Value = serde_json::from_str(x.answer).unwrap();
        assert_eq!(
            comparable(&served, &root),
            comparable(&documented, &root),
            "{what}"
        );
        state.end_children().await;
    }
}
