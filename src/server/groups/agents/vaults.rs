//! Vaults and their credentials: thin handlers over `agents::vaults`, their bodies and
//! answers typed in `agents::vaults::wire`.

use super::body::{Body, paged};
use super::schemas::{self as s};
use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::agents::vaults::wire::{
    CredentialCreate, CredentialUpdate, Vault, VaultBody, VaultCredential,
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

pub async fn vaults_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<VaultBody>,
) -> ApiResult<Json<Vault>> {
    app.agents.vaults.create(&who.id, body).map(Json)
}

pub async fn vaults_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Query(q): Query<PageQuery>,
) -> ApiResult<Json<Value>> {
    paged(q.page()?, app.agents.vaults.list(&who.id))
}

pub async fn vaults_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vault>> {
    app.agents.vaults.get(&who.id, &id).map(Json)
}

pub async fn vaults_update(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    Body(body): Body<VaultBody>,
) -> ApiResult<Json<Vault>> {
    app.agents.vaults.update(&who.id, &id, body).map(Json)
}

pub async fn vaults_delete(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
) -> ApiResult<Json<Deleted>> {
    app.agents.vaults.delete(&who.id, &id).map(Json)
}

pub async fn credentials_create(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(vault_id): Path<String>,
    Body(body): Body<CredentialCreate>,
) -> ApiResult<Json<VaultCredential>> {
    app.agents
        .vaults
        .credential_create(&who.id, &vault_id, body)
        .map(Json)
}

pub async fn credentials_list(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path(vault_id): Path<String>,
    Query(q): Query<PageQuery>,
) -> ApiResult<Json<Value>> {
    let page = q.page()?;
    paged(page, app.agents.vaults.credential_list(&who.id, &vault_id)?)
}

pub async fn credentials_get(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path((vault_id, id)): Path<(String, String)>,
) -> ApiResult<Json<VaultCredential>> {
    app.agents
        .vaults
        .credential_get(&who.id, &vault_id, &id)
        .map(Json)
}

pub async fn credentials_update(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path((vault_id, id)): Path<(String, String)>,
    Body(body): Body<CredentialUpdate>,
) -> ApiResult<Json<VaultCredential>> {
    app.agents
        .vaults
        .credential_update(&who.id, &vault_id, &id, body)
        .map(Json)
}

pub async fn credentials_delete(
    State(app): State<SharedState>,
    Extension(who): Extension<Identity>,
    Path((vault_id, id)): Path<(String, String)>,
) -> ApiResult<Json<Deleted>> {
    app.agents
        .vaults
        .credential_delete(&who.id, &vault_id, &id)
        .map(Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
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
    .json(|g| g.subschema_for::<VaultBody>())
    .answers(&[Answer::json("The vault.", |g| g.subschema_for::<Vault>())]);

const V_LIST: Doc = Doc::new(EndpointId::AgentsVaultsList, "List vaults")
    .query(page_query)
    .answers(&[Answer::json("The caller's vaults.", s::list::<Vault>)])
    .errors(&[&[Code::CursorNotFound]]);

const V_GET: Doc = Doc::new(EndpointId::AgentsVaultsGet, "A vault")
    .answers(&[Answer::json("The vault.", |g| g.subschema_for::<Vault>())])
    .errors(&[&[Code::ResourceNotFound]]);

const V_UPDATE: Doc = Doc::new(EndpointId::AgentsVaultsUpdate, "Update a vault")
    .json(|g| g.subschema_for::<VaultBody>())
    .answers(&[Answer::json("The vault.", |g| g.subschema_for::<Vault>())])
    .errors(&[&[Code::ResourceNotFound]]);

const V_DELETE: Doc = Doc::new(EndpointId::AgentsVaultsDelete, "Delete a vault")
    .describe("And its credentials: sessions that use them fail on their next event.")
    .answers(&[Answer::json("Deleted.", |g| g.subschema_for::<Deleted>())])
    .errors(&[&[Code::ResourceNotFound]]);

const C_CREATE: Doc = Doc::new(EndpointId::AgentsVaultCredentialsCreate, "Add a credential")
    .describe("A token for one https MCP server on a public address; it reaches runtimes only as that server's header.")
    .json(|g| g.subschema_for::<CredentialCreate>())
    .answers(&[Answer::json("The credential (never its secret).", |g| g.subschema_for::<VaultCredential>())])
    .errors(&[&[Code::ResourceNotFound]]);

const C_LIST: Doc = Doc::new(
    EndpointId::AgentsVaultCredentialsList,
    "List a vault's credentials",
)
.query(page_query)
.answers(&[Answer::json("The credentials.", s::list::<VaultCredential>)])
.errors(&[&[Code::ResourceNotFound, Code::CursorNotFound]]);

const C_GET: Doc = Doc::new(EndpointId::AgentsVaultCredentialsGet, "A credential")
    .answers(&[Answer::json("The credential.", |g| {
        g.subschema_for::<VaultCredential>()
    })])
    .errors(&[&[Code::ResourceNotFound]]);

const C_UPDATE: Doc = Doc::new(
    EndpointId::AgentsVaultCredentialsUpdate,
    "Update a credential",
)
.json(|g| g.subschema_for::<CredentialUpdate>())
.answers(&[Answer::json("The credential.", |g| {
    g.subschema_for::<VaultCredential>()
})])
.errors(&[&[Code::ResourceNotFound]]);

const C_DELETE: Doc = Doc::new(
    EndpointId::AgentsVaultCredentialsDelete,
    "Delete a credential",
)
.answers(&[Answer::json("Deleted.", |g| g.subschema_for::<Deleted>())])
.errors(&[&[Code::ResourceNotFound]]);
