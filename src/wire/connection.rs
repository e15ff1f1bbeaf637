//! Who speaks to the engine and how it is found: the protocol name, the descriptor a
//! running engine writes, the state folder, the connection every request brings, and the
//! health record.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub const PROTOCOL: &str = "svc-engine/1";
/// The connection header: unpadded base64url of the connection JSON (spec 5.4).
pub const CONNECTION_HEADER: &str = "x-svc-connection";
/// The provider a connection without `provider` means.
pub const DEFAULT_PROVIDER: &str = "local";

/// `<state_dir>/engine.json`, written by a running engine with mode 0600.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Descriptor {
    pub protocol: String,
    pub pid: u32,
    pub host: String,
    pub port: u16,
    pub token: String,
    pub version: String,
    pub started_at: String,
    /// The port of the E2B-compatible front on 127.0.0.1 (`svc e2b env`); absent from an
    /// engine that predates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2b_port: Option<u16>,
    /// The key the E2B front's control plane asks for in `X-API-KEY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2b_api_key: Option<String>,
}

impl Descriptor {
    /// The descriptor in `state_dir`, or `None` when there is none (or it is not one).
    pub fn read(state_dir: &std::path::Path) -> Option<Descriptor> {
        let text = std::fs::read(descriptor_path(state_dir)).ok()?;
        serde_json::from_slice::<Descriptor>(&text)
            .ok()
            .filter(|d| d.protocol == PROTOCOL)
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}:{}/v1", self.host, self.port)
    }
}

/// The state folder: `SVC_STATE_DIR`, else `$XDG_STATE_HOME/svc`, else
/// `~/.local/state/svc` (the XDG default).
pub fn state_dir() -> std::path::PathBuf {
    use std::path::PathBuf;
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("SVC_STATE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = non_empty("XDG_STATE_HOME") {
        return PathBuf::from(dir).join("svc");
    }
    let home = non_empty("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".local/state/svc")
}

pub fn descriptor_path(state_dir: &std::path::Path) -> std::path::PathBuf {
    state_dir.join("engine.json")
}

pub fn lock_path(state_dir: &std::path::Path) -> std::path::PathBuf {
    state_dir.join("engine.lock")
}

pub fn log_path(state_dir: &std::path::Path) -> std::path::PathBuf {
    state_dir.join("engine.log")
}

/// Who the engine speaks to the provider as (spec 2.3). The engine keeps no account of its
/// own: every request brings its connection, in the header or in a POST body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Connection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_options: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_secret: Option<String>,
}

impl Connection {
    /// The field names a POST body may carry instead of the header.
    pub const FIELDS: [&'static str; 7] = [
        "provider",
        "provider_options",
        "api_key",
        "api_url",
        "domain",
        "access_key_id",
        "access_key_secret",
    ];

    pub fn provider_id(&self) -> &str {
        self.provider.as_deref().unwrap_or(DEFAULT_PROVIDER)
    }

    /// A digest of everything that names the account, so two accounts never share a
    /// session or see each other's sandboxes, and no secret is kept in the clear.
    pub fn fingerprint(&self) -> String {
        let mut canonical = self.clone();
        canonical.provider = Some(self.provider_id().to_owned());
        let json = serde_json::to_vec(&canonical).unwrap_or_default();
        let digest = Sha256::digest(&json);
        digest[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The header value of this connection.
    pub fn header_value(&self) -> String {
        use base64::Engine as _;
        let json = serde_json::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }
}

/// `GET /v1/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Health {
    pub protocol: String,
    pub version: String,
    pub pid: u32,
    pub uptime_s: u64,
    pub sessions: usize,
    /// Whether this engine's `local` sandboxes can be isolated (`isolation: namespaces`).
    /// Absent from an engine older than isolation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<IsolationSupport>,
}

/// Whether sandboxes can be given namespaces of their own here, and if not why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IsolationSupport {
    pub available: bool,
    /// What is missing and how to fix it, when not available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_tells_accounts_apart_and_hides_the_key() {
        let a = Connection {
            api_key: Some("key-a".into()),
            ..Connection::default()
        };
        let b = Connection {
            api_key: Some("key-b".into()),
            ..Connection::default()
        };
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert!(!a.fingerprint().contains("key-a"));
        // No provider named is the default provider named.
        let named = Connection {
            provider: Some(DEFAULT_PROVIDER.into()),
            ..a.clone()
        };
        assert_eq!(a.fingerprint(), named.fingerprint());
    }

    #[test]
    fn the_header_is_unpadded_base64url_json() {
        let c = Connection {
            provider: Some("local".into()),
            ..Connection::default()
        };
        let value = c.header_value();
        assert!(!value.contains('='));
        use base64::Engine as _;
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(value)
            .unwrap();
        assert_eq!(serde_json::from_slice::<Connection>(&json).unwrap(), c);
    }
}
