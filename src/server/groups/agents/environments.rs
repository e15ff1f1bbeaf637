//! Environments, their files and templates: thin handlers over `agents::environments`,
//! their bodies and answers typed in `agents::environments::wire`.

use super::body::{Body, paged};
use super::schemas::{self as s};
use crate::error::{ApiError, ApiResult};
use crate::server::SharedState;
use crate::server::agents::environments::files::FileListQuery;
use crate::server::agents::environments::wire::{
    EnvironmentConfig, EnvironmentFile, EnvironmentObject, FilePage, FileParam, TemplateBody,
    TemplateObject,
};
use crate::server::agents::wire::Deleted;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Path, Query};
use crate::server::openapi::op::{
    Answer, Code, Doc, PATH_WRITE, Schema, SchemaGenerator, json_schema,
};
use crate::server::openapi::shared::page_query;
use crate::server::route::{Bound, on};
use crate::services::paging::PageQuery;
use axum::extract::State;
use axum::routing::MethodFilter;
use axum::{Extension, Json};
use serde_json::Value;

pub async fn environments_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<EnvironmentConfig>,
) -> ApiResult<Json<EnvironmentObject>> {
    app.agents.environment_create(&who.id, body).map(Json)
}

pub async fn environments_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Query(q): Query<PageQuery>,
) -> ApiResult<Json<Value>> {
    paged(q.page()?, app.agents.environment_list(&who.id))
}

pub async fn environments_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<Json<EnvironmentObject>> {
    app.agents.environment_get(&who.id, &id).map(Json)
}

pub async fn environment_files_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    body: Result<Body<FileParam>, ApiError>,
) -> ApiResult<Json<EnvironmentFile>> {
    // Another owner's environment answers 404 whatever the body holds.
    app.agents.environment_get(&who.id, &id)?;
    let Body(body) = body?;
    app.agents
        .environment_file_create(&who.id, &id, &body)
        .map(Json)
}

pub async fn environment_files_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Query(q): Query<FileListQuery>,
) -> ApiResult<Json<FilePage>> {
    app.agents.environment_file_list(&who.id, &id, &q).map(Json)
}

pub async fn templates_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<TemplateBody>,
) -> ApiResult<Json<TemplateObject>> {
    app.agents.template_create(&who.id, body).map(Json)
}

pub async fn templates_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Query(q): Query<PageQuery>,
) -> ApiResult<Json<Value>> {
    paged(q.page()?, app.agents.template_list(&who.id))
}

pub async fn templates_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<Json<TemplateObject>> {
    app.agents.template_get(&who.id, &id).map(Json)
}

pub async fn templates_update(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    body: Result<Body<TemplateBody>, ApiError>,
) -> ApiResult<Json<TemplateObject>> {
    // Another owner's template answers 404 whatever the body holds.
    app.agents.template_get(&who.id, &id)?;
    let Body(body) = body?;
    app.agents.template_update(&who.id, &id, body).map(Json)
}

pub async fn templates_delete(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<Json<Deleted>> {
    app.agents.template_delete(&who.id, &id).map(Json)
}

/// `POST /v1/agents/environments`: the SDK's `{environment: {...}}` or the flat form (one
/// type reads both; the document shows them apart).
fn environment_create(g: &mut SchemaGenerator) -> Schema {
    let environment = g.subschema_for::<EnvironmentConfig>();
    json_schema!({
        "anyOf": [
            {
                "type": "object",
                "required": ["environment"],
                "properties": {
                    "environment": environment,
                    "vault_ids": {"type": "array", "maxItems": 0, "description": "Vaults attach to sessions."},
                },
                "additionalProperties": false,
            },
            environment,
        ],
    })
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
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
.json(environment_create)
.answers(&[Answer::json("The environment.", |g| {
    g.subschema_for::<EnvironmentObject>()
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
        s::list::<EnvironmentObject>,
    )])
    .errors(&[&[Code::CursorNotFound]]);

const ENV_GET: Doc = Doc::new(EndpointId::AgentsEnvironmentsGet, "An environment")
    .answers(&[Answer::json("The environment.", |g| {
        g.subschema_for::<EnvironmentObject>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const FILE_CREATE: Doc = Doc::new(
    EndpointId::AgentsEnvironmentFilesCreate,
    "Put a file in an environment",
)
.json(|g| g.subschema_for::<FileParam>())
.answers(&[Answer::json("The file.", |g| {
    g.subschema_for::<EnvironmentFile>()
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
    g.subschema_for::<FilePage>()
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
.json(|g| g.subschema_for::<TemplateBody>())
.answers(&[Answer::json("The template.", |g| {
    g.subschema_for::<TemplateObject>()
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
    s::list::<TemplateObject>,
)])
.errors(&[&[Code::CursorNotFound]]);

const TPL_GET: Doc = Doc::new(
    EndpointId::AgentsEnvironmentTemplatesGet,
    "An environment template",
)
.answers(&[Answer::json("The template.", |g| {
    g.subschema_for::<TemplateObject>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const TPL_UPDATE: Doc = Doc::new(
    EndpointId::AgentsEnvironmentTemplatesUpdate,
    "Update an environment template",
)
.json(|g| g.subschema_for::<TemplateBody>())
.answers(&[Answer::json("The template.", |g| {
    g.subschema_for::<TemplateObject>()
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
.answers(&[Answer::json("Deleted.", |g| g.subschema_for::<Deleted>())])
.errors(&[&[Code::ResourceNotFound]]);
