//! Environments, their files and templates: thin handlers over `agents::environments`.

use super::schemas::{self as s};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::agents::environments::files::FileListQuery;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path, Query};
use crate::server::openapi::op::{Answer, Code, Doc, PATH_WRITE, json_schema};
use crate::server::openapi::shared::page_query;
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

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [
        &ENV_CREATE,
        &ENV_LIST,
        &ENV_GET,
        &FILE_CREATE,
        &FILE_LIST,
        &TPL_CREATE,
        &TPL_LIST,
        &TPL_GET,
        &TPL_UPDATE,
        &TPL_DELETE,
    ]
    .into_iter()
    .find(|d| d.id == id)
}

const ENV_CREATE: Doc = Doc::new(
    EndpointId::AgentsEnvironmentsCreate,
    "Create an environment",
)
.describe("A self-hosted workspace: its directory, variables and files (from a template too).")
.json(s::environment_create)
.answers(&[Answer::json("The environment.", |g| {
    g.subschema_for::<s::AgentEnvironment>()
})])
.errors(&[
    PATH_WRITE,
    &[
        Code::ResourceNotFound,
        Code::PathRefused,
        Code::AgentsFileExists,
    ],
]);

const ENV_LIST: Doc = Doc::new(EndpointId::AgentsEnvironmentsList, "List environments")
    .query(page_query)
    .answers(&[Answer::json(
        "The caller's environments.",
        s::list::<s::AgentEnvironment>,
    )])
    .errors(&[&[Code::CursorNotFound]]);

const ENV_GET: Doc = Doc::new(EndpointId::AgentsEnvironmentsGet, "An environment")
    .answers(&[Answer::json("The environment.", |g| {
        g.subschema_for::<s::AgentEnvironment>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const FILE_CREATE: Doc = Doc::new(
    EndpointId::AgentsEnvironmentFilesCreate,
    "Put a file in an environment",
)
.json(|g| g.subschema_for::<s::FileParam>())
.answers(&[Answer::json("The file.", |g| {
    g.subschema_for::<s::EnvironmentFile>()
})])
.errors(&[
    PATH_WRITE,
    &[
        Code::ResourceNotFound,
        Code::PathRefused,
        Code::AgentsFileExists,
    ],
]);

const FILE_LIST: Doc = Doc::new(
    EndpointId::AgentsEnvironmentFilesList,
    "List an environment's files",
)
.query(|_| {
    json_schema!({"type": "object", "properties": {
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "order": {"type": "string", "enum": ["asc", "desc"]},
        "page": {"type": "string", "description": "The previous page's `next`."},
        "path": {"type": "string", "description": "Only under this directory."},
    }})
})
.answers(&[Answer::json("A page of files.", |g| {
    let file = g.subschema_for::<s::EnvironmentFile>();
    json_schema!({
        "type": "object",
        "required": ["object", "data", "has_more"],
        "properties": {
            "object": {"const": "list"},
            "data": {"type": "array", "items": file},
            "has_more": {"type": "boolean"},
            "next": {"type": ["string", "null"]},
        },
    })
})])
.errors(&[
    PATH_WRITE,
    &[
        Code::ResourceNotFound,
        Code::PathRefused,
        Code::AgentsFileExists,
    ],
]);

const TPL_CREATE: Doc = Doc::new(
    EndpointId::AgentsEnvironmentTemplatesCreate,
    "Create an environment template",
)
.json(s::template_body)
.answers(&[Answer::json("The template.", |g| {
    g.subschema_for::<s::EnvironmentTemplate>()
})])
.errors(&[
    PATH_WRITE,
    &[
        Code::ResourceNotFound,
        Code::PathRefused,
        Code::AgentsFileExists,
    ],
]);

const TPL_LIST: Doc = Doc::new(
    EndpointId::AgentsEnvironmentTemplatesList,
    "List environment templates",
)
.query(page_query)
.answers(&[Answer::json(
    "The caller's templates.",
    s::list::<s::EnvironmentTemplate>,
)])
.errors(&[&[Code::CursorNotFound]]);

const TPL_GET: Doc = Doc::new(
    EndpointId::AgentsEnvironmentTemplatesGet,
    "An environment template",
)
.answers(&[Answer::json("The template.", |g| {
    g.subschema_for::<s::EnvironmentTemplate>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const TPL_UPDATE: Doc = Doc::new(
    EndpointId::AgentsEnvironmentTemplatesUpdate,
    "Update an environment template",
)
.json(s::template_body)
.answers(&[Answer::json("The template.", |g| {
    g.subschema_for::<s::EnvironmentTemplate>()
})])
.errors(&[
    PATH_WRITE,
    &[
        Code::ResourceNotFound,
        Code::PathRefused,
        Code::AgentsFileExists,
    ],
]);

const TPL_DELETE: Doc = Doc::new(
    EndpointId::AgentsEnvironmentTemplatesDelete,
    "Delete an environment template",
)
.answers(&[Answer::json("Deleted.", |g| {
    g.subschema_for::<s::Deleted>()
})])
.errors(&[&[Code::ResourceNotFound]]);
