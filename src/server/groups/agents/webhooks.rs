//! Webhook endpoints: thin handlers over `agents::webhooks`.

use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::agents::webhooks::Webhooks;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path, Query};
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
