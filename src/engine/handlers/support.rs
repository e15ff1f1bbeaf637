//! What the handlers share: [`Sandboxed`], the start of every sandbox route (its row, its
//! connection, its sandbox, run through the session), and a provider's event stream as SSE. A leaf, so the handler files import it and not
//! `handlers/mod.rs`, which imports them.

use super::super::extract::{Conn, Matched};
use super::super::provider::{EventStream, ProviderResult, Sandbox};
use super::super::routes::Route;
use super::super::state::{OpenGuard, Shared};
use crate::error::engine::{Code, EngineError};
use crate::wire::Connection;
use axum::extract::FromRequestParts;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::request::Parts;
use std::future::Future;
use std::sync::Arc;

/// What every sandbox route starts from: the state, the row it matched, the connection (the
/// header's, or a POST body's through [`Sandboxed::with`]) and the sandbox id of its path.
pub struct Sandboxed {
    pub state: Shared,
    route: &'static Route,
    conn: Connection,
    pub id: String,
}

impl FromRequestParts<Shared> for Sandboxed {
    type Rejection = EngineError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, EngineError> {
        let Matched(route) = Matched::from_request_parts(parts, state).await?;
        let Conn(conn) = Conn::from_request_parts(parts, state).await?;
        let params = axum::extract::RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|e| EngineError::new(Code::InvalidArgument, e.body_text()))?;
        let id = params
            .iter()
            .find(|(name, _)| *name == "id")
            .map(|(_, value)| value.to_owned())
            .ok_or_else(|| EngineError::new(Code::Internal, "a sandbox route without `{id}`"))?;
        Ok(Sandboxed {
            state: state.clone(),
            route,
            conn,
            id,
        })
    }
}

impl Sandboxed {
    /// The connection of a POST body (already laid over the header's by [`Body`]).
    ///
    /// [`Body`]: super::super::extract::Body
    pub fn with(mut self, conn: Connection) -> Sandboxed {
        self.conn = conn;
        self
    }

    /// Runs `op` on the sandbox through its session (rebuilt once when stale).
    pub async fn on<T, F, Fut>(&self, op: F) -> Result<T, EngineError>
    where
        F: Fn(Arc<dyn Sandbox>) -> Fut,
        Fut: Future<Output = ProviderResult<T>>,
    {
        let provider = self.state.provider(self.route, &self.conn)?;
        self.state
            .sessions
            .call(&*provider, &self.conn, &self.id, op)
            .await
    }

    /// The session's handle, for an operation that consumes the request body and so cannot
    /// be retried: a stale session is rebuilt before the bytes flow.
    pub async fn sandbox(&self) -> Result<Arc<dyn Sandbox>, EngineError> {
        let provider = self.state.provider(self.route, &self.conn)?;
        self.state
            .sessions
            .sandbox(&*provider, &self.conn, &self.id)
            .await
    }

    /// Forgets the session (after a kill, or before a connect).
    pub fn forget(&self) {
        self.state.sessions.forget(&self.conn, &self.id);
    }

    /// An SSE answer of `events`, holding the engine open while it is read.
    pub fn sse(&self, events: EventStream, close_with_end: bool) -> Response {
        sse(events, self.state.activity.open(), close_with_end)
    }
}

/// A provider's event stream as SSE: each event as it comes, an `error` event (the engine
/// body) that ends it, then `end` when `close_with_end` (command streams); keep-alive
/// comments while it is quiet. The stream holds the engine open while a client reads it.
fn sse(events: EventStream, open: OpenGuard, close_with_end: bool) -> Response {
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
