//! POST /v1/responses and the routes of one response. A synchronous call waits for the
//! turn; `stream: true` answers SSE as the runtime works; `background: true` answers at once.

use super::stream::{Reader, Source, sse};
use crate::error::{ApiError, ApiResult, Code, EventForm};
use crate::server::SharedState;
use crate::server::agents::responses::{Replay, ResponseHandle, request};
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path, Query};
use crate::services::event_log::{Event, EventLog};
use crate::services::paging::PageQuery;
use axum::Extension;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, on};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

impl Source for Arc<ResponseHandle> {
    fn log(&self) -> &EventLog {
        &self.log
    }

    /// A replay from at or past the final event has nothing left to wait for.
    fn gone(&self) -> bool {
        self.ended()
    }

    fn ends_with(&self, event: &Event) -> bool {
        matches!(
            event.kind.as_str(),
            "response.completed" | "response.failed" | "response.incomplete"
        )
    }

    /// The `agents.events_dropped` row as a Responses `error` event, at the last dropped
    /// position.
    fn gap(&self, from: u64, to: u64) -> Bytes {
        let error = ApiError::new(
            Code::EventsDropped,
            format!("events {from} to {to} are no longer kept"),
        )
        .with_param("starting_after");
        Bytes::from(error.sse_event(EventForm::Response {
            sequence_number: to,
        }))
    }
}

/// Cancels a synchronous response's turn when dropped, which happens only when the client
/// disconnected before the answer was ready (the handler's future is dropped).
struct CancelIfAbandoned(Option<Arc<ResponseHandle>>);

impl Drop for CancelIfAbandoned {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take()
            && !handle.is_finished()
        {
            tracing::info!(
                response = %handle.id,
                "the client went away before its synchronous response finished; cancelling its turn"
            );
            crate::server::agents::session_handle::cancel_all(&handle.session);
        }
    }
}

pub async fn responses_create(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> ApiResult<Response> {
    let request = request::parse(&body)?;
    let ignored = request.ignored.join(", ");
    let (stream, background) = (request.stream, request.background);
    let header = |name: &str| super::header(&headers, name);
    let key = header("idempotency-key");
    let replayed = match key {
        Some(key) => app.responses.replay(&identity.id, key, &body)?,
        None => Replay::Fresh,
    };
    let (handle, fresh) = match replayed {
        Replay::Same(handle) => (handle, false),
        Replay::Fresh => {
            let handle = app.responses.create(
                &app.agents,
                &identity.id,
                header("x-svc-adapter"),
                request,
            )?;
            if let Some(key) = key {
                app.responses.remember(&identity.id, key, &body, &handle.id);
            }
            (handle, true)
        }
    };
    let mut response = if stream {
        sse(Reader::new(handle, 0, false))
    } else {
        if !background {
            // A client that goes away never learns the id and could not cancel: the turn
            // is cancelled for it (a replayed request waits on another caller's turn and
            // leaves it alone).
            let _abandoned = CancelIfAbandoned(fresh.then(|| handle.clone()));
            handle.finished().await;
        }
        axum::Json(handle.to_json()).into_response()
    };
    if !ignored.is_empty()
        && let Ok(value) = HeaderValue::from_str(&ignored)
    {
        response.headers_mut().insert("x-svc-ignored-params", value);
    }
    Ok(response)
}

/// Other parameters the SDK may send (`include`, `include_obfuscation`) are ignored.
#[derive(Debug, Deserialize)]
pub struct RetrieveQuery {
    stream: Option<String>,
    starting_after: Option<String>,
}

pub async fn responses_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<RetrieveQuery>,
) -> ApiResult<Response> {
    let handle = app.responses.get(&identity.id, &id)?;
    if query.stream.as_deref() != Some("true") {
        if query.starting_after.is_some() {
            return Err(ApiError::invalid(
                "starting_after",
                "`starting_after` goes with `stream=true`",
            ));
        }
        return Ok(axum::Json(handle.to_json()).into_response());
    }
    let after = match &query.starting_after {
        None => 0,
        Some(raw) => raw.parse().map_err(|_| {
            ApiError::invalid(
                "starting_after",
                format!("`{raw}` is not a sequence number"),
            )
        })?,
    };
    Ok(sse(Reader::new(handle, after, false)))
}

pub async fn responses_delete(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    app.responses.delete(&identity.id, &id).map(axum::Json)
}

pub async fn responses_cancel(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    app.responses
        .cancel(&identity.id, &id)
        .await
        .map(axum::Json)
}

pub async fn responses_input_items(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<PageQuery>,
) -> ApiResult<axum::Json<Value>> {
    let page = query.page()?;
    let handle = app.responses.get(&identity.id, &id)?;
    Ok(axum::Json(page.apply(handle.request.items.clone())?))
}

pub async fn responses_compact(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Json(body): Json<Value>,
) -> ApiResult<axum::Json<Value>> {
    app.responses
        .compact(&app.agents, &identity.id, &body)
        .await
        .map(axum::Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    use EndpointId::*;
    Some(match id {
        AgentsResponsesCreate => on(f, responses_create),
        AgentsResponsesGet => on(f, responses_get),
        AgentsResponsesDelete => on(f, responses_delete),
        AgentsResponsesCancel => on(f, responses_cancel),
        AgentsResponsesInputItems => on(f, responses_input_items),
        AgentsResponsesCompact => on(f, responses_compact),
        _ => return None,
    })
}
