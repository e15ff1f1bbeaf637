//! GET .../events: the session's events as server-sent events. With `after` (or
//! `Last-Event-ID`) the kept history after that position is replayed and the stream
//! closes; without it the stream follows live until the session next settles.

use crate::agents::log::{Event, EventLog};
use crate::agents::sessions::SessionHandle;
use crate::auth::Identity;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Path, Query};
use crate::server::SharedState;
use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub const KEEPALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize)]
pub struct StreamQuery {
    after: Option<String>,
    /// Sent by the OpenAI SDK; there is nothing to obfuscate locally.
    #[allow(dead_code)]
    include_obfuscation: Option<String>,
}

/// `0`, `7` or `evt_7`.
fn position(raw: &str, param: &str) -> Result<u64, ApiError> {
    raw.trim()
        .strip_prefix("evt_")
        .unwrap_or(raw.trim())
        .parse()
        .map_err(|_| {
            ApiError::invalid(
                param,
                format!("`{raw}` is not an event position (0, N or evt_N)"),
            )
        })
}

pub async fn events_stream(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let handle = app.agents.get(&identity.id, &id)?;
    let after = match (&query.after, headers.get("last-event-id")) {
        (Some(raw), _) => Some(position(raw, "after")?),
        (None, Some(v)) => Some(position(v.to_str().unwrap_or_default(), "Last-Event-ID")?),
        (None, None) => None,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    match after {
        Some(after) => {
            tokio::spawn(replay(handle, after, tx));
        }
        None => {
            let from = handle.log.newest();
            tokio::spawn(follow(handle, from, tx));
        }
    }
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    Ok((
        [
            (http::header::CONTENT_TYPE, "text/event-stream"),
            (http::header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

fn frame(event: &Event) -> Bytes {
    Bytes::from(format!(
        "id: {}\nevent: {}\ndata: {}\n\n",
        event.seq, event.kind, event.data
    ))
}

/// The typed gap signal: positions `from..=to` were dropped from the kept history.
fn gap(log_session: &str, from: u64, to: u64) -> Bytes {
    let data = json!({
        "type": "error",
        "event_id": format!("evt_gap_{from}_{to}"),
        "session_id": log_session,
        "error": {
            "type": "events_dropped",
            "code": "agents.events_dropped",
            "message": format!("events {from} to {to} are no longer kept; replay continues after them"),
            "param": "after",
        },
    });
    Bytes::from(format!("event: error\ndata: {data}\n\n"))
}

/// Sends the slice after `after`; returns the new position and whether the session settled.
async fn send_after(
    log: &EventLog,
    session_id: &str,
    after: u64,
    tx: &mpsc::Sender<Bytes>,
) -> Option<(u64, bool)> {
    let slice = log.after(after);
    if let Some((from, to)) = slice.dropped {
        tx.send(gap(session_id, from, to)).await.ok()?;
    }
    let mut position = after;
    let mut settled = false;
    for event in &slice.events {
        tx.send(frame(event)).await.ok()?;
        position = event.seq;
        settled |= matches!(
            event.kind.as_str(),
            "agent.session.idle" | "agent.session.failed"
        );
    }
    Some((position, settled))
}

async fn replay(handle: Arc<SessionHandle>, after: u64, tx: mpsc::Sender<Bytes>) {
    let _ = send_after(&handle.log, &handle.id, after, &tx).await;
}

async fn follow(handle: Arc<SessionHandle>, mut position: u64, tx: mpsc::Sender<Bytes>) {
    let mut newest = handle.log.subscribe();
    loop {
        let Some((now_at, settled)) = send_after(&handle.log, &handle.id, position, &tx).await
        else {
            return;
        };
        position = now_at;
        if settled || handle.lock().deleted {
            return;
        }
        match tokio::time::timeout(KEEPALIVE, newest.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(_) => {
                if tx
                    .send(Bytes::from_static(b": keep-alive\n\n"))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}
