//! The read routes under a session: items, turns, artifacts, traces, subagents.

use super::schemas::{self as s};
use super::sessions::empty_list;
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::agents::input::not_found;
use crate::server::agents::model::SessionState;
use crate::server::agents::session_handle::SessionHandle;
use crate::server::agents::sessions::wire::{ArtifactObject, TurnObject};
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Path, Query};
use crate::server::openapi::op::{Answer, Code, Doc};
use crate::server::openapi::shared::{list_of as page_of, page_query};
use crate::server::route::{Bound, on};
use crate::services::paging::PageQuery;
use axum::Extension;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::MethodFilter;
use serde_json::Value;
use std::sync::Arc;

fn session(app: &SharedState, identity: &Identity, id: &str) -> ApiResult<Arc<SessionHandle>> {
    app.agents.get(&identity.id, id)
}

type Json = axum::Json<Value>;

/// A paged list of what `pick` takes from the session.
fn list_of(
    app: &SharedState,
    identity: &Identity,
    id: &str,
    query: &PageQuery,
    pick: impl FnOnce(&SessionHandle, &SessionState) -> ApiResult<Vec<Value>>,
) -> ApiResult<Json> {
    let page = query.page()?;
    let handle = session(app, identity, id)?;
    let all = pick(&handle, &handle.lock())?;
    Ok(axum::Json(page.apply(all)?))
}

pub async fn items_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json> {
    list_of(&app, &identity, &id, &query, |_, state| {
        Ok(state.items.clone())
    })
}

pub async fn turns_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json> {
    list_of(&app, &identity, &id, &query, |handle, state| {
        Ok(state
            .turns
            .iter()
            .map(|t| t.to_json(&handle.id, &state.agent))
            .collect())
    })
}

pub async fn turns_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, turn_id)): Path<(String, String)>,
) -> ApiResult<Json> {
    let handle = session(&app, &identity, &id)?;
    let state = handle.lock();
    let turn = state
        .turn(&turn_id)
        .ok_or_else(|| not_found("turn", "turn_id", &turn_id))?;
    Ok(axum::Json(turn.to_json(&handle.id, &state.agent)))
}

pub async fn turns_items_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, turn_id)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json> {
    list_of(&app, &identity, &id, &query, |_, state| {
        state
            .turn(&turn_id)
            .ok_or_else(|| not_found("turn", "turn_id", &turn_id))?;
        Ok(state
            .items
            .iter()
            .filter(|i| i["turn_id"] == turn_id.as_str())
            .cloned()
            .collect())
    })
}

pub async fn artifacts_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json> {
    list_of(&app, &identity, &id, &query, |handle, state| {
        Ok(state
            .artifacts
            .iter()
            .map(|a| a.to_json(&handle.id, state.environment_id()))
            .collect())
    })
}

fn artifact_of(
    app: &SharedState,
    identity: &Identity,
    id: &str,
    artifact_id: &str,
) -> ApiResult<(Arc<SessionHandle>, crate::server::agents::model::Artifact)> {
    let handle = session(app, identity, id)?;
    let artifact = handle
        .lock()
        .artifacts
        .iter()
        .find(|a| a.id == artifact_id)
        .cloned()
        .ok_or_else(|| not_found("artifact", "artifact_id", artifact_id))?;
    Ok((handle, artifact))
}

pub async fn artifacts_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, artifact_id)): Path<(String, String)>,
) -> ApiResult<Json> {
    let (handle, artifact) = artifact_of(&app, &identity, &id, &artifact_id)?;
    let environment_id = handle.lock().environment_id().to_owned();
    Ok(axum::Json(artifact.to_json(&handle.id, &environment_id)))
}

pub async fn artifacts_content(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, artifact_id)): Path<(String, String)>,
) -> ApiResult<impl IntoResponse> {
    let (_, artifact) = artifact_of(&app, &identity, &id, &artifact_id)?;
    Ok((
        [
            (http::header::CONTENT_TYPE, "application/octet-stream"),
            (http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        artifact.bytes,
    ))
}

/// Removes the snapshot only; the file in the workspace stays as it is.
pub async fn artifacts_delete(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, artifact_id)): Path<(String, String)>,
) -> ApiResult<Json> {
    let (handle, _) = artifact_of(&app, &identity, &id, &artifact_id)?;
    handle.lock().artifacts.retain(|a| a.id != artifact_id);
    Ok(axum::Json(serde_json::json!({
        "id": artifact_id,
        "object": "agent.session.artifact.deleted",
        "deleted": true,
        "deleted_scope": "snapshot",
    })))
}

pub async fn traces_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json> {
    list_of(&app, &identity, &id, &query, |_, state| {
        Ok(state.traces.clone())
    })
}

pub async fn subagents_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json> {
    list_of(&app, &identity, &id, &query, |_, state| {
        Ok(state.subagents.clone())
    })
}

/// Only ids the runtime emitted exist; any other answers like a missing one.
fn subagent_of(
    app: &SharedState,
    identity: &Identity,
    id: &str,
    subagent_id: &str,
) -> ApiResult<Value> {
    session(app, identity, id)?
        .lock()
        .subagents
        .iter()
        .find(|s| s["id"] == subagent_id)
        .cloned()
        .ok_or_else(|| not_found("subagent", "subagent_id", subagent_id))
}

pub async fn subagents_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, subagent_id)): Path<(String, String)>,
) -> ApiResult<Json> {
    subagent_of(&app, &identity, &id, &subagent_id).map(axum::Json)
}

/// A sub-agent's own items and turns stay inside the runtime: the lists are empty.
pub async fn subagents_items_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, subagent_id)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json> {
    query.page()?;
    subagent_of(&app, &identity, &id, &subagent_id)?;
    Ok(axum::Json(empty_list()))
}

pub async fn subagents_turns_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, subagent_id)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json> {
    query.page()?;
    subagent_of(&app, &identity, &id, &subagent_id)?;
    Ok(axum::Json(empty_list()))
}

pub async fn subagents_turns_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, subagent_id, turn_id)): Path<(String, String, String)>,
) -> ApiResult<Json> {
    subagent_of(&app, &identity, &id, &subagent_id)?;
    Err(not_found("subagent turn", "turn_id", &turn_id))
}

pub async fn subagents_turns_items_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path((id, subagent_id, turn_id)): Path<(String, String, String)>,
) -> ApiResult<Json> {
    subagent_of(&app, &identity, &id, &subagent_id)?;
    Err(not_found("subagent turn", "turn_id", &turn_id))
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    use EndpointId::*;
    Some(match id {
        AgentsSessionsItemsList => on(f, items_list),
        AgentsSessionsTurnsList => on(f, turns_list),
        AgentsSessionsTurnsGet => on(f, turns_get),
        AgentsSessionsTurnsItemsList => on(f, turns_items_list),
        AgentsArtifactsList => on(f, artifacts_list),
        AgentsArtifactsGet => on(f, artifacts_get),
        AgentsArtifactsDelete => on(f, artifacts_delete),
        AgentsArtifactsContent => on(f, artifacts_content),
        AgentsTracesList => on(f, traces_list),
        AgentsSubagentsList => on(f, subagents_list),
        AgentsSubagentsGet => on(f, subagents_get),
        AgentsSubagentsItemsList => on(f, subagents_items_list),
        AgentsSubagentsTurnsList => on(f, subagents_turns_list),
        AgentsSubagentsTurnsGet => on(f, subagents_turns_get),
        AgentsSubagentsTurnsItemsList => on(f, subagents_turns_items_list),
        _ => return None,
    })
}

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [
        &ITEMS,
        &TURNS,
        &TURN,
        &TURN_ITEMS,
        &ARTIFACTS,
        &ARTIFACT,
        &ARTIFACT_DELETE,
        &ARTIFACT_CONTENT,
        &TRACES,
        &SUBAGENTS,
        &SUBAGENT,
        &SUBAGENT_ITEMS,
        &SUBAGENT_TURNS,
        &SUBAGENT_TURN,
        &SUBAGENT_TURN_ITEMS,
    ]
    .into_iter()
    .find(|d| d.id == id)
}

const ITEMS: Doc = Doc::new(EndpointId::AgentsSessionsItemsList, "List a session's items")
    .describe("The items of every turn (messages, reasoning, commands, file changes, tool calls), in the OpenAI items form.")
    .query(page_query)
    .answers(&[Answer::json("The list.", |g| page_of(crate::server::openapi::shared::object(g)))])
    .errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const TURNS: Doc = Doc::new(
    EndpointId::AgentsSessionsTurnsList,
    "List a session's turns",
)
.query(page_query)
.answers(&[Answer::json("The list.", s::list::<TurnObject>)])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const TURN: Doc = Doc::new(EndpointId::AgentsSessionsTurnsGet, "A turn")
    .answers(&[Answer::json("The object.", |g| {
        g.subschema_for::<TurnObject>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const TURN_ITEMS: Doc = Doc::new(
    EndpointId::AgentsSessionsTurnsItemsList,
    "List a turn's items",
)
.query(page_query)
.answers(&[Answer::json("The list.", |g| {
    page_of(crate::server::openapi::shared::object(g))
})])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const ARTIFACTS: Doc = Doc::new(
    EndpointId::AgentsArtifactsList,
    "List a session's artifacts",
)
.describe("Snapshots of the files the runtime changed.")
.query(page_query)
.answers(&[Answer::json("The list.", s::list::<ArtifactObject>)])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const ARTIFACT: Doc = Doc::new(EndpointId::AgentsArtifactsGet, "An artifact")
    .answers(&[Answer::json("The object.", |g| {
        g.subschema_for::<ArtifactObject>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const ARTIFACT_DELETE: Doc = Doc::new(EndpointId::AgentsArtifactsDelete, "Delete an artifact")
    .describe("Removes the snapshot only; the file in the workspace stays.")
    .answers(&[Answer::json("The object.", |g| {
        g.subschema_for::<s::Deleted>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const ARTIFACT_CONTENT: Doc = Doc::new(EndpointId::AgentsArtifactsContent, "An artifact's bytes")
    .answers(&[Answer::bytes(
        "The snapshot's bytes (`X-Content-Type-Options: nosniff`).",
        "application/octet-stream",
    )])
    .errors(&[&[Code::ResourceNotFound]]);

const TRACES: Doc = Doc::new(EndpointId::AgentsTracesList, "List a session's traces")
    .query(page_query)
    .answers(&[Answer::json("The list.", |g| {
        page_of(crate::server::openapi::shared::object(g))
    })])
    .errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const SUBAGENTS: Doc = Doc::new(
    EndpointId::AgentsSubagentsList,
    "List a session's sub-agents",
)
.describe("The sub-agents the runtime reported.")
.query(page_query)
.answers(&[Answer::json("The list.", |g| {
    page_of(crate::server::openapi::shared::object(g))
})])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const SUBAGENT: Doc = Doc::new(EndpointId::AgentsSubagentsGet, "A sub-agent")
    .answers(&[Answer::json(
        "The object.",
        crate::server::openapi::shared::object,
    )])
    .errors(&[&[Code::ResourceNotFound]]);

const SUBAGENT_ITEMS: Doc = Doc::new(
    EndpointId::AgentsSubagentsItemsList,
    "List a sub-agent's items",
)
.describe("Empty: a sub-agent's own items stay inside the runtime.")
.query(page_query)
.answers(&[Answer::json("The list.", |g| {
    page_of(crate::server::openapi::shared::object(g))
})])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const SUBAGENT_TURNS: Doc = Doc::new(
    EndpointId::AgentsSubagentsTurnsList,
    "List a sub-agent's turns",
)
.describe("Empty: a sub-agent's own turns stay inside the runtime.")
.query(page_query)
.answers(&[Answer::json("The list.", |g| {
    page_of(crate::server::openapi::shared::object(g))
})])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const SUBAGENT_TURN: Doc = Doc::new(EndpointId::AgentsSubagentsTurnsGet, "A sub-agent's turn")
    .describe("Always 404: a sub-agent's own turns stay inside the runtime.")
    .errors(&[&[Code::ResourceNotFound]]);

const SUBAGENT_TURN_ITEMS: Doc = Doc::new(
    EndpointId::AgentsSubagentsTurnsItemsList,
    "List a sub-agent turn's items",
)
.describe("Always 404: a sub-agent's own turns stay inside the runtime.")
.errors(&[&[Code::ResourceNotFound]]);
