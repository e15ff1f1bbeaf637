//! The engine's HTTP side against a fake provider (`oneshot`, no socket): the door, the
//! table-built router, the feature gate, the connection, sessions. The `local` provider has
//! its own tests; the conformance suite checks the whole engine from outside.

use super::app::app;
use super::provider::{Provider, ProviderResult, Sandbox};
use super::routes::ROUTES;
use super::state::EngineState;
use crate::error::engine::{Code, EngineError};
use crate::wire::*;
use async_trait::async_trait;
use axum::body::Body;
use http::{Request, StatusCode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tower::ServiceExt;

const TOKEN: &str = "secret-token";

#[derive(Default)]
struct Fake {
    connects: AtomicUsize,
    /// Bumped when the backend forgets every handle handed out so far (they answer E2009).
    generation: Arc<AtomicUsize>,
}

struct FakeSandbox {
    id: String,
    /// The backend's generation when this handle was made.
    made_in: usize,
    backend: Arc<AtomicUsize>,
}

fn record(id: &str) -> SandboxRecord {
    SandboxRecord {
        sandbox_id: id.into(),
        provider: "fake".into(),
        template: "base".into(),
        status: SandboxStatus::Running,
        created_at: "2026-01-01T00:00:00Z".into(),
        expires_at: "2026-01-01T00:05:00Z".into(),
        metadata: BTreeMap::new(),
        envs_keys: vec![],
        cpu: None,
        memory: None,
        disk: None,
        secure: true,
        limits_enforced: BTreeMap::new(),
        isolation: None,
        allow_internet_access: None,
        max_processes: None,
    }
}

#[async_trait]
impl Provider for Fake {
    fn record(&self) -> ProviderRecord {
        ProviderRecord {
            id: "local".into(),
            name: "fake".into(),
            version: "0".into(),
            kind: ProviderKind::Node,
            trust: "builtin".into(),
            features: vec![Feature::Sandboxes],
            error: None,
        }
    }

    async fn create(&self, _: &Connection, body: CreateSandbox) -> ProviderResult<SandboxRecord> {
        let mut r = record("sb_1");
        r.secure = body.secure.unwrap_or(false);
        Ok(r)
    }

    async fn list(&self, _: &Connection, _: &ListSandboxes) -> ProviderResult<Vec<SandboxRecord>> {
        Ok(vec![record("sb_1")])
    }

    async fn connect(&self, conn: &Connection, id: &str) -> ProviderResult<Arc<dyn Sandbox>> {
        self.connects.fetch_add(1, Ordering::SeqCst);
        if id != "sb_1" || conn.api_key.as_deref() == Some("other") {
            return Err(EngineError::new(
                Code::SandboxNotFound,
                format!("no sandbox `{id}`"),
            ));
        }
        // A new handle is fresh even after the backend forgot the old ones.
        Ok(Arc::new(FakeSandbox {
            id: id.into(),
            made_in: self.generation.load(Ordering::SeqCst),
            backend: self.generation.clone(),
        }))
    }
}

#[async_trait]
impl Sandbox for FakeSandbox {
    async fn info(&self) -> ProviderResult<SandboxRecord> {
        if self.backend.load(Ordering::SeqCst) != self.made_in {
            return Err(EngineError::new(Code::SandboxNotFound, "forgotten"));
        }
        Ok(record(&self.id))
    }

    async fn kill(&self) -> ProviderResult<SandboxRecord> {
        let mut r = record(&self.id);
        r.status = SandboxStatus::Stopped;
        Ok(r)
    }
}

fn state(fake: Arc<Fake>) -> Arc<EngineState> {
    Arc::new(EngineState::new(
        TOKEN.into(),
        vec![fake],
        Duration::from_secs(600),
    ))
}

fn request(method: &str, path: &str) -> http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1:4000")
        .header("authorization", format!("Bearer {TOKEN}"))
}

async fn send(state: &Arc<EngineState>, req: Request<Body>) -> (StatusCode, Value) {
    let response = app(state.clone()).oneshot(req).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn get(state: &Arc<EngineState>, path: &str) -> (StatusCode, Value) {
    send(state, request("GET", path).body(Body::empty()).unwrap()).await
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn every_row_is_routed_and_nothing_else() {
    let s = state(Arc::default());
    assert_eq!(ROUTES.len(), 34);
    // Building the router binds every row (it panics on a row without a handler).
    let (status, body) = get(&s, "/v1/nowhere").await;
    assert_eq!(status, 404);
    assert_eq!(code(&body), "E2000");
    assert_eq!(body["error"]["message"], "Not found: GET /v1/nowhere");
    let (status, body) = send(
        &s,
        request("PATCH", "/v1/health").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (404, "E2000"));
}

#[tokio::test]
async fn the_door_refuses_origins_foreign_hosts_and_bad_tokens() {
    let s = state(Arc::default());
    let (status, body) = get(&s, "/v1/health").await;
    assert_eq!(status, 200);
    assert_eq!(body["protocol"], "svc-engine/1");
    let with = |name: &str, value: &str| {
        request("GET", "/v1/health")
            .header(name, value)
            .body(Body::empty())
            .unwrap()
    };
    let (status, body) = send(&s, with("origin", "http://127.0.0.1:4000")).await;
    assert_eq!((status.as_u16(), code(&body)), (403, "E1003"));
    assert_eq!(body["error"]["type"], "ForbiddenError");
    // A second Host, and a single foreign one.
    let (status, body) = send(&s, with("host", "localhost.evil.example")).await;
    assert_eq!((status.as_u16(), code(&body)), (403, "E1003"));
    let foreign = Request::get("/v1/health")
        .header("host", "evil.example")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let (status, body) = send(&s, foreign).await;
    assert_eq!((status.as_u16(), code(&body)), (403, "E1003"));
    // A second token, and a single wrong one.
    let (status, body) = send(&s, with("authorization", "Bearer nope")).await;
    assert_eq!((status.as_u16(), code(&body)), (401, "E1001"));
    let wrong = Request::get("/v1/health")
        .header("host", "127.0.0.1:4000")
        .header("authorization", "Bearer nope")
        .body(Body::empty())
        .unwrap();
    let (status, body) = send(&s, wrong).await;
    assert_eq!((status.as_u16(), code(&body)), (401, "E1001"));
    // Refused before routing: an unknown path without a token is 401, not 404.
    let bare = Request::get("/v1/nowhere")
        .header("host", "[::1]:4000")
        .body(Body::empty())
        .unwrap();
    let (status, _) = send(&s, bare).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn an_undeclared_feature_is_501_e8004_and_an_unknown_provider_400() {
    let s = state(Arc::default());
    let run = request("POST", "/v1/sandboxes/sb_1/commands/run")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"cmd":"true"}"#))
        .unwrap();
    let (status, body) = send(&s, run).await;
    assert_eq!((status.as_u16(), code(&body)), (501, "E8004"));
    assert_eq!(body["error"]["type"], "FeatureNotSupportedError");
    let other = Connection {
        provider: Some("nope".into()),
        ..Connection::default()
    };
    let req = request("GET", "/v1/sandboxes")
        .header(CONNECTION_HEADER, other.header_value())
        .body(Body::empty())
        .unwrap();
    let (status, body) = send(&s, req).await;
    assert_eq!((status.as_u16(), code(&body)), (400, "E4002"));
    // Not base64url; base64url of an array (serde would read it as the fields in order).
    for bad in ["%%%", "WyJsb2NhbCJd"] {
        let req = request("GET", "/v1/sandboxes")
            .header(CONNECTION_HEADER, bad)
            .body(Body::empty())
            .unwrap();
        let (status, body) = send(&s, req).await;
        assert_eq!((status.as_u16(), code(&body)), (400, "E4002"), "{bad}");
    }
}

#[tokio::test]
async fn create_validates_every_field_before_the_provider() {
    let s = state(Arc::default());
    let post = |body: &str| {
        request("POST", "/v1/sandboxes")
            .header("content-type", "application/json")
            .body(Body::from(body.to_owned()))
            .unwrap()
    };
    for bad in [
        r#"{"timeout": 0}"#,
        r#"{"timeout": 86401}"#,
        r#"{"timeout": -1}"#,
        r#"{"cpu": 0}"#,
        r#"{"envs": {"1X": "y"}}"#,
        r#"{"colour": "red"}"#,
        r#"[1]"#,
        r#"{"template": ""}"#,
    ] {
        let (status, body) = send(&s, post(bad)).await;
        assert_eq!((status.as_u16(), code(&body)), (400, "E4001"), "{bad}");
    }
    let (status, body) = send(&s, post(r#"{"timeout": 86400, "api_key": "k"}"#)).await;
    assert_eq!(status, 201, "{body}");
    // `secure` defaults to true.
    assert_eq!(body["secure"], true);
}

#[tokio::test]
async fn sessions_are_per_account_reused_and_rebuilt_once() {
    let fake = Arc::new(Fake::default());
    let s = state(fake.clone());
    for _ in 0..3 {
        let (status, _) = get(&s, "/v1/sandboxes/sb_1").await;
        assert_eq!(status, 200);
    }
    assert_eq!(fake.connects.load(Ordering::SeqCst), 1);
    let (_, health) = get(&s, "/v1/health").await;
    assert_eq!(health["sessions"], 1);
    // Another account: its own session, and it cannot see the sandbox.
    let other = Connection {
        api_key: Some("other".into()),
        ..Connection::default()
    };
    let req = request("GET", "/v1/sandboxes/sb_1")
        .header(CONNECTION_HEADER, other.header_value())
        .body(Body::empty())
        .unwrap();
    let (status, body) = send(&s, req).await;
    assert_eq!((status.as_u16(), code(&body)), (404, "E2009"));
    // The backend forgets the session's handle: rebuilt through connect, once.
    fake.generation.fetch_add(1, Ordering::SeqCst);
    let (status, body) = get(&s, "/v1/sandboxes/sb_1").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(fake.connects.load(Ordering::SeqCst), 3);
    let (status, _) = get(&s, "/v1/sandboxes/sb_1/running").await;
    assert_eq!(status, 200);
    // ... and the rebuilt session is reused.
    assert_eq!(fake.connects.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn bodies_and_queries_are_typed() {
    let s = state(Arc::default());
    let (status, body) = get(&s, "/v1/sandboxes?limit=0").await;
    assert_eq!((status.as_u16(), code(&body)), (400, "E4001"));
    let (status, body) = get(&s, "/v1/sandboxes?limit=5&limit=6").await;
    assert_eq!((status.as_u16(), code(&body)), (400, "E4001"));
    let (status, body) = get(&s, "/v1/sandboxes?colour=red").await;
    assert_eq!((status.as_u16(), code(&body)), (400, "E4001"));
    let (status, body) = get(&s, "/v1/sandboxes?status=running&limit=5").await;
    assert_eq!(status, 200, "{body}");
    // A connection field in the body that contradicts the header.
    let header = Connection {
        api_key: Some("a".into()),
        ..Connection::default()
    };
    let req = request("POST", "/v1/sandboxes")
        .header(CONNECTION_HEADER, header.header_value())
        .body(Body::from(r#"{"api_key": "b"}"#))
        .unwrap();
    let (status, body) = send(&s, req).await;
    assert_eq!((status.as_u16(), code(&body)), (400, "E4002"));
}
