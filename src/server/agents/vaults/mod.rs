//! Vaults and credentials (agents spec 2.9, 4.8), in memory. A credential's token is
//! write-only: no answer ever carries it, a prefix, its length or a hash. Tokens wait here
//! for sessions to attach them (`vault_ids`) and inject them into matching MCP servers.

pub mod wire;

use crate::error::ApiError;
use crate::server::agents::input::{invalid, not_found};
use crate::server::agents::wire::Deleted;
use crate::services::ids;
use serde_json::{Map, Value};
use std::sync::Mutex;
use wire::{
    AUTH_TYPE, AuthParam, AuthType, CredentialAuth, CredentialCreate, CredentialUpdate, Networking,
    VaultBody, VaultCredential,
};

pub const DEFAULT_MAX_VAULTS: usize = 100;

#[derive(Debug, Clone)]
struct Vault {
    id: String,
    owner: String,
    name: Option<String>,
    metadata: Map<String, Value>,
    created_at: i64,
    credentials: Vec<Credential>,
}

#[derive(Debug, Clone)]
pub struct Credential {
    pub id: String,
    pub name: String,
    pub metadata: Map<String, Value>,
    pub kind: &'static str,
    pub mcp_server_url: String,
    /// The secret; never serialized.
    pub token: String,
    pub expires_at: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Vault {
    fn answer(&self) -> wire::Vault {
        wire::Vault {
            id: self.id.clone(),
            name: self.name.clone(),
            metadata: self.metadata.clone(),
            created_at: self.created_at,
        }
    }
}

impl Credential {
    fn answer(&self, vault_id: &str) -> VaultCredential {
        VaultCredential {
            id: self.id.clone(),
            object: "vault.credential",
            vault_id: vault_id.to_owned(),
            name: self.name.clone(),
            metadata: self.metadata.clone(),
            auth: CredentialAuth {
                kind: self.kind,
                mcp_server_url: self.mcp_server_url.clone(),
                expires_at: (self.kind == "mcp_oauth").then(|| self.expires_at.clone()),
            },
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

pub struct Vaults {
    vaults: Mutex<Vec<Vault>>,
    max_per_owner: usize,
    allow_private_urls: bool,
}

impl Vaults {
    pub fn new(max_per_owner: usize, allow_private_urls: bool) -> Vaults {
        Vaults {
            vaults: Mutex::new(Vec::new()),
            max_per_owner,
            allow_private_urls,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vault>> {
        self.vaults.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn find<'a>(list: &'a mut [Vault], owner: &str, id: &str) -> Result<&'a mut Vault, ApiError> {
        list.iter_mut()
            .find(|v| v.id == id && v.owner == owner)
            .ok_or_else(|| not_found("vault", "vault_id", id))
    }

    pub fn create(&self, owner: &str, body: VaultBody) -> Result<wire::Vault, ApiError> {
        let mut list = self.lock();
        if list.iter().filter(|v| v.owner == owner).count() >= self.max_per_owner {
            return Err(invalid(
                "name",
                format!(
                    "this identity already has {} vaults, the limit (SVC_AGENTS_MAX_VAULTS)",
                    self.max_per_owner
                ),
            ));
        }
        let vault = Vault {
            id: ids::new("vault"),
            owner: owner.to_owned(),
            name: body.name.flatten(),
            metadata: body.metadata.unwrap_or_default().read("metadata")?,
            created_at: ids::now(),
            credentials: Vec::new(),
        };
        let answer = vault.answer();
        list.push(vault);
        Ok(answer)
    }

    pub fn list(&self, owner: &str) -> Vec<wire::Vault> {
        self.lock()
            .iter()
            .filter(|v| v.owner == owner)
            .map(Vault::answer)
            .collect()
    }

    pub fn get(&self, owner: &str, id: &str) -> Result<wire::Vault, ApiError> {
        Ok(Vaults::find(&mut self.lock(), owner, id)?.answer())
    }

    /// A key given replaces, `null` included (it clears).
    pub fn update(&self, owner: &str, id: &str, body: VaultBody) -> Result<wire::Vault, ApiError> {
        let metadata = body.metadata.map(|m| m.read("metadata")).transpose()?;
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, id)?;
        if let Some(name) = body.name {
            vault.name = name;
        }
        if let Some(metadata) = metadata {
            vault.metadata = metadata;
        }
        Ok(vault.answer())
    }

    pub fn delete(&self, owner: &str, id: &str) -> Result<Deleted, ApiError> {
        let mut list = self.lock();
        Vaults::find(&mut list, owner, id)?;
        list.retain(|v| !(v.id == id && v.owner == owner));
        Ok(Deleted::new(id, "vault.deleted"))
    }

    pub fn credential_create(
        &self,
        owner: &str,
        vault_id: &str,
        body: CredentialCreate,
    ) -> Result<VaultCredential, ApiError> {
        let name = body
            .name
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| invalid("name", "`name` is required"))?;
        let metadata = body.metadata.read("metadata")?;
        let auth = body
            .auth
            .ok_or_else(|| invalid("auth", "`auth` is required"))?
            .0;
        let (kind, url, token, expires_at) = self.auth(auth)?;
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, vault_id)?;
        let now = ids::now();
        let credential = Credential {
            id: ids::new("cred"),
            name,
            metadata,
            kind,
            mcp_server_url: url,
            token,
            expires_at,
            created_at: now,
            updated_at: now,
        };
        let answer = credential.answer(vault_id);
        vault.credentials.push(credential);
        Ok(answer)
    }

    pub fn credential_list(
        &self,
        owner: &str,
        vault_id: &str,
    ) -> Result<Vec<VaultCredential>, ApiError> {
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, vault_id)?;
        Ok(vault
            .credentials
            .iter()
            .map(|c| c.answer(vault_id))
            .collect())
    }

    pub fn credential_get(
        &self,
        owner: &str,
        vault_id: &str,
        id: &str,
    ) -> Result<VaultCredential, ApiError> {
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, vault_id)?;
        vault
            .credentials
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.answer(vault_id))
            .ok_or_else(|| not_found("credential", "credential_id", id))
    }

    /// `auth` replaces the secret (same or another kind); the change applies from the next turn.
    pub fn credential_update(
        &self,
        owner: &str,
        vault_id: &str,
        id: &str,
        body: CredentialUpdate,
    ) -> Result<VaultCredential, ApiError> {
        let auth = body.auth.map(|auth| self.auth(auth.0)).transpose()?;
        let metadata = body.metadata.map(|m| m.read("metadata")).transpose()?;
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, vault_id)?;
        let credential = vault
            .credentials
            .iter_mut()
            .find(|c| c.id == id)
            .ok_or_else(|| not_found("credential", "credential_id", id))?;
        if let Some((kind, url, token, expires_at)) = auth {
            (
                credential.kind,
                credential.mcp_server_url,
                credential.token,
                credential.expires_at,
            ) = (kind, url, token, expires_at);
        }
        if let Some(name) = body.name.filter(|n| !n.trim().is_empty()) {
            credential.name = name;
        }
        if let Some(metadata) = metadata {
            credential.metadata = metadata;
        }
        credential.updated_at = ids::now();
        Ok(credential.answer(vault_id))
    }

    pub fn credential_delete(
        &self,
        owner: &str,
        vault_id: &str,
        id: &str,
    ) -> Result<Deleted, ApiError> {
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, vault_id)?;
        let before = vault.credentials.len();
        vault.credentials.retain(|c| c.id != id);
        if vault.credentials.len() == before {
            return Err(not_found("credential", "credential_id", id));
        }
        Ok(Deleted::new(id, "vault.credential.deleted"))
    }
    /// One credential of the caller's, with its secret, for injection.
    pub fn credential(&self, owner: &str, vault_id: &str, id: &str) -> Option<Credential> {
        self.lock()
            .iter()
            .find(|v| v.id == vault_id && v.owner == owner)?
            .credentials
            .iter()
            .find(|c| c.id == id)
            .cloned()
    }

    /// Every credential in the caller's vaults `vault_ids`, with its vault; `Err` names the
    /// first id that is not one of the caller's vaults.
    pub fn attached(
        &self,
        owner: &str,
        vault_ids: &[String],
    ) -> Result<Vec<(String, Credential)>, usize> {
        let list = self.lock();
        let mut out = Vec::new();
        for (i, id) in vault_ids.iter().enumerate() {
            let vault = list
                .iter()
                .find(|v| &v.id == id && v.owner == owner)
                .ok_or(i)?;
            out.extend(vault.credentials.iter().map(|c| (id.clone(), c.clone())));
        }
        Ok(out)
    }

    /// What the types cannot say: which kind, its token (required, one line, only under its
    /// kind's key), the server's URL, `expires_at` as a time, no `refresh`, the networking.
    fn auth(
        &self,
        auth: AuthParam,
    ) -> Result<(&'static str, String, String, Option<String>), ApiError> {
        let kind = auth.kind.ok_or_else(|| invalid("auth.type", AUTH_TYPE))?;
        if auth.refresh.is_some() {
            return Err(invalid(
                "auth.refresh",
                "`mcp_oauth.refresh` is refused: the server does not refresh tokens",
            ));
        }
        if let Some(networking) = &auth.networking {
            Vaults::networking(&networking.0, auth.mcp_server_url.as_deref())?;
        }
        let token_key = kind.token_key();
        // The other kind's key is not a key of this kind.
        let (token, other) = match kind {
            AuthType::StaticBearer => (auth.token, auth.access_token.map(|_| "access_token")),
            AuthType::McpOauth => (auth.access_token, auth.token.map(|_| "token")),
        };
        if let Some(key) = other {
            return Err(invalid(
                format!("auth.{key}"),
                format!("unknown or unsupported parameter `auth.{key}`"),
            ));
        }
        let token = token.filter(|t| !t.is_empty()).ok_or_else(|| {
            invalid(
                format!("auth.{token_key}"),
                format!("`auth.{token_key}` is required"),
            )
        })?;
        if token.contains(['\n', '\r']) {
            return Err(invalid(
                format!("auth.{token_key}"),
                "the token must not contain a line break",
            ));
        }
        let url = auth
            .mcp_server_url
            .ok_or_else(|| invalid("auth.mcp_server_url", "`auth.mcp_server_url` is required"))?;
        self.check_url(&url)?;
        if let Some(at) = &auth.expires_at {
            humantime::parse_rfc3339_weak(at)
                .map_err(|_| invalid("auth.expires_at", "`expires_at` is an RFC 3339 time"))?;
        }
        Ok((kind.as_str(), url, token, auth.expires_at))
    }

    /// Only `limited` to the credential's own host.
    fn networking(networking: &Networking, url: Option<&str>) -> Result<(), ApiError> {
        if networking.kind.as_ref().and_then(Value::as_str) != Some("limited") {
            return Err(invalid(
                "auth.networking.type",
                "only `limited` networking to the credential's own host is accepted",
            ));
        }
        let own = url
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        let hosts = networking
            .allowed_hosts
            .as_ref()
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if hosts.iter().any(|h| h.as_str() != Some(own.as_str())) {
            return Err(invalid(
                "auth.networking.allowed_hosts",
                format!("only the credential's own host `{own}` may be allowed"),
            ));
        }
        Ok(())
    }
    fn check_url(&self, raw: &str) -> Result<(), ApiError> {
        let bad = |why: &str| invalid("auth.mcp_server_url", why.to_owned());
        let url = url::Url::parse(raw).map_err(|_| bad("`mcp_server_url` is not a URL"))?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_private_urls => {}
            _ => return Err(bad("`mcp_server_url` must be an https URL")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad(
                "`mcp_server_url` must not carry a user name or password",
            ));
        }
        let private = crate::services::url_guard::url_host_is_private(&url)
            .ok_or_else(|| bad("`mcp_server_url` has no host"))?;
        if private && !self.allow_private_urls {
            return Err(bad(
                "`mcp_server_url` points to a private or loopback address (SVC_AGENTS_ALLOW_PRIVATE_URLS=1 allows it for local development)",
            ));
        }
        Ok(())
    }
}
