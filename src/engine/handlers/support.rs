//! What the handlers share: running an operation on a sandbox through its session, and a
//! provider's event stream as SSE. A leaf, so the handler files import it and not
//! `handlers/mod.rs`, which imports them.

use super::super::provider::{EventStream, ProviderResult, Sandbox};
use super::super::routes::Route;
use super::super::state::{OpenGuard, Shared};
use super::super::wire::Connection;
use crate::error::engine::EngineError;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use std::future::Future;
use std::sync::Arc;

/// Runs `op` on sandbox `id` of the connection's provider, through its session.
pub async fn on<T, F, Fut>(
    state: &Shared,
    route: &Route,
    conn: &Connection,
    id: &str,
    op: F,
) -> Result<T, EngineError>
where
    F: Fn(Arc<dyn Sandbox>) -> Fut,
    Fut: Future<Output = ProviderResult<T>>,
{
    let provider = state.provider(route, conn)?;
    state.sessions.call(&*provider, conn, id, op).await
}

/// A provider's event stream as SSE: each event as it comes, an `error` event (the engine
/// body) that ends it, then `end` when `close_with_end` (command streams); keep-alive
/// comments while it is quiet. The stream holds the engine open while a client reads it.
pub fn sse(events: EventStream, open: OpenGuard, close_with_end: bool) -> Response {
    let stream = futures::stream::unfold(Some(events), move |events| async move {
        let mut events = events?;
        let event = match events.next().await {
            Some(Ok(event)) => {
                let frame = SseEvent::default()
                    .event(event.name)
                    .data(event.data.to_string());
                return Some((frame, Some(events)));
            }
            Some(Err(e)) => SseEvent::default()
                .event("error")
                .data(e.body().to_string()),
            None if close_with_end => SseEvent::default().event("end").data("{}"),
            None => return None,
        };
        Some((event, None))
    })
    .map(move |event| {
        let _held = &open;
        Ok::<_, std::convert::Infallible>(event)
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
        .into_response()
}
