//! Vaults and their credentials: thin handlers over `agents::vaults`.

use super::schemas::{self as s};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path, Query};
use crate::server::openapi::op::{Answer, Code, Doc};
use crate::server::openapi::shared::page_query;
use crate::services::paging::PageQuery;
use axum::Extension;
use axum::extract::State;
use axum::routing::{MethodFilter, MethodRouter, on};
use serde_json::Value;

type Out = ApiResult<axum::Json<Value>>;

pub async fn vaults_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Json(body): Json<Value>,
) -> Out {
    app.agents.vaults.create(&who.id, &body).map(axum::Json)
}

pub async fn vaults_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Query(q): Query<PageQuery>,
) -> Out {
    Ok(axum::Json(
        q.page()?.apply(app.agents.vaults.list(&who.id))?,
    ))
}

pub async fn vaults_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> Out {
    app.agents.vaults.get(&who.id, &id).map(axum::Json)
}

pub async fn vaults_update(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .vaults
        .update(&who.id, &id, &body)
        .map(axum::Json)
}

pub async fn vaults_delete(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> Out {
    app.agents.vaults.delete(&who.id, &id).map(axum::Json)
}

pub async fn credentials_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(vault_id): Path<String>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .vaults
        .credential_create(&who.id, &vault_id, &body)
        .map(axum::Json)
}

pub async fn credentials_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(vault_id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Out {
    let page = q.page()?;
    Ok(axum::Json(page.apply(
        app.agents.vaults.credential_list(&who.id, &vault_id)?,
    )?))
}

pub async fn credentials_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path((vault_id, id)): Path<(String, String)>,
) -> Out {
    app.agents
        .vaults
        .credential_get(&who.id, &vault_id, &id)
        .map(axum::Json)
}

pub async fn credentials_update(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path((vault_id, id)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Out {
    app.agents
        .vaults
        .credential_update(&who.id, &vault_id, &id, &body)
        .map(axum::Json)
}

pub async fn credentials_delete(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path((vault_id, id)): Path<(String, String)>,
) -> Out {
    app.agents
        .vaults
        .credential_delete(&who.id, &vault_id, &id)
        .map(axum::Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    use EndpointId::*;
    Some(match id {
        AgentsVaultsCreate => on(f, vaults_create),
        AgentsVaultsList => on(f, vaults_list),
        AgentsVaultsGet => on(f, vaults_get),
        AgentsVaultsUpdate => on(f, vaults_update),
        AgentsVaultsDelete => on(f, vaults_delete),
        AgentsVaultCredentialsCreate => on(f, credentials_create),
        AgentsVaultCredentialsList => on(f, credentials_list),
        AgentsVaultCredentialsGet => on(f, credentials_get),
        AgentsVaultCredentialsUpdate => on(f, credentials_update),
        AgentsVaultCredentialsDelete => on(f, credentials_delete),
        _ => return None,
    })
}

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [
        &V_CREATE, &V_LIST, &V_GET, &V_UPDATE, &V_DELETE, &C_CREATE, &C_LIST, &C_GET, &C_UPDATE,
        &C_DELETE,
    ]
    .into_iter()
    .find(|d| d.id == id)
}

const V_CREATE: Doc = Doc::new(EndpointId::AgentsVaultsCreate, "Create a vault")
    .json(s::vault_body)
    .answers(&[Answer::json("The vault.", |g| {
        g.subschema_for::<s::Vault>()
    })]);

const V_LIST: Doc = Doc::new(EndpointId::AgentsVaultsList, "List vaults")
    .query(page_query)
    .answers(&[Answer::json("The caller's vaults.", s::list::<s::Vault>)])
    .errors(&[&[Code::CursorNotFound]]);

const V_GET: Doc = Doc::new(EndpointId::AgentsVaultsGet, "A vault")
    .answers(&[Answer::json("The vault.", |g| {
        g.subschema_for::<s::Vault>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const V_UPDATE: Doc = Doc::new(EndpointId::AgentsVaultsUpdate, "Update a vault")
    .json(s::vault_body)
    .answers(&[Answer::json("The vault.", |g| {
        g.subschema_for::<s::Vault>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const V_DELETE: Doc = Doc::new(EndpointId::AgentsVaultsDelete, "Delete a vault")
    .describe("And its credentials: sessions that use them fail on their next event.")
    .answers(&[Answer::json("Deleted.", |g| {
        g.subschema_for::<s::Deleted>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const C_CREATE: Doc = Doc::new(EndpointId::AgentsVaultCredentialsCreate, "Add a credential")
    .describe("A token for one https MCP server on a public address; it reaches runtimes only as that server's header.")
    .json(s::credential_create)
    .answers(&[Answer::json("The credential (never its secret).", |g| g.subschema_for::<s::VaultCredential>())])
    .errors(&[&[Code::ResourceNotFound]]);

const C_LIST: Doc = Doc::new(
    EndpointId::AgentsVaultCredentialsList,
    "List a vault's credentials",
)
.query(page_query)
.answers(&[Answer::json(
    "The credentials.",
    s::list::<s::VaultCredential>,
)])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const C_GET: Doc = Doc::new(EndpointId::AgentsVaultCredentialsGet, "A credential")
    .answers(&[Answer::json("The credential.", |g| {
        g.subschema_for::<s::VaultCredential>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const C_UPDATE: Doc = Doc::new(
    EndpointId::AgentsVaultCredentialsUpdate,
    "Update a credential",
)
.json(s::credential_body)
.answers(&[Answer::json("The credential.", |g| {
    g.subschema_for::<s::VaultCredential>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const C_DELETE: Doc = Doc::new(
    EndpointId::AgentsVaultCredentialsDelete,
    "Delete a credential",
)
.answers(&[Answer::json("Deleted.", |g| {
    g.subschema_for::<s::Deleted>()
})])
.errors(&[&[Code::ResourceNotFound]]);
