use super::body::Body;
use super::header;
use super::schemas::{self as s};
use crate::error::{ApiError, ApiResult};
use crate::server::SharedState;
use crate::server::agents::runtimes::RUNTIMES;
use crate::server::agents::runtimes::RuntimeObject;
use crate::server::agents::sessions::wire::SessionObject;
use crate::server::agents::sessions::wire::{EventsBody, SessionCreate, SessionUpdate};
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Path, Query};
use crate::server::openapi::op::{Answer, Code, Doc, PATH_WRITE};
use crate::server::openapi::shared::page_query;
use crate::server::route::{Bound, on};
use crate::services::paging::{PageQuery, envelope};
use axum::Extension;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::MethodFilter;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;

pub async fn runtimes_list(
    State(app): State<SharedState>,
    Query(query): Query<PageQuery>,
) -> ApiResult<axum::Json<Value>> {
    let page = query.page()?;
    let default = app.agents.settings.default_runtime;
    // Product order; the default `desc` lists it reversed, `asc` as is (spec 4.4).
    let all: Vec<Value> = RUNTIMES.iter().map(|r| r.describe(default)).collect();
    let listed = page.apply(all)?;
    Ok(axum::Json(listed))
}

/// `POST /v1/agents/sessions`: the session; with `stream: true`, its events as SSE from
/// its creation (`agent.session.created`) through its first turn, ending when the session
/// settles (`agent.session.idle` or `agent.session.failed`), as the SDKs' create-stream
/// helpers read them. Without `input` the stream follows the session until a first turn,
/// sent later with `POST .../events`, settles (a self-hosted environment waits for input).
pub async fn create(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
    Body(body): Body<SessionCreate>,
) -> ApiResult<axum::response::Response> {
    let adapter = header(&headers, "x-svc-adapter");
    if body.wants_stream()? {
        let handle = app.agents.create_handle(&identity.id, adapter, body)?;
        return Ok(super::stream::sse(super::stream::Reader::new(
            handle, 0, false,
        )));
    }
    app.agents
        .create(&identity.id, adapter, body)
        .map(|session| axum::Json(session).into_response())
}

#[derive(Debug, Deserialize)]
pub struct SessionListQuery {
    #[serde(flatten)]
    page: PageQuery,
    agent_id: Option<String>,
}

pub async fn list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Query(query): Query<SessionListQuery>,
) -> ApiResult<axum::Json<Value>> {
    let page = query.page.page()?;
    let sessions = app.agents.list(&identity.id, query.agent_id.as_deref());
    Ok(axum::Json(page.apply(sessions)?))
}

pub async fn get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    Ok(axum::Json(app.agents.get(&identity.id, &id)?.snapshot()))
}

pub async fn update(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    body: Result<Body<SessionUpdate>, ApiError>,
) -> ApiResult<axum::Json<Value>> {
    // Another owner's session answers 404 whatever the body holds.
    app.agents.get(&identity.id, &id)?;
    let Body(body) = body?;
    app.agents.update(&identity.id, &id, body).map(axum::Json)
}

pub async fn delete(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    app.agents.delete(&identity.id, &id).await.map(axum::Json)
}

pub async fn events_create(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Body<EventsBody>, ApiError>,
) -> ApiResult<impl IntoResponse> {
    // Another owner's session answers 404 whatever the body holds.
    app.agents.get(&identity.id, &id)?;
    let Body(body) = body?;
    app.agents.post_events(
        &identity.id,
        &id,
        header(&headers, "idempotency-key"),
        &body,
    )?;
    Ok(StatusCode::ACCEPTED)
}

/// An empty list envelope, for lists the runtime has nothing in.
pub fn empty_list() -> Value {
    envelope(Vec::new(), false)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    use EndpointId::*;
    Some(match id {
        AgentsRuntimesList => on(f, runtimes_list),
        AgentsSessionsCreate => on(f, create),
        AgentsSessionsList => on(f, list),
        AgentsSessionsGet => on(f, get),
        AgentsSessionsUpdate => on(f, update),
        AgentsSessionsDelete => on(f, delete),
        AgentsSessionsEventsCreate => on(f, events_create),
        _ => return None,
    })
}

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [
        &RUNTIMES_LIST,
        &CREATE,
        &LIST,
        &GET,
        &UPDATE,
        &DELETE,
        &EVENTS,
    ]
    .into_iter()
    .find(|d| d.id == id)
}

const RUNTIMES_LIST: Doc = Doc::new(EndpointId::AgentsRuntimesList, "List the runtimes")
    .describe(
        "Every runtime the server knows, whether it is implemented and installed, and the default.",
    )
    .query(page_query)
    .answers(&[Answer::json("The runtimes.", s::list::<RuntimeObject>)])
    .errors(&[&[Code::CursorNotFound]]);

const SESSION_CODES: &[Code] = &[
    Code::ResourceNotFound,
    Code::NotImplementedLocally,
    Code::RuntimeNotInstalled,
    Code::PathRefused,
    Code::AgentsFileExists,
    Code::CredentialUnavailable,
    Code::CredentialExpired,
];

const CREATE: Doc = Doc::new(EndpointId::AgentsSessionsCreate, "Create a session")
    .describe("The session (and its first turn when `input` is given). With `stream: true`, its events as SSE from its creation (`agent.session.created`) through its first turn, ending when the session settles (`agent.session.idle` or `agent.session.failed`); without `input` the stream follows the session until a first turn sent later settles.")
    .headers(&[("X-Svc-Adapter", "The runtime, when the body does not name one.")])
    .json(|g| g.subschema_for::<SessionCreate>())
    .answers(&[
        Answer::json("The session.", |g| g.subschema_for::<SessionObject>()),
        Answer::events("With `stream: true`: the session's events.", super::stream::SESSION_EVENTS),
    ])
    .errors(&[PATH_WRITE, SESSION_CODES]);

const LIST: Doc = Doc::new(EndpointId::AgentsSessionsList, "List sessions")
    .query(|g| {
        let mut query = page_query(g);
        if let Some(props) = query.get_mut("properties").and_then(|p| p.as_object_mut()) {
            props.insert("agent_id".into(), serde_json::json!({"type": "string", "description": "Only the sessions of this agent."}));
        }
        query
    })
    .answers(&[Answer::json("The caller's sessions.", s::list::<SessionObject>)])
    .errors(&[&[Code::CursorNotFound]]);

const GET: Doc = Doc::new(EndpointId::AgentsSessionsGet, "A session")
    .answers(&[Answer::json("The session.", |g| {
        g.subschema_for::<SessionObject>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const UPDATE: Doc = Doc::new(
    EndpointId::AgentsSessionsUpdate,
    "Update a session's metadata",
)
.describe("Only `metadata` can be updated.")
.json(|g| g.subschema_for::<SessionUpdate>())
.answers(&[Answer::json("The session.", |g| {
    g.subschema_for::<SessionObject>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const DELETE: Doc = Doc::new(EndpointId::AgentsSessionsDelete, "Delete a session")
    .describe("Stops its turn and forgets it.")
    .answers(&[Answer::json("Deleted.", |g| {
        g.subschema_for::<s::Deleted>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const EVENTS: Doc = Doc::new(EndpointId::AgentsSessionsEventsCreate, "Send input to a session")
    .describe("A message starts a turn (queued behind a running one); `agent.session.input.cancel` cancels the running turn. Tool results are refused: local runtimes run their own tools.")
    .headers(&[("Idempotency-Key", "The same key with the same body is accepted once; with another body it is 409.")])
    .json(|g| g.subschema_for::<EventsBody>())
    .answers(&[Answer::empty(202, "Accepted.")])
    .errors(&[&[
        Code::ResourceNotFound,
        Code::ToolResultUnsupported,
        Code::IdempotencyMismatch,
        Code::CredentialUnavailable,
        Code::CredentialExpired,
    ]]);
