//! Saved agent definitions and the models list built from them and the runtimes.

use crate::error::{ApiError, ApiResult, Code};
use crate::server::SharedState;
use crate::server::agents::runtimes::{self, RUNTIMES};
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path, Query};
use crate::services::paging::{PageQuery, envelope};
use axum::Extension;
use axum::extract::State;
use axum::routing::{MethodFilter, MethodRouter, on};
use http::HeaderMap;
use serde_json::{Value, json};

type Out = ApiResult<axum::Json<Value>>;

pub async fn definitions_create(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Out {
    let header = super::header(&headers, "x-svc-adapter");
    let default = app.agents.settings.default_runtime;
    app.agents
        .definitions
        .create(&identity.id, header, &body, default)
        .map(axum::Json)
}

pub async fn definitions_list(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Query(query): Query<PageQuery>,
) -> Out {
    let page = query.page()?;
    Ok(axum::Json(
        page.apply(app.agents.definitions.list(&identity.id))?,
    ))
}

pub async fn definitions_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(agent_id): Path<String>,
) -> Out {
    Ok(axum::Json(
        app.agents
            .definitions
            .get(&identity.id, &agent_id)?
            .to_json(),
    ))
}

pub async fn definitions_update(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(agent_id): Path<String>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .definitions
        .update(&identity.id, &agent_id, &body)
        .map(axum::Json)
}

pub async fn definitions_delete(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(agent_id): Path<String>,
) -> Out {
    app.agents
        .definitions
        .delete(&identity.id, &agent_id)
        .map(axum::Json)
}

fn runtime_model(id: &str, runtime: &str, created: i64) -> Value {
    json!({"id": id, "object": "model", "created": created, "owned_by": "svc-local",
           "x_svc": {"kind": "runtime", "runtime": runtime}})
}

fn definition_model(definition: &Value) -> Value {
    json!({"id": definition["id"], "object": "model", "created": definition["created_at"],
           "owned_by": "svc-local",
           "x_svc": {"kind": "agent_definition", "runtime": definition["x_svc"]["runtime"], "model": definition["model"]}})
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
        .map(|r| runtime_model(r.id, r.id, created))
        .collect();
    models.extend(
        app.agents
            .definitions
            .list(&identity.id)
            .iter()
            .map(definition_model),
    );
    Ok(axum::Json(envelope(models, false)))
}

pub async fn models_get(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(model): Path<String>,
) -> Out {
    if let Some(runtime) = runtimes::resolve(&model).filter(|r| r.implemented) {
        return Ok(axum::Json(runtime_model(
            &model,
            runtime.id,
            app.started_at,
        )));
    }
    match app.agents.definitions.get(&identity.id, &model) {
        Ok(definition) => Ok(axum::Json(definition_model(&definition.to_json()))),
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
    Json(body): Json<Value>,
) -> Out {
    let max = app.agents.settings.max_file_bytes;
    app.agents
        .files
        .create(&identity.id, &body, max)
        .map(axum::Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
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
