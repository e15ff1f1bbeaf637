//! What the terminal examples need of their own (the runner is `server::example_run`): a
//! fresh server state per example (a list shows exactly the terminal made for it), a temp
//! dir standing for `/workspace`; routes whose example names a terminal get one made first
//! (80 × 24, in that directory); the WebSocket handshake goes over a real socket to the
//! terminal router, and only its status and headers are compared. Id, pid and
//! `created_at` differ on every run.

use crate::server::config::{LoadOptions, Settings};
use crate::server::endpoints::EndpointId;
use crate::server::example::{EXAMPLE_ROOT, ExampleBody};
use crate::server::example_run::{Answer, Call, Harness};
use crate::server::route::Route;
use crate::server::{AppState, SharedState, router};
use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use std::collections::BTreeMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

/// The id the examples show.
const EXAMPLE_ID: &str = "pty_5f2c0e8b9a1d4c7e6b3a2f10";

pub(crate) struct Examples {
    temp: tempfile::TempDir,
    /// The state of the example running.
    state: Option<SharedState>,
}

fn state() -> SharedState {
    let settings = Settings::load_with_env(&LoadOptions::default(), &BTreeMap::new()).unwrap();
    AppState::with_settings(settings)
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
async fn handshake(state: &SharedState, route: &Route, call: &Call) -> Answer {
    let x = route.example;
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
        call.target(x)
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
    let mut headers = http::HeaderMap::new();
    for (name, value) in lines.filter_map(|l| l.split_once(": ")) {
        headers.append(
            http::HeaderName::try_from(name).unwrap(),
            http::HeaderValue::try_from(value).unwrap(),
        );
    }
    Answer {
        status,
        headers,
        body: Default::default(),
    }
}

impl Harness for Examples {
    const VOLATILE: &'static [&'static str] = &["id", "pid", "created_at"];

    async fn start() -> Result<Self, String> {
        Ok(Self {
            temp: tempfile::tempdir().unwrap(),
            state: None,
        })
    }

    async fn prepare(&mut self, route: &Route) -> Call {
        let root = self.temp.path().display().to_string();
        let state = state();
        let app = router::app(state.clone());
        let mut swaps = vec![(EXAMPLE_ROOT, root.clone())];
        if route.id() != EndpointId::PtyCreate {
            swaps.push((EXAMPLE_ID, make_terminal(&app, &root).await));
        }
        self.state = Some(state);
        Call { app, swaps }
    }

    async fn send(&mut self, route: &Route, call: &Call) -> Option<Answer> {
        let state = self.state.as_ref().unwrap();
        if route.id() == EndpointId::PtyConnect {
            return Some(handshake(state, route, call).await);
        }
        None
    }

    /// The handshake has no body to compare.
    fn compare(&self, route: &Route, _: &Call, _: &Answer, _: &str) -> bool {
        route.id() == EndpointId::PtyConnect
    }

    async fn finish(&mut self) {
        if let Some(state) = self.state.take() {
            state.end_children().await;
        }
    }
}
