//! Saved agent definitions and the models list built from them and the runtimes.

use super::body::{Body, paged};
use super::schemas::{self as s};
use crate::error::{ApiError, ApiResult, Code};
use crate::server::SharedState;
use crate::server::agents::definitions::wire::{AgentDefinition, DefinitionBody, ModelObject};
use crate::server::agents::files::{FileCreate, FileObject};
use crate::server::agents::runtimes::{self, RUNTIMES};
use crate::server::agents::wire::{Deleted, to_json};
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Path, Query};
use crate::server::openapi::op::{Answer, Doc, json_schema};
use crate::server::openapi::shared::page_query;
use crate::server::route::{Bound, on};
use crate::services::paging::{PageQuery, envelope};
use axum::Extension;
use axum::extract::State;
use axum::routing::MethodFilter;
use http::HeaderMap;
use serde_json::Value;

type Out = ApiResult<axum::Json<Value>>;

pub async fn definitions_create(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
    Body(body): Body<DefinitionBody>,
) -> ApiResult<axum::Json<AgentDefinition>> {
    let header = super::header(&headers, "x-svc-adapter");
    let default = app.agents.settings.default_runtime;
    app.agents
        .definitions
        .create(&identity.id, header, body, default)
        .map(axum::Json)
}

pub async fn definitions_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Query(query): Query<PageQuery>,
) -> Out {
    paged(query.page()?, app.agents.definitions.list(&identity.id))
}

pub async fn definitions_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(agent_id): Path<String>,
) -> ApiResult<axum::Json<AgentDefinition>> {
    Ok(axum::Json(
        app.agents
            .definitions
            .get(&identity.id, &agent_id)?
            .answer(),
    ))
}

pub async fn definitions_update(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(agent_id): Path<String>,
    Body(body): Body<DefinitionBody>,
) -> ApiResult<axum::Json<AgentDefinition>> {
    app.agents
        .definitions
        .update(&identity.id, &agent_id, body)
        .map(axum::Json)
}

pub async fn definitions_delete(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(agent_id): Path<String>,
) -> ApiResult<axum::Json<Deleted>> {
    app.agents
        .definitions
        .delete(&identity.id, &agent_id)
        .map(axum::Json)
}

/// The two implemented runtimes, then the caller's definitions: the whole list in one page,
/// as the OpenAI models list is (its SDK reads no cursor). Listing has no side effect.
pub async fn models_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
) -> Out {
    let created = app.started_at;
    let mut models: Vec<Value> = RUNTIMES
        .iter()
        .filter(|r| r.implemented)
        .map(|r| to_json(&ModelObject::runtime(r.id, r.id, created)))
        .collect();
    models.extend(
        app.agents
            .definitions
            .list(&identity.id)
            .iter()
            .map(|d| to_json(&ModelObject::definition(d))),
    );
    Ok(axum::Json(envelope(models, false)))
}

pub async fn models_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(model): Path<String>,
) -> Out {
    if let Some(runtime) = runtimes::resolve(&model).filter(|r| r.implemented) {
        return Ok(axum::Json(to_json(&ModelObject::runtime(
            &model,
            runtime.id,
            app.started_at,
        ))));
    }
    match app.agents.definitions.get(&identity.id, &model) {
        Ok(definition) => Ok(axum::Json(to_json(&ModelObject::definition(
            &definition.answer(),
        )))),
        Err(_) => Err(ApiError::new(
            Code::ModelNotFound,
            format!(
                "no model `{model}`: GET /v1/models lists the runtimes and your agent definitions"
            ),
        )
        .with_param("model")),
    }
}

pub async fn files_create(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Body(body): Body<FileCreate>,
) -> Out {
    let max = app.agents.settings.max_file_bytes;
    app.agents
        .files
        .create(&identity.id, &body, max)
        .map(axum::Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    use EndpointId::*;
    Some(match id {
        AgentsDefinitionsCreate => on(f, definitions_create),
        AgentsDefinitionsList => on(f, definitions_list),
        AgentsDefinitionsGet => on(f, definitions_get),
        AgentsDefinitionsUpdate => on(f, definitions_update),
        AgentsDefinitionsDelete => on(f, definitions_delete),
        AgentsModelsList => on(f, models_list),
        AgentsModelsGet => on(f, models_get),
        AgentsFilesCreate => on(f, files_create),
        _ => return None,
    })
}

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [
        &CREATE, &LIST, &GET, &UPDATE, &DELETE, &MODELS, &MODEL, &FILE,
    ]
    .into_iter()
    .find(|d| d.id == id)
}

const DEFINITION_CODES: &[Code] = &[Code::NotImplementedLocally, Code::RuntimeNotInstalled];

const CREATE: Doc = Doc::new(
    EndpointId::AgentsDefinitionsCreate,
    "Save an agent definition",
)
.headers(&[(
    "X-Svc-Adapter",
    "The runtime, when the body does not name one.",
)])
.json(|g| {
    // The update's body, with `model` required.
    let body = g.subschema_for::<DefinitionBody>();
    json_schema!({"allOf": [body, {"required": ["model"], "properties": {"model": {"type": "string", "pattern": "\\S"}}}]})
})
.answers(&[Answer::json("The definition.", |g| {
    g.subschema_for::<AgentDefinition>()
})])
.errors(&[DEFINITION_CODES]);

const LIST: Doc = Doc::new(EndpointId::AgentsDefinitionsList, "List agent definitions")
    .query(page_query)
    .answers(&[Answer::json(
        "The caller's definitions.",
        s::list::<AgentDefinition>,
    )])
    .errors(&[&[Code::CursorNotFound]]);

const GET: Doc = Doc::new(EndpointId::AgentsDefinitionsGet, "An agent definition")
    .answers(&[Answer::json("The definition.", |g| {
        g.subschema_for::<AgentDefinition>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const UPDATE: Doc = Doc::new(EndpointId::AgentsDefinitionsUpdate, "Update an agent definition")
    .describe("The given fields over the saved ones (the runtime stays); sessions keep the copy they started with.")
    .json(|g| g.subschema_for::<DefinitionBody>())
    .answers(&[Answer::json("The definition.", |g| g.subschema_for::<AgentDefinition>())])
    .errors(&[&[Code::ResourceNotFound], DEFINITION_CODES]);

const DELETE: Doc = Doc::new(
    EndpointId::AgentsDefinitionsDelete,
    "Delete an agent definition",
)
.answers(&[Answer::json("Deleted.", |g| g.subschema_for::<Deleted>())])
.errors(&[&[Code::ResourceNotFound]]);

const MODELS: Doc = Doc::new(EndpointId::AgentsModelsList, "List models")
    .describe("The implemented runtimes, then the caller's definitions, in one page.")
    .answers(&[Answer::json("The models.", s::list::<ModelObject>)]);

const MODEL: Doc = Doc::new(EndpointId::AgentsModelsGet, "A model")
    .answers(&[Answer::json("The model.", |g| {
        g.subschema_for::<ModelObject>()
    })])
    .errors(&[&[Code::ModelNotFound]]);

const FILE: Doc = Doc::new(EndpointId::AgentsFilesCreate, "Upload a file")
    .describe("Kept in memory for environments and sessions to place (`file_id`).")
    .json(|g| g.subschema_for::<FileCreate>())
    .answers(&[Answer::json("The file.", |g| {
        g.subschema_for::<FileObject>()
    })]);
