//! Two engines on loopback in this process: the remote serves the `local` provider from its
//! own state folder with its own token; the front serves the `rest` provider pointed at it.
//! The tests drive the front over HTTP, SSE and WebSocket, and look at the remote directly
//! to see that the work happened there. This file: the engines and the connection's
//! failures; `tests/`: the route groups.

mod commands;
mod download;
mod files;
mod sandboxes;

use super::{RestProvider, Timeouts};
use crate::engine::app::app;
use crate::engine::local::LocalProvider;
use crate::engine::provider::Provider;
use crate::engine::state::EngineState;
use crate::error::engine::Code;
use crate::wire::{CONNECTION_HEADER, Connection};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const FRONT_TOKEN: &str = "front-token";
const REMOTE_TOKEN: &str = "remote-token";

/// An engine of `providers` on a free loopback port, served until the test ends over the
/// daemon's connections (`zero_copy`'s, whose uploads the providers can arm).
async fn serve(providers: Vec<Arc<dyn Provider>>, token: &str) -> SocketAddr {
    let state = EngineState::new(token.into(), providers, Duration::from_secs(600));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app(Arc::new(state));
    let limits = crate::connections::Limits::new(
        64,
        crate::connections::DEFAULT_HEADER_TIMEOUT,
        Code::Busy.status(),
        b"{}",
    );
    tokio::spawn(crate::connections::serve(
        crate::zero_copy::Listener(listener),
        limits,
        crate::zero_copy::with_channel(router),
        std::future::pending(),
    ));
    addr
}

pub(super) struct Pair {
    pub front: SocketAddr,
    pub remote: SocketAddr,
    pub http: reqwest::Client,
    _state: tempfile::TempDir,
}

/// A remote engine (`local`, its own folder and token) and a front (`rest`) before it.
pub(super) async fn pair() -> Pair {
    pair_with(Timeouts::default()).await
}

async fn pair_with(timeouts: Timeouts) -> Pair {
    let state = tempfile::tempdir().unwrap();
    let local: Arc<dyn Provider> = LocalProvider::open(state.path()).unwrap();
    let remote = serve(vec![local], REMOTE_TOKEN).await;
    let front = serve(
        vec![Arc::new(RestProvider::with_timeouts(timeouts))],
        FRONT_TOKEN,
    )
    .await;
    Pair {
        front,
        remote,
        http: reqwest::Client::builder().no_proxy().build().unwrap(),
        _state: state,
    }
}

/// The front's connection to a remote at `api_url` with `api_key`.
fn rest(api_url: Option<String>, api_key: Option<&str>) -> Connection {
    Connection {
        provider: Some("rest".into()),
        api_url,
        api_key: api_key.map(str::to_owned),
        ..Connection::default()
    }
}

impl Pair {
    pub fn conn(&self) -> Connection {
        rest(Some(format!("http://{}", self.remote)), Some(REMOTE_TOKEN))
    }

    /// A request to the front with its token and the `rest` connection.
    pub fn front(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.front_as(method, path, &self.conn())
    }

    pub fn front_as(
        &self,
        method: Method,
        path: &str,
        conn: &Connection,
    ) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("http://{}/v1{path}", self.front))
            .bearer_auth(FRONT_TOKEN)
            .header(CONNECTION_HEADER, conn.header_value())
    }

    /// The same request straight to the remote, as its own `local` client.
    pub fn remote(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("http://{}/v1{path}", self.remote))
            .bearer_auth(REMOTE_TOKEN)
            .header(
                CONNECTION_HEADER,
                super::remote::default_remote().header_value(),
            )
    }

    /// A sandbox made through the front (60 s, so a failed test leaves nothing for long).
    pub async fn sandbox(&self) -> String {
        let (status, record) = answer(
            self.front(Method::POST, "/sandboxes")
                .json(&json!({"timeout": 60})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{record}");
        record["sandbox_id"].as_str().unwrap().to_owned()
    }

    pub async fn kill(&self, id: &str) {
        let (status, body) = answer(self.front(Method::DELETE, &format!("/sandboxes/{id}"))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
}

/// An SSE answer read event by event (each within 20 s).
pub(super) struct Events {
    response: reqwest::Response,
    parser: crate::services::sse_parser::SseParser,
    queue: std::collections::VecDeque<crate::services::sse_parser::SseEvent>,
}

impl Events {
    pub async fn open(request: reqwest::RequestBuilder) -> Events {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let kind = response.headers()[http::header::CONTENT_TYPE]
            .to_str()
            .unwrap();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        Events {
            response,
            parser: crate::services::sse_parser::SseParser::new(),
            queue: Default::default(),
        }
    }

    /// The next event's name and data, `None` when the stream has ended.
    pub async fn next(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(raw) = self.queue.pop_front() {
                return Some((raw.event, serde_json::from_str(&raw.data).unwrap()));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.response.chunk())
                .await
                .expect("an event within 20 s")
                .unwrap()?;
            self.queue.extend(self.parser.push(&chunk));
        }
    }

    /// Every event left, by name.
    pub async fn rest(mut self) -> Vec<(String, Value)> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await {
            all.push(event);
        }
        all
    }
}

/// The status and JSON body of a request.
pub(super) async fn answer(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let bytes = response.bytes().await.unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&bytes)));
    (status, body)
}

/// The code of an error answer, after checking the body is the engine's.
pub(super) fn code(status: StatusCode, body: &Value) -> Code {
    let code = Code::parse(body["error"]["code"].as_str().unwrap_or_default())
        .unwrap_or_else(|| panic!("not an engine error: {status} {body}"));
    assert_eq!(status, code.status(), "{body}");
    assert_eq!(body["error"]["type"], code.class(), "{body}");
    code
}

#[tokio::test]
async fn a_wrong_api_key_is_e1002_and_the_key_is_never_echoed() {
    let pair = pair().await;
    let conn = rest(
        Some(format!("http://{}", pair.remote)),
        Some("not-the-token-xyz"),
    );
    let (status, body) = answer(
        pair.front_as(Method::POST, "/sandboxes", &conn)
            .json(&json!({})),
    )
    .await;
    assert_eq!(code(status, &body), Code::ProviderAuth);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused the api_key")
    );
    assert!(!body.to_string().contains("not-the-token-xyz"), "{body}");
}

#[tokio::test]
async fn a_missing_or_bad_connection_field_is_e4002_naming_it() {
    let pair = pair().await;
    let remote = Some(format!("http://{}", pair.remote));
    let mut chained = pair.conn();
    chained.provider_options = json!({"remote": {"provider": "local", "colour": "red"}})
        .as_object()
        .cloned();
    for (conn, field) in [
        (rest(None, Some(REMOTE_TOKEN)), "api_url"),
        (
            rest(Some("ftp://127.0.0.1:1".into()), Some(REMOTE_TOKEN)),
            "api_url",
        ),
        (rest(remote.clone(), None), "api_key"),
        (rest(remote, Some("bad\nkey")), "api_key"),
        (chained, "provider_options.remote"),
    ] {
        let (status, body) = answer(pair.front_as(Method::GET, "/sandboxes", &conn)).await;
        assert_eq!(code(status, &body), Code::Configuration, "{field}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{field}: {message}");
        assert!(!message.contains("bad\nkey"), "{message}");
    }
}

#[tokio::test]
async fn a_remote_that_is_not_there_is_e9001_naming_it() {
    let pair = pair().await;
    let gone = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", gone.local_addr().unwrap());
    drop(gone);
    let conn = rest(Some(url.clone()), Some(REMOTE_TOKEN));
    let (status, body) = answer(pair.front_as(Method::GET, "/sandboxes", &conn)).await;
    assert_eq!(code(status, &body), Code::ProviderFailed);
    assert!(
        body["error"]["message"].as_str().unwrap().contains(&url),
        "{body}"
    );
}

#[tokio::test]
async fn a_remote_that_never_answers_is_e9002_in_time() {
    let timeouts = Timeouts {
        connect: Duration::from_secs(1),
        call: Duration::from_millis(300),
        idle: Duration::from_millis(300),
    };
    let pair = pair_with(timeouts).await;
    // Accepts connections (the kernel completes them) and never reads a byte.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let conn = rest(
        Some(format!("http://{}", silent.local_addr().unwrap())),
        Some(REMOTE_TOKEN),
    );
    let calls = [
        pair.front_as(Method::POST, "/sandboxes", &conn)
            .json(&json!({})),
        pair.front_as(Method::GET, "/sandboxes/sb_x/files/content?path=a", &conn),
    ];
    for (request, path) in calls.into_iter().zip(["create", "read"]) {
        let started = Instant::now();
        let (status, body) = answer(request).await;
        assert_eq!(code(status, &body), Code::ProviderTimeout, "{path}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
    drop(silent);
}

#[tokio::test]
async fn an_https_remotes_terminal_speaks_tls_and_a_failed_handshake_is_e9001_naming_it() {
    use tokio::io::AsyncReadExt;
    // A listener that speaks no TLS: it keeps what the front sends first, then hangs up.
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", plain.local_addr().unwrap());
    let first = tokio::spawn(async move {
        let (mut socket, _) = plain.accept().await.unwrap();
        let mut head = [0u8; 3];
        socket.read_exact(&mut head).await.unwrap();
        head
    });
    let conn = rest(Some(url.clone()), Some(REMOTE_TOKEN));
    let remote =
        super::remote::Remote::of(&conn, reqwest::Client::new(), Timeouts::default()).unwrap();
    let opened = super::terminal::open(
        &remote,
        "sb_x",
        &crate::engine::provider::TerminalOpen::new(80, 24, "/bin/sh"),
    )
    .await;
    let Err(e) = opened else {
        panic!("a terminal opened on a listener that speaks no TLS")
    };
    // A TLS handshake record (0x16) of TLS 1.x (0x03 ..): a ClientHello, not a plain upgrade.
    let head = tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(head[..2], [0x16, 0x03], "{head:?}");
    assert_eq!(e.code, Code::ProviderFailed, "{}", e.message);
    assert!(e.message.contains(&url), "{}", e.message);
}

#[tokio::test]
async fn the_front_lists_the_rest_provider() {
    let pair = pair().await;
    let (status, body) = answer(pair.front(Method::GET, "/providers")).await;
    assert_eq!(status, StatusCode::OK);
    let record = &body["providers"][0];
    assert_eq!(
        (record["id"].as_str(), record["kind"].as_str()),
        (Some("rest"), Some("rest"))
    );
    assert_eq!(
        record["features"].as_array().unwrap().len(),
        crate::wire::Feature::ALL.len()
    );
    assert_eq!(record["error"], Value::Null);
}
