//! Environments, their files and templates: thin handlers over `agents::environments`.

use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::agents::environments::files::FileListQuery;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path, Query};
use crate::services::paging::PageQuery;
use axum::Extension;
use axum::extract::State;
use axum::routing::{MethodFilter, MethodRouter, on};
use serde_json::Value;

type Out = ApiResult<axum::Json<Value>>;

pub async fn environments_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .environment_create(&who.id, &body)
        .map(axum::Json)
}

pub async fn environments_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Query(q): Query<PageQuery>,
) -> Out {
    Ok(axum::Json(
        q.page()?.apply(app.agents.environment_list(&who.id))?,
    ))
}

pub async fn environments_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> Out {
    app.agents.environment_get(&who.id, &id).map(axum::Json)
}

pub async fn environment_files_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .environment_file_create(&who.id, &id, &body)
        .map(axum::Json)
}

pub async fn environment_files_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Query(q): Query<FileListQuery>,
) -> Out {
    app.agents
        .environment_file_list(&who.id, &id, &q)
        .map(axum::Json)
}

pub async fn templates_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Json(body): Json<Value>,
) -> Out {
    app.agents.template_create(&who.id, &body).map(axum::Json)
}

pub async fn templates_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Query(q): Query<PageQuery>,
) -> Out {
    Ok(axum::Json(
        q.page()?.apply(app.agents.template_list(&who.id))?,
    ))
}

pub async fn templates_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> Out {
    app.agents.template_get(&who.id, &id).map(axum::Json)
}

pub async fn templates_update(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .template_update(&who.id, &id, &body)
        .map(axum::Json)
}

pub async fn templates_delete(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> Out {
    app.agents.template_delete(&who.id, &id).map(axum::Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    use EndpointId::*;
    Some(match id {
        AgentsEnvironmentsCreate => on(f, environments_create),
        AgentsEnvironmentsList => on(f, environments_list),
        AgentsEnvironmentsGet => on(f, environments_get),
        AgentsEnvironmentFilesCreate => on(f, environment_files_create),
        AgentsEnvironmentFilesList => on(f, environment_files_list),
        AgentsEnvironmentTemplatesCreate => on(f, templates_create),
        AgentsEnvironmentTemplatesList => on(f, templates_list),
        AgentsEnvironmentTemplatesGet => on(f, templates_get),
        AgentsEnvironmentTemplatesUpdate => on(f, templates_update),
        AgentsEnvironmentTemplatesDelete => on(f, templates_delete),
        _ => return None,
    })
}
