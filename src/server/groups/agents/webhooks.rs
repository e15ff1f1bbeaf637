//! Webhook endpoints: thin handlers over `agents::webhooks`.

use super::schemas::{self as s};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::agents::webhooks::Webhooks;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path, Query};
use crate::server::openapi::op::{Answer, Code, Doc, json_schema};
use crate::server::openapi::shared::page_query;
use crate::services::paging::PageQuery;
use axum::Extension;
use axum::extract::State;
use axum::routing::{MethodFilter, MethodRouter, on};
use serde_json::Value;

type Out = ApiResult<axum::Json<Value>>;

pub async fn webhooks_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .webhooks
        .create(&who.id, &body)
        .await
        .map(axum::Json)
}

pub async fn webhooks_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Query(q): Query<PageQuery>,
) -> Out {
    Ok(axum::Json(
        q.page()?.apply(app.agents.webhooks.list(&who.id))?,
    ))
}

pub async fn webhooks_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> Out {
    app.agents.webhooks.get(&who.id, &id).map(axum::Json)
}

pub async fn webhooks_update(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .webhooks
        .update(&who.id, &id, &body)
        .await
        .map(axum::Json)
}

pub async fn webhooks_delete(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> Out {
    app.agents.webhooks.delete(&who.id, &id).map(axum::Json)
}

pub async fn webhooks_rotate_secret(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .webhooks
        .rotate_secret(&who.id, &id, &body)
        .map(axum::Json)
}

pub async fn webhooks_test(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .webhooks
        .test(&who.id, &id, &body)
        .await
        .map(axum::Json)
}

pub async fn webhook_event_types() -> Out {
    Ok(axum::Json(Webhooks::event_types()))
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
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
    .json(s::webhook_create)
    .answers(&[Answer::json("The endpoint, with its secret.", |g| g.subschema_for::<s::WebhookEndpoint>())]);

const LIST: Doc = Doc::new(EndpointId::AgentsWebhooksList, "List webhook endpoints")
    .query(page_query)
    .answers(&[Answer::json(
        "The caller's endpoints.",
        s::list::<s::WebhookEndpoint>,
    )])
    .errors(&[&[Code::CursorNotFound]]);

const GET: Doc = Doc::new(EndpointId::AgentsWebhooksGet, "A webhook endpoint")
    .answers(&[Answer::json("The endpoint.", |g| {
        g.subschema_for::<s::WebhookEndpoint>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const UPDATE: Doc = Doc::new(
    EndpointId::AgentsWebhooksUpdate,
    "Update a webhook endpoint",
)
.json(s::webhook_body)
.answers(&[Answer::json("The endpoint.", |g| {
    g.subschema_for::<s::WebhookEndpoint>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const DELETE: Doc = Doc::new(
    EndpointId::AgentsWebhooksDelete,
    "Delete a webhook endpoint",
)
.answers(&[Answer::json("Deleted.", |g| {
    g.subschema_for::<s::Deleted>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const ROTATE: Doc = Doc::new(EndpointId::AgentsWebhooksRotateSecret, "Rotate a webhook secret")
    .describe("The new secret replaces the old one at once.")
    .json(|_| {
        json_schema!({"type": "object", "properties": {"keep_old_secret_active_for_24_hours": {"enum": [false, null]}}, "additionalProperties": false})
    })
    .answers(&[Answer::json("The endpoint, with its new secret.", |g| g.subschema_for::<s::WebhookEndpoint>())])
    .errors(&[&[Code::ResourceNotFound]]);

const TEST: Doc = Doc::new(EndpointId::AgentsWebhooksTest, "Send a test event")
    .describe("Delivers a sample of `event_type` now; a failed delivery is 400 naming `url`.")
    .json(|_| {
        json_schema!({"type": "object", "required": ["event_type"], "properties": {"event_type": {"type": "string"}}, "additionalProperties": false})
    })
    .answers(&[Answer::json("How the delivery went.", |_| {
        json_schema!({
            "type": "object",
            "required": ["object", "webhook_endpoint_id", "event_type", "status_code", "success"],
            "properties": {
                "object": {"const": "webhook_endpoint.test"},
                "webhook_endpoint_id": {"type": "string"},
                "event_type": {"type": "string"},
                "status_code": {"type": "integer"},
                "success": {"type": "boolean"},
            },
        })
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const TYPES: Doc = Doc::new(EndpointId::AgentsWebhookEventTypes, "List webhook event types")
    .answers(&[Answer::json("The event types an endpoint may subscribe to.", |_| {
        json_schema!({
            "type": "object",
            "required": ["object", "data"],
            "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": {"type": "string"}}},
        })
    })]);
