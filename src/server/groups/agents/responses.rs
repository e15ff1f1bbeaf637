//! POST /v1/responses and the routes of one response. A synchronous call waits for the
//! turn; `stream: true` answers SSE as the runtime works; `background: true` answers at once.

use super::body::Body;
use super::schemas::{self as s};
use super::stream::{Reader, Source, sse};
use crate::error::{ApiError, ApiResult, Code, EventForm};
use crate::server::SharedState;
use crate::server::agents::responses::wire::ResponseObject;
use crate::server::agents::responses::wire::{CompactBody, ResponseCreate};
use crate::server::agents::responses::{Replay, ResponseHandle, request};
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Path, Query};
use crate::server::openapi::op::{Answer, Doc, Event as SseEvent, json_schema};
use crate::server::openapi::shared::{list_of, page_query};
use crate::server::route::{Bound, on};
use crate::services::event_log::{Event, EventLog};
use crate::services::paging::PageQuery;
use axum::Extension;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodFilter;
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
    Body(body): Body<ResponseCreate>,
) -> ApiResult<Response> {
    let header = |name: &str| super::header(&headers, name);
    let key = header("idempotency-key");
    // What a replay compares, made only for a request that can be replayed: the body as
    // read (spacing and key order aside).
    let digest = key.map(|_| serde_json::to_value(&body).unwrap_or_default());
    let request = request::parse(body)?;
    let ignored = request.ignored.join(", ");
    let (stream, background) = (request.stream, request.background);
    let replayed = match (key, &digest) {
        (Some(key), Some(digest)) => app.responses.replay(&identity.id, key, digest)?,
        _ => Replay::Fresh,
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
            if let (Some(key), Some(digest)) = (key, &digest) {
                app.responses
                    .remember(&identity.id, key, digest, &handle.id);
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
    Body(body): Body<CompactBody>,
) -> ApiResult<axum::Json<Value>> {
    app.responses
        .compact(&app.agents, &identity.id, body)
        .await
        .map(axum::Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
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

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [&CREATE, &GET, &DELETE, &CANCEL, &INPUT_ITEMS, &COMPACT]
        .into_iter()
        .find(|d| d.id == id)
}

/// A response's SSE events (the OpenAI Responses stream).
pub(super) const RESPONSE_EVENTS: &[SseEvent] = &[
    SseEvent::new("response.created", "The response exists.", response_event),
    SseEvent::new("response.in_progress", "It runs.", response_event),
    SseEvent::new(
        "response.output_item.added",
        "An output item began.",
        response_event,
    ),
    SseEvent::new(
        "response.content_part.added",
        "A content part began.",
        response_event,
    ),
    SseEvent::new("response.output_text.delta", "Text.", response_event),
    SseEvent::new("response.output_text.done", "The text.", response_event),
    SseEvent::new(
        "response.content_part.done",
        "A content part ended.",
        response_event,
    ),
    SseEvent::new(
        "response.output_item.done",
        "An output item ended.",
        response_event,
    ),
    SseEvent::new(
        "response.completed",
        "The last event of a completed response.",
        response_event,
    ),
    SseEvent::new(
        "response.failed",
        "The last event of a failed response.",
        response_event,
    ),
    SseEvent::new(
        "response.incomplete",
        "The last event of a cancelled response.",
        response_event,
    ),
    SseEvent::new(
        "error",
        "An error event `{type: error, code, message, param, sequence_number}`.",
        response_event,
    ),
];

fn response_event(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    json_schema!({
        "type": "object",
        "required": ["type", "sequence_number"],
        "properties": {
            "type": {"type": "string", "description": "The event's name."},
            "sequence_number": {"type": "integer", "minimum": 0},
        },
    })
}

const RESPONSE_CODES: &[Code] = &[
    Code::ResourceNotFound,
    Code::NotImplementedLocally,
    Code::RuntimeNotInstalled,
    Code::PreviousResponseNotLatest,
    Code::IdempotencyMismatch,
    Code::CredentialUnavailable,
    Code::CredentialExpired,
];

const CREATE: Doc = Doc::new(EndpointId::AgentsResponsesCreate, "Create a response")
    .describe("The OpenAI Responses API on a local runtime: waits for the answer, or `background: true` answers at once, or `stream: true` answers its events as SSE. `previous_response_id` continues the conversation. Parameters that change nothing locally are named in `x-svc-ignored-params`.")
    .headers(&[
        ("Idempotency-Key", "The same key with the same body answers the same response; with another body 409."),
        ("X-Svc-Adapter", "The runtime, when `model` does not say it."),
    ])
    .json(|g| g.subschema_for::<ResponseCreate>())
    .answers(&[
        Answer::json("The response.", |g| g.subschema_for::<ResponseObject>())
            .headers(&[("x-svc-ignored-params", "The parameters that were accepted and ignored.")]),
        Answer::events("With `stream: true`: the response's events.", RESPONSE_EVENTS),
    ])
    .errors(&[RESPONSE_CODES]);

const GET: Doc = Doc::new(EndpointId::AgentsResponsesGet, "A response")
    .describe("With `stream=true`, its events as SSE (replayed after `starting_after`).")
    .query(|_| {
        json_schema!({"type": "object", "properties": {
            "stream": {"type": "string", "enum": ["true", "false"]},
            "starting_after": {"type": "integer", "minimum": 0, "description": "A sequence number."},
        }})
    })
    .answers(&[
        Answer::json("The response.", |g| g.subschema_for::<ResponseObject>()),
        Answer::events("With `stream=true`: its events.", RESPONSE_EVENTS),
    ])
    .errors(&[&[Code::ResourceNotFound]]);

const DELETE: Doc = Doc::new(EndpointId::AgentsResponsesDelete, "Delete a response")
    .answers(&[Answer::json("Deleted.", |g| {
        g.subschema_for::<s::Deleted>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const CANCEL: Doc = Doc::new(
    EndpointId::AgentsResponsesCancel,
    "Cancel a background response",
)
.answers(&[Answer::json("The response.", |g| {
    g.subschema_for::<ResponseObject>()
})])
.errors(&[&[Code::ResourceNotFound, Code::NotCancellable]]);

const INPUT_ITEMS: Doc = Doc::new(
    EndpointId::AgentsResponsesInputItems,
    "List a response's input items",
)
.query(page_query)
.answers(&[Answer::json("The input items.", |g| {
    list_of(crate::server::openapi::shared::object(g))
})])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const COMPACT: Doc = Doc::new(EndpointId::AgentsResponsesCompact, "Compact a conversation")
    .describe("In the runtime's own thread (rt-two); the conversation goes on from the same latest response.")
    .json(|g| g.subschema_for::<CompactBody>())
    .answers(&[Answer::json("The compaction.", |_| {
        json_schema!({"type": "object", "required": ["id", "object"], "properties": {
            "id": {"type": "string"},
            "object": {"const": "response.compaction"},
        }})
    })])
    .errors(&[&[Code::ResourceNotFound, Code::CompactUnsupported, Code::PreviousResponseNotLatest]]);
