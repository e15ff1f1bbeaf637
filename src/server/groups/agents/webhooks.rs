//! Webhook endpoints: thin handlers over `agents::webhooks`, their bodies and answers typed
//! in `agents::webhooks::wire`.

use super::body::{Body, paged};
use super::schemas::{self as s};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::agents::webhooks::Webhooks;
use crate::server::agents::webhooks::wire::{
    EventTypes, RotateSecret, TestEvent, TestResult, WebhookEndpoint, WebhookEndpointCreate,
    WebhookEndpointUpdate,
};
use crate::server::agents::wire::Deleted;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Path, Query};
use crate::server::openapi::op::{Answer, Code, Doc};
use crate::server::openapi::shared::page_query;
use crate::server::route::{Bound, on};
use crate::services::paging::PageQuery;
use axum::extract::State;
use axum::routing::MethodFilter;
use axum::{Extension, Json};
use serde_json::Value;

pub async fn webhooks_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<WebhookEndpointCreate>,
) -> ApiResult<Json<WebhookEndpoint>> {
    app.agents.webhooks.create(&who.id, body).await.map(Json)
}

pub async fn webhooks_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Query(q): Query<PageQuery>,
) -> ApiResult<Json<Value>> {
    paged(q.page()?, app.agents.webhooks.list(&who.id))
}

pub async fn webhooks_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<Json<WebhookEndpoint>> {
    app.agents.webhooks.get(&who.id, &id).map(Json)
}

pub async fn webhooks_update(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Body(body): Body<WebhookEndpointUpdate>,
) -> ApiResult<Json<WebhookEndpoint>> {
    app.agents
        .webhooks
        .update(&who.id, &id, body)
        .await
        .map(Json)
}

pub async fn webhooks_delete(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<Json<Deleted>> {
    app.agents.webhooks.delete(&who.id, &id).map(Json)
}

pub async fn webhooks_rotate_secret(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Body(body): Body<RotateSecret>,
) -> ApiResult<Json<WebhookEndpoint>> {
    app.agents
        .webhooks
        .rotate_secret(&who.id, &id, body)
        .map(Json)
}

pub async fn webhooks_test(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Body(body): Body<TestEvent>,
) -> ApiResult<Json<TestResult>> {
    app.agents.webhooks.test(&who.id, &id, body).await.map(Json)
}

pub async fn webhook_event_types() -> Json<EventTypes> {
    Json(Webhooks::event_types())
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    use EndpointId::*;
    Some(match id {
        AgentsWebhooksCreate => on(f, webhooks_create),
        AgentsWebhooksList => on(f, webhooks_list),
        AgentsWebhooksGet => on(f, webhooks_get),
        AgentsWebhooksUpdate => on(f, webhooks_update),
        AgentsWebhooksDelete => on(f, webhooks_delete),
        AgentsWebhooksRotateSecret => on(f, webhooks_rotate_secret),
        AgentsWebhooksTest => on(f, webhooks_test),
        AgentsWebhookEventTypes => on(f, webhook_event_types),
        _ => return None,
    })
}

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [
        &CREATE, &LIST, &GET, &UPDATE, &DELETE, &ROTATE, &TEST, &TYPES,
    ]
    .into_iter()
    .find(|d| d.id == id)
}

const CREATE: Doc = Doc::new(EndpointId::AgentsWebhooksCreate, "Create a webhook endpoint")
    .describe("Session events are delivered to `url`, signed (Standard Webhooks); the answer carries `signing_secret` once.")
    .json(|g| g.subschema_for::<WebhookEndpointCreate>())
    .answers(&[Answer::json("The endpoint, with its secret.", |g| g.subschema_for::<WebhookEndpoint>())]);

const LIST: Doc = Doc::new(EndpointId::AgentsWebhooksList, "List webhook endpoints")
    .query(page_query)
    .answers(&[Answer::json(
        "The caller's endpoints.",
        s::list::<WebhookEndpoint>,
    )])
    .errors(&[&[Code::CursorNotFound]]);

const GET: Doc = Doc::new(EndpointId::AgentsWebhooksGet, "A webhook endpoint")
    .answers(&[Answer::json("The endpoint.", |g| {
        g.subschema_for::<WebhookEndpoint>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const UPDATE: Doc = Doc::new(
    EndpointId::AgentsWebhooksUpdate,
    "Update a webhook endpoint",
)
.json(|g| g.subschema_for::<WebhookEndpointUpdate>())
.answers(&[Answer::json("The endpoint.", |g| {
    g.subschema_for::<WebhookEndpoint>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const DELETE: Doc = Doc::new(
    EndpointId::AgentsWebhooksDelete,
    "Delete a webhook endpoint",
)
.answers(&[Answer::json("Deleted.", |g| g.subschema_for::<Deleted>())])
.errors(&[&[Code::ResourceNotFound]]);

const ROTATE: Doc = Doc::new(
    EndpointId::AgentsWebhooksRotateSecret,
    "Rotate a webhook secret",
)
.describe("The new secret replaces the old one at once.")
.json(|g| g.subschema_for::<RotateSecret>())
.answers(&[Answer::json("The endpoint, with its new secret.", |g| {
    g.subschema_for::<WebhookEndpoint>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const TEST: Doc = Doc::new(EndpointId::AgentsWebhooksTest, "Send a test event")
    .describe("Delivers a sample of `event_type` now; a failed delivery is 400 naming `url`.")
    .json(|g| g.subschema_for::<TestEvent>())
    .answers(&[Answer::json("How the delivery went.", |g| {
        g.subschema_for::<TestResult>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const TYPES: Doc = Doc::new(
    EndpointId::AgentsWebhookEventTypes,
    "List webhook event types",
)
.answers(&[Answer::json(
    "The event types an endpoint may subscribe to.",
    |g| g.subschema_for::<EventTypes>(),
)]);
