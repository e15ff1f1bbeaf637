//! The webhooks bench's floors: what any server pays to deliver the same events with none
//! of svc's (no endpoint table, no URL guard, no session, no event log), measured in the
//! same run against the same receiver.
//!
//! - [`send_signed`]: one task per endpoint sending `events` POSTs one at a time, each
//!   signed as Standard Webhooks asks (HMAC-SHA256 over id, timestamp and body) with the
//!   same headers svc sends: the floor of the throughput figure.
//! - [`serve_creator`]: a bare axum route that answers a POST with an id and hands a
//!   delivery of it to a task: the floor of "request in, delivery out".
//! - [`hand_off`]: rendering an event's body and a `try_send` into a full queue, counted:
//!   the floor of handing an event to a stuck endpoint.

use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A body shaped as svc's (`evt_` id, object, type, created_at, data).
pub fn body(kind: &str, id: &str) -> bytes::Bytes {
    bytes::Bytes::from(
        json!({
            "id": "evt_0123456789abcdef01234567",
            "object": "event",
            "type": kind,
            "created_at": 1_764_000_000,
            "data": {"id": id, "environment_type": "none"},
        })
        .to_string(),
    )
}

/// Signed POSTs of `body` to `url`, `events` per endpoint, each endpoint's one at a time.
pub async fn send_signed(url: &str, endpoints: usize, events: usize, body: bytes::Bytes) {
    let key = b"floor-secret-floor-secret-32byte";
    let mut senders = Vec::new();
    for _ in 0..endpoints {
        let (url, body) = (url.to_owned(), body.clone());
        senders.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            for n in 0..events {
                let (msg_id, timestamp) = (format!("msg_{n:024}"), 1_764_000_000i64);
                let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
                mac.update(format!("{msg_id}.{timestamp}.").as_bytes());
                mac.update(&body);
                let signature = format!(
                    "v1,{}",
                    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
                );
                client
                    .post(&url)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .header("webhook-id", &msg_id)
                    .header("webhook-timestamp", timestamp.to_string())
                    .header("webhook-signature", signature)
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
            }
        }));
    }
    for sender in senders {
        sender.await.unwrap();
    }
}

/// A bare server whose `POST /sessions` answers `{"id": ..}` and hands a
/// `agent.session.created` delivery of that id to a task; its base URL.
pub async fn serve_creator(receiver: String) -> String {
    use axum::routing::post;
    let (client, next) = (
        reqwest::Client::new(),
        std::sync::Arc::new(AtomicU64::new(0)),
    );
    let app = axum::Router::new().route(
        "/sessions",
        post(move || {
            let (client, receiver) = (client.clone(), receiver.clone());
            let id = format!("floor_{}", next.fetch_add(1, Ordering::Relaxed));
            let body = body("agent.session.created", &id);
            tokio::spawn(async move {
                let _ = client
                    .post(receiver)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(body)
                    .send()
                    .await;
            });
            async move { axum::Json(json!({"id": id})) }
        }),
    );
    crate::server::serve_bare(app).await
}

/// Nanoseconds per event to render `event`'s body and fail to queue it on a full queue
/// (dropped and counted), over `calls` events.
pub fn hand_off(event: &Value, capacity: usize, calls: usize) -> f64 {
    let (queue, _kept) = tokio::sync::mpsc::channel::<bytes::Bytes>(capacity);
    while queue.try_send(bytes::Bytes::new()).is_ok() {}
    let dropped = AtomicU64::new(0);
    let started = Instant::now();
    for _ in 0..calls {
        let id = event["session"]["id"].as_str().unwrap_or_default();
        if queue.try_send(body("agent.session.idle", id)).is_err() {
            dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
    let per_call = started.elapsed().as_secs_f64() * 1e9 / calls as f64;
    assert_eq!(dropped.into_inner(), calls as u64);
    per_call
}
