//! The vault routes' bodies and answers (agents spec 2.9, 4.8). The group reads the bodies
//! through its typed extractor and documents both from these types. Optional fields stay
//! `Option` even where a key is required, so the refusal keeps the domain's words
//! ("`name` is required"); `#[schemars(required)]` tells the document.

use crate::server::agents::wire::{Metadata, Object, given};
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// `POST /v1/vaults` and its update. On update a key given (even `null`) replaces.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VaultBody {
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Option<String>")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Metadata")]
    pub metadata: Option<Metadata>,
}

/// `POST /v1/vaults/{vault_id}/credentials`: `name` and `auth` required.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialCreate {
    #[schemars(required, with = "String", length(min = 1), regex(pattern = r"\S"))]
    pub name: Option<String>,
    #[serde(default)]
    #[schemars(with = "Metadata")]
    pub metadata: Metadata,
    #[schemars(required, with = "AuthParam")]
    pub auth: Option<Object<AuthParam>>,
}

/// The update of a credential: what is given replaces (`auth` the secret too, from the
/// next turn on).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialUpdate {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Metadata")]
    pub metadata: Option<Metadata>,
    #[schemars(with = "Option<AuthParam>")]
    pub auth: Option<Object<AuthParam>>,
}

/// `static_bearer {token}` or `mcp_oauth {access_token, expires_at?}`, for one https MCP
/// server on a public address.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CredentialAuthParam")]
pub struct AuthParam {
    #[serde(rename = "type")]
    #[schemars(required, with = "AuthType")]
    pub kind: Option<AuthType>,
    /// `static_bearer`.
    pub token: Option<String>,
    /// `mcp_oauth`.
    pub access_token: Option<String>,
    /// https, on a public address.
    #[schemars(required, with = "String")]
    pub mcp_server_url: Option<String>,
    /// RFC 3339 (`mcp_oauth`).
    pub expires_at: Option<String>,
    /// Only `limited` to the credential's own host.
    #[schemars(with = "Option<Networking>")]
    pub networking: Option<Object<Networking>>,
    /// Refused when given: the server does not refresh tokens.
    #[serde(default)]
    #[schemars(with = "()")]
    pub refresh: Option<Value>,
}

/// The kind of credential (`environment_variable` is refused: secrets reach runtimes only
/// as MCP headers).
// The refusals are this type's own words, so they read the same wherever the key stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[schemars(rename = "CredentialAuthType")]
pub enum AuthType {
    #[schemars(rename = "static_bearer")]
    StaticBearer,
    #[schemars(rename = "mcp_oauth")]
    McpOauth,
}

impl AuthType {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthType::StaticBearer => "static_bearer",
            AuthType::McpOauth => "mcp_oauth",
        }
    }

    /// The key that carries this kind's secret.
    pub fn token_key(self) -> &'static str {
        match self {
            AuthType::StaticBearer => "token",
            AuthType::McpOauth => "access_token",
        }
    }
}

impl<'de> Deserialize<'de> for AuthType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AuthType, D::Error> {
        match Value::deserialize(d)?.as_str() {
            Some("static_bearer") => Ok(AuthType::StaticBearer),
            Some("mcp_oauth") => Ok(AuthType::McpOauth),
            Some("environment_variable") => Err(D::Error::custom(
                "`environment_variable` credentials are refused: secrets reach runtimes only as MCP headers",
            )),
            _ => Err(D::Error::custom(AUTH_TYPE)),
        }
    }
}

/// The refusal of a missing or unknown `auth.type`.
pub const AUTH_TYPE: &str = "`auth.type` is `static_bearer` or `mcp_oauth`";

/// `auth.networking`: only `limited` to the credential's own host.
// Kept as given: the domain judges it against the credential's URL.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "CredentialNetworking")]
pub struct Networking {
    #[serde(rename = "type")]
    #[schemars(extend("const" = "limited"))]
    pub kind: Option<Value>,
    #[schemars(with = "Option<Vec<String>>")]
    pub allowed_hosts: Option<Value>,
}

/// A vault: exactly the four fields the spec names.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Vault {
    pub id: String,
    pub name: Option<String>,
    pub metadata: Map<String, Value>,
    /// Unix seconds.
    pub created_at: i64,
}

/// A credential, never its secret (nor a prefix, length or hash of it).
#[derive(Debug, Serialize, JsonSchema)]
pub struct VaultCredential {
    pub id: String,
    #[schemars(extend("const" = "vault.credential"))]
    pub object: &'static str,
    pub vault_id: String,
    pub name: String,
    pub metadata: Map<String, Value>,
    /// The secret is never answered.
    pub auth: CredentialAuth,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub updated_at: i64,
}

/// A credential's `auth` as answered: its kind and server; `expires_at` for `mcp_oauth` only.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CredentialAuth {
    #[serde(rename = "type")]
    #[schemars(with = "AuthType")]
    pub kind: &'static str,
    pub mcp_server_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub expires_at: Option<Option<String>>,
}
