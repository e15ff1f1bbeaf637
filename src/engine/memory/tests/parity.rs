//! Clients cannot tell `memory` from `local`: one engine with both, in one state folder,
//! answers the same requests the same (status and body, once the sandbox id, the times,
//! a directory's size and the provider's name are set aside), a watch's event included.

use crate::engine::app::app;
use crate::engine::local::LocalProvider;
use crate::engine::provider::Provider;
use crate::engine::state::EngineState;
use crate::wire::Connection;
use axum::body::Body;
use futures::StreamExt;
use http::Request;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

const TOKEN: &str = "parity-token";

/// A request: method, path after `/v1/sandboxes/<id>` (or the whole path when it starts
/// with `/v1`), and a JSON or raw body.
type Step = (
    &'static str,
    &'static str,
    Option<Value>,
    Option<&'static [u8]>,
);

fn steps() -> Vec<Step> {
    let j = |v: Value| Some(v);
    let r = |bytes: &'static [u8]| Some(bytes);
    vec![
        (
            "PUT",
            "/files/content?path=data/blob.bin",
            None,
            r(b"hello"),
        ),
        (
            "PUT",
            "/files/content?path=data/blob.bin&overwrite=false",
            None,
            r(b"again"),
        ),
        (
            "PUT",
            "/files/content?path=no/such/f.txt&parents=false",
            None,
            r(b"x"),
        ),
        (
            "POST",
            "/files/mkdir",
            j(json!({"path": "adir/inner"})),
            None,
        ),
        ("PUT", "/files/content?path=adir", None, r(b"x")),
        (
            "PUT",
            "/files/content?path=data/blob.bin/below",
            None,
            r(b"x"),
        ),
        ("GET", "/files/list?path=.&depth=2", None, None),
        ("GET", "/files/list?path=data/blob.bin", None, None),
        ("GET", "/files/list?path=nowhere", None, None),
        ("GET", "/files/info?path=data/blob.bin", None, None),
        ("GET", "/files/info?path=.", None, None),
        ("GET", "/files/info?path=data/nothing", None, None),
        ("GET", "/files/exists?path=data/blob.bin", None, None),
        ("GET", "/files/exists?path=data/blob.bin/x", None, None),
        ("GET", "/files/content?path=data/blob.bin", None, None),
        ("GET", "/files/content?path=adir", None, None),
        ("GET", "/files/content?path=../../etc/passwd", None, None),
        ("GET", "/files/content?path=/etc/passwd", None, None),
        (
            "POST",
            "/files/mkdir",
            j(json!({"path": "adir", "parents": false})),
            None,
        ),
        (
            "POST",
            "/files/mkdir",
            j(json!({"path": "x/y", "parents": false})),
            None,
        ),
        (
            "POST",
            "/files/mkdir",
            j(json!({"path": ".", "parents": true})),
            None,
        ),
        (
            "POST",
            "/files/move",
            j(json!({"from": "data/blob.bin", "to": "moved.bin"})),
            None,
        ),
        (
            "POST",
            "/files/move",
            j(json!({"from": "moved.bin", "to": "adir", "overwrite": true})),
            None,
        ),
        (
            "POST",
            "/files/move",
            j(json!({"from": "adir", "to": "adir/inner/x"})),
            None,
        ),
        (
            "POST",
            "/files/move",
            j(json!({"from": "never", "to": "x"})),
            None,
        ),
        (
            "POST",
            "/files/move",
            j(json!({"from": ".", "to": "x"})),
            None,
        ),
        ("DELETE", "/files?path=adir", None, None),
        ("DELETE", "/files?path=adir&recursive=true", None, None),
        ("DELETE", "/files?path=.&recursive=true", None, None),
        ("DELETE", "/files?path=adir", None, None),
        ("GET", "/files/watch?path=nowhere", None, None),
        ("POST", "/timeout", j(json!({"timeout": 0})), None),
        ("GET", "/running", None, None),
        ("POST", "/pause", j(json!({})), None),
        (
            "PUT",
            "/files/content?path=while-paused.txt",
            None,
            r(b"still"),
        ),
        ("GET", "/files/content?path=while-paused.txt", None, None),
        ("POST", "/resume", j(json!({})), None),
        (
            "POST",
            "/v1/sandboxes",
            j(json!({"template": "nope"})),
            None,
        ),
    ]
}

fn request(method: &str, path: &str, conn: &Connection) -> http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1:4000")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("x-svc-connection", conn.header_value())
}

async fn send(state: &Arc<EngineState>, req: Request<Body>) -> (u16, Value) {
    let response = app(state.clone()).oneshot(req).await.unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::from(String::from_utf8_lossy(&bytes).into_owned()));
    (status, body)
}

/// `v` with what differs by run or by provider name set aside.
fn comparable(v: &Value, id: &str, provider: &str) -> Value {
    match v {
        Value::Object(map) => {
            let dir = map.get("type") == Some(&json!("dir"));
            // How a sandbox is kept apart from the machine is local's alone: memory runs
            // nothing on it. So are a file's owners: memory's files belong to no account.
            let local_only = |k: &str| {
                matches!(
                    k,
                    "isolation" | "allow_internet_access" | "max_processes" | "owner" | "group"
                ) || (map.contains_key("timeout")
                    && matches!(k, "filesystem" | "processes" | "network" | "pids"))
            };
            let out = map.iter().filter(|(k, _)| !local_only(k)).map(|(k, v)| {
                let shown = match k.as_str() {
                    "modified_at" | "created_at" | "expires_at" => json!("[time]"),
                    "size" if dir => json!("[size]"),
                    "provider" if v == provider => json!("[provider]"),
                    _ => comparable(v, id, provider),
                };
                (k.clone(), shown)
            });
            Value::Object(out.collect())
        }
        Value::Array(items) => items.iter().map(|i| comparable(i, id, provider)).collect(),
        Value::String(s) => Value::from(s.replace(id, "[id]").replace(provider, "[provider]")),
        other => other.clone(),
    }
}

/// What `provider` answers to every step, and to a watch, in a sandbox of its own.
async fn answers(state: &Arc<EngineState>, provider: &str) -> Vec<(u16, Value)> {
    let conn = Connection {
        provider: Some(provider.into()),
        ..Connection::default()
    };
    // Local without isolation: the same paths as memory's (the isolated view is the
    // conformance suite's `engine/isolation` cases).
    let body = if provider == "local" {
        json!({"timeout": 60, "isolation": "none"})
    } else {
        json!({"timeout": 60})
    };
    let create = request("POST", "/v1/sandboxes", &conn)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, record) = send(state, create).await;
    assert_eq!(status, 201, "{record}");
    let id = record["sandbox_id"].as_str().unwrap().to_owned();
    let mut out = vec![(status, comparable(&record, &id, provider))];
    for (method, rest, json_body, raw) in steps() {
        let path = if rest.starts_with("/v1") {
            rest.to_owned()
        } else {
            format!("/v1/sandboxes/{id}{rest}")
        };
        let builder = request(method, &path, &conn);
        let req = match (json_body, raw) {
            (Some(v), _) => builder
                .header("content-type", "application/json")
                .body(Body::from(v.to_string())),
            (None, Some(raw)) => builder.body(Body::from(raw)),
            (None, None) => builder.body(Body::empty()),
        };
        let (status, body) = send(state, req.unwrap()).await;
        out.push((status, comparable(&body, &id, provider)));
    }
    out.push((
        200,
        comparable(&watched(state, &conn, &id).await, &id, provider),
    ));
    let kill = request("DELETE", &format!("/v1/sandboxes/{id}"), &conn).body(Body::empty());
    let (status, last) = send(state, kill.unwrap()).await;
    out.push((status, comparable(&last, &id, provider)));
    out
}

/// The first event of a watch on `w` after a file is written there: `{event, data}`.
async fn watched(state: &Arc<EngineState>, conn: &Connection, id: &str) -> Value {
    let mkdir = request("POST", &format!("/v1/sandboxes/{id}/files/mkdir"), conn)
        .header("content-type", "application/json")
        .body(Body::from(json!({"path": "w"}).to_string()));
    assert_eq!(send(state, mkdir.unwrap()).await.0, 200);
    let watch = request(
        "GET",
        &format!("/v1/sandboxes/{id}/files/watch?path=w"),
        conn,
    );
    let response = app(state.clone())
        .oneshot(watch.body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut frames = response.into_body().into_data_stream();
    let put = request(
        "PUT",
        &format!("/v1/sandboxes/{id}/files/content?path=w/new.txt"),
        conn,
    );
    assert_eq!(
        send(state, put.body(Body::from("hello")).unwrap()).await.0,
        200
    );
    let mut text = String::new();
    let frame = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let chunk = frames.next().await.expect("the watch goes on").unwrap();
            text.push_str(&String::from_utf8_lossy(&chunk));
            if let Some((frame, _)) = text.split_once("\n\n") {
                return frame.to_owned();
            }
        }
    })
    .await
    .expect("an event within 10 s");
    let field = |name: &str| {
        frame
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    json!({"event": field("event"), "data": serde_json::from_str::<Value>(&field("data")).unwrap()})
}

#[tokio::test]
async fn memory_answers_as_local_does() {
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Provider> = LocalProvider::open(dir.path()).unwrap();
    let memory: Arc<dyn Provider> = Arc::new(super::super::MemoryProvider::new(dir.path()));
    let state = Arc::new(EngineState::new(
        TOKEN.into(),
        vec![local, memory],
        Duration::from_secs(60),
    ));
    let of_local = answers(&state, "local").await;
    let of_memory = answers(&state, "memory").await;
    let mut labels = vec!["create".to_owned()];
    labels.extend(steps().iter().map(|(m, p, _, _)| format!("{m} {p}")));
    labels.extend(["watch".to_owned(), "kill".to_owned()]);
    for ((label, l), m) in labels.iter().zip(&of_local).zip(&of_memory) {
        assert_eq!(l, m, "{label}: local (left) and memory (right) differ");
    }
    assert_eq!(of_local.len(), of_memory.len());
}
