//! Vaults and credentials (agents spec 2.9, 4.8), in memory. A credential's token is
//! write-only: no answer ever carries it, a prefix, its length or a hash. Tokens wait here
//! for sessions to attach them (`vault_ids`) and inject them into matching MCP servers.

use crate::error::ApiError;
use crate::server::agents::input::not_found;
use crate::server::agents::input::{self, invalid, only_keys, opt_str};
use crate::services::ids;
use serde_json::{Map, Value, json};
use std::sync::Mutex;

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
    /// Exactly the four fields the spec names.
    fn to_json(&self) -> Value {
        json!({"id": self.id, "name": self.name, "metadata": self.metadata, "created_at": self.created_at})
    }
}

impl Credential {
    fn to_json(&self, vault_id: &str) -> Value {
        let mut auth = json!({"type": self.kind, "mcp_server_url": self.mcp_server_url});
        if self.kind == "mcp_oauth" {
            auth["expires_at"] = json!(self.expires_at);
        }
        json!({
            "id": self.id, "object": "vault.credential", "vault_id": vault_id, "name": self.name,
            "metadata": self.metadata, "auth": auth, "created_at": self.created_at, "updated_at": self.updated_at,
        })
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

    pub fn create(&self, owner: &str, body: &Value) -> Result<Value, ApiError> {
        let map = input::object(body, "body")?;
        only_keys(map, &["name", "metadata"], "")?;
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
            name: opt_str(map, "name", "name")?.map(str::to_owned),
            metadata: input::metadata(map.get("metadata").filter(|v| !v.is_null()), "metadata")?,
            created_at: ids::now(),
            credentials: Vec::new(),
        };
        let json = vault.to_json();
        list.push(vault);
        Ok(json)
    }

    pub fn list(&self, owner: &str) -> Vec<Value> {
        self.lock()
            .iter()
            .filter(|v| v.owner == owner)
            .map(Vault::to_json)
            .collect()
    }

    pub fn get(&self, owner: &str, id: &str) -> Result<Value, ApiError> {
        Ok(Vaults::find(&mut self.lock(), owner, id)?.to_json())
    }

    pub fn update(&self, owner: &str, id: &str, body: &Value) -> Result<Value, ApiError> {
        let map = input::object(body, "body")?;
        only_keys(map, &["name", "metadata"], "")?;
        let name = opt_str(map, "name", "name")?.map(str::to_owned);
        let metadata = match map.get("metadata") {
            Some(v) => Some(input::metadata(
                Some(v).filter(|v| !v.is_null()),
                "metadata",
            )?),
            None => None,
        };
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, id)?;
        if map.contains_key("name") {
            vault.name = name;
        }
        if let Some(metadata) = metadata {
            vault.metadata = metadata;
        }
        Ok(vault.to_json())
    }

    pub fn delete(&self, owner: &str, id: &str) -> Result<Value, ApiError> {
        let mut list = self.lock();
        Vaults::find(&mut list, owner, id)?;
        list.retain(|v| !(v.id == id && v.owner == owner));
        Ok(json!({"id": id, "object": "vault.deleted", "deleted": true}))
    }

    pub fn credential_create(
        &self,
        owner: &str,
        vault_id: &str,
        body: &Value,
    ) -> Result<Value, ApiError> {
        let map = input::object(body, "body")?;
        only_keys(map, &["name", "metadata", "auth"], "")?;
        let name = opt_str(map, "name", "name")?
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| invalid("name", "`name` is required"))?
            .to_owned();
        let metadata = input::metadata(map.get("metadata").filter(|v| !v.is_null()), "metadata")?;
        let auth = map
            .get("auth")
            .ok_or_else(|| invalid("auth", "`auth` is required"))?;
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
        let json = credential.to_json(vault_id);
        vault.credentials.push(credential);
        Ok(json)
    }

    pub fn credential_list(&self, owner: &str, vault_id: &str) -> Result<Vec<Value>, ApiError> {
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, vault_id)?;
        Ok(vault
            .credentials
            .iter()
            .map(|c| c.to_json(vault_id))
            .collect())
    }

    pub fn credential_get(&self, owner: &str, vault_id: &str, id: &str) -> Result<Value, ApiError> {
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, vault_id)?;
        vault
            .credentials
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.to_json(vault_id))
            .ok_or_else(|| not_found("credential", "credential_id", id))
    }

    /// `auth` replaces the secret (same or another kind); the change applies from the next turn.
    pub fn credential_update(
        &self,
        owner: &str,
        vault_id: &str,
        id: &str,
        body: &Value,
    ) -> Result<Value, ApiError> {
        let map = input::object(body, "body")?;
        only_keys(map, &["name", "metadata", "auth"], "")?;
        let auth = match map.get("auth") {
            Some(auth) => Some(self.auth(auth)?),
            None => None,
        };
        let name = opt_str(map, "name", "name")?.map(str::to_owned);
        let metadata = match map.get("metadata") {
            Some(v) => Some(input::metadata(
                Some(v).filter(|v| !v.is_null()),
                "metadata",
            )?),
            None => None,
        };
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
        if let Some(name) = name.filter(|n| !n.trim().is_empty()) {
            credential.name = name;
        }
        if let Some(metadata) = metadata {
            credential.metadata = metadata;
        }
        credential.updated_at = ids::now();
        Ok(credential.to_json(vault_id))
    }

    pub fn credential_delete(
        &self,
        owner: &str,
        vault_id: &str,
        id: &str,
    ) -> Result<Value, ApiError> {
        let mut list = self.lock();
        let vault = Vaults::find(&mut list, owner, vault_id)?;
        let before = vault.credentials.len();
        vault.credentials.retain(|c| c.id != id);
        if vault.credentials.len() == before {
            return Err(not_found("credential", "credential_id", id));
        }
        Ok(json!({"id": id, "object": "vault.credential.deleted", "deleted": true}))
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

    /// `static_bearer {token}` or `mcp_oauth {access_token, expires_at?}`, each for one
    /// https MCP server on a public address.
    fn auth(
        &self,
        value: &Value,
    ) -> Result<(&'static str, String, String, Option<String>), ApiError> {
        let map = input::object(value, "auth")?;
        let (kind, token_key) = match map.get("type").and_then(Value::as_str) {
            Some("static_bearer") => ("static_bearer", "token"),
            Some("mcp_oauth") => ("mcp_oauth", "access_token"),
            Some("environment_variable") => {
                return Err(invalid(
                    "auth.type",
                    "`environment_variable` credentials are refused: secrets reach runtimes only as MCP headers",
                ));
            }
            _ => {
                return Err(invalid(
                    "auth.type",
                    "`auth.type` is `static_bearer` or `mcp_oauth`",
                ));
            }
        };
        if map.get("refresh").is_some_and(|v| !v.is_null()) {
            return Err(invalid(
                "auth.refresh",
                "`mcp_oauth.refresh` is refused: the server does not refresh tokens",
            ));
        }
        if let Some(networking) = map.get("networking").filter(|v| !v.is_null()) {
            self.networking(networking, map)?;
        }
        only_keys(
            map,
            &[
                "type",
                token_key,
                "mcp_server_url",
                "expires_at",
                "networking",
            ],
            "auth",
        )?;
        let token = opt_str(map, token_key, &format!("auth.{token_key}"))?
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
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
        let url = opt_str(map, "mcp_server_url", "auth.mcp_server_url")?
            .ok_or_else(|| invalid("auth.mcp_server_url", "`auth.mcp_server_url` is required"))?;
        self.check_url(url)?;
        let expires_at = match opt_str(map, "expires_at", "auth.expires_at")? {
            Some(at) => {
                humantime::parse_rfc3339_weak(at)
                    .map_err(|_| invalid("auth.expires_at", "`expires_at` is an RFC 3339 time"))?;
                Some(at.to_owned())
            }
            None => None,
        };
        Ok((kind, url.to_owned(), token.to_owned(), expires_at))
    }

    /// Only `limited` to the credential's own host.
    fn networking(&self, value: &Value, auth: &Map<String, Value>) -> Result<(), ApiError> {
        let map = input::object(value, "auth.networking")?;
        match map.get("type").and_then(Value::as_str) {
            Some("limited") => {}
            _ => {
                return Err(invalid(
                    "auth.networking.type",
                    "only `limited` networking to the credential's own host is accepted",
                ));
            }
        }
        let own = auth
            .get("mcp_server_url")
            .and_then(Value::as_str)
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        let hosts = map
            .get("allowed_hosts")
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
