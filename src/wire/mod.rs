//! The wire types of `svc-engine/1` (spec part B): the descriptor file, the connection, and
//! the records and request bodies of the engine routes. A leaf: the engine serves these and
//! the client (`crate::client`) reads them, so both sides share one spelling of every name.
//! Request bodies deny unknown fields; the connection's own fields may also travel in a POST
//! body (spec 5.4) and are taken out before the body is read (`engine::extract`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub const PROTOCOL: &str = "svc-engine/1";
/// The connection header: unpadded base64url of the connection JSON (spec 5.4).
pub const CONNECTION_HEADER: &str = "x-svc-connection";
/// The provider a connection without `provider` means.
pub const DEFAULT_PROVIDER: &str = "local";
/// Spec 8: sandbox lifetime bounds and the client's default.
pub const SANDBOX_TIMEOUT_MAX_S: u64 = 86_400;
pub const SANDBOX_TIMEOUT_DEFAULT_S: u64 = 300;
/// Spec 8: the client default of a command's `timeout`.
pub const COMMAND_TIMEOUT_DEFAULT_S: u64 = 60;

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Builtin,
    Rest,
    Exec,
    Node,
}

/// What a provider can do; a route whose feature the provider did not declare answers 501
/// `E8004`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// create, list, connect, info, kill, running
    Sandboxes,
    /// `POST .../timeout`
    Timeout,
    /// pause and resume
    Pause,
    /// `GET .../ports/:port/url`
    Ports,
    /// commands run and stream
    Commands,
    /// process list, signal, stdin, kill
    Processes,
    /// file content, list, info, exists, mkdir, move, remove
    Files,
    /// `GET .../files/watch`
    Watch,
    /// code run
    Code,
    /// code contexts
    CodeContexts,
    /// the terminal WebSocket
    Terminal,
}

impl Feature {
    /// Every feature of the protocol, in the order a record lists them (what a provider
    /// that serves everything declares: `local`, and `rest`, which forwards all of it).
    pub const ALL: [Feature; 11] = [
        Feature::Sandboxes,
        Feature::Timeout,
        Feature::Pause,
        Feature::Ports,
        Feature::Commands,
        Feature::Processes,
        Feature::Files,
        Feature::Watch,
        Feature::Code,
        Feature::CodeContexts,
        Feature::Terminal,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Feature::Sandboxes => "sandboxes",
            Feature::Timeout => "timeout",
            Feature::Pause => "pause",
            Feature::Ports => "ports",
            Feature::Commands => "commands",
            Feature::Processes => "processes",
            Feature::Files => "files",
            Feature::Watch => "watch",
            Feature::Code => "code",
            Feature::CodeContexts => "code_contexts",
            Feature::Terminal => "terminal",
        }
    }
}

/// `GET /v1/providers` lists these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProviderRecord {
    pub id: String,
    pub name: String,
    pub version: String,
    pub kind: ProviderKind,
    /// Where the provider came from: `builtin` (compiled in: `local`, `memory`, `rest`),
    /// `user` (a plugin in `<state>/plugins/`), `environment` (a plugin named by
    /// `SVC_ENGINE_PLUGINS`).
    pub trust: String,
    pub features: Vec<Feature>,
    /// Why the provider cannot serve, or `null`.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxStatus {
    Creating,
    Running,
    Paused,
    Stopping,
    Stopped,
    Error,
}

/// The sandbox record every sandbox route answers with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SandboxRecord {
    pub sandbox_id: String,
    pub provider: String,
    pub template: String,
    pub status: SandboxStatus,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC: when the sandbox and everything in it is gone.
    pub expires_at: String,
    pub metadata: BTreeMap<String, String>,
    /// The names of the variables given at create; their values are never echoed.
    pub envs_keys: Vec<String>,
    pub cpu: Option<u32>,
    /// MB.
    pub memory: Option<u64>,
    /// MB.
    pub disk: Option<u64>,
    pub secure: bool,
    /// For every limit the sandbox has (`timeout`, and `cpu`, `memory`, `disk` when asked
    /// for), whether the provider really enforces it: never pretended.
    pub limits_enforced: BTreeMap<String, bool>,
}

/// `POST /v1/sandboxes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSandbox {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Seconds, 1-86400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86_400))]
    pub timeout: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envs: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Cores, at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub cpu: Option<u32>,
    /// MB, at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub memory: Option<u64>,
    /// MB, at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub disk: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure: Option<bool>,
}

/// `GET /v1/sandboxes?status=&limit=&offset=`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSandboxes {
    #[serde(default)]
    pub status: Option<SandboxStatus>,
    /// 1-1000, default 100.
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub offset: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SandboxList {
    pub sandboxes: Vec<SandboxRecord>,
}

/// `POST .../timeout`: the sandbox's new lifetime, counted from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTimeout {
    /// Seconds, 1-86400.
    #[schemars(range(min = 1, max = 86_400))]
    pub timeout: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Running {
    pub running: bool,
}

/// `GET .../ports/:port/url`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PortUrl {
    pub url: String,
    pub headers: BTreeMap<String, String>,
}

/// `commands/run` and `commands/stream`: `cmd` alone is a shell line (`/bin/sh -c`); `cmd`
/// with `args` is a program and its arguments, no shell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandBody {
    pub cmd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Seconds; default 60; 0 means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 86_400))]
    pub timeout: Option<u64>,
    /// Written to the command's stdin, then closed. Without it stdin stays open for
    /// `processes/:pid/stdin` while the command runs (streamed commands) or is closed (run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
}

/// `POST .../processes/:pid/signal`: 15 or 9 only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalBody {
    #[schemars(extend("enum" = [15, 9]))]
    pub signal: i32,
}

/// `POST .../processes/:pid/stdin`: `data` (text) or `data_b64` (bytes), and `close` to
/// close stdin after them (the server's `process_stdin` names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StdinBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_b64: Option<String>,
    #[serde(default)]
    pub close: bool,
}

/// `GET .../files/content|list|info|exists|watch` and `DELETE .../files`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathQuery {
    #[serde(default)]
    pub path: Option<String>,
    /// list: 1-10, default 1.
    #[serde(default)]
    pub depth: Option<u32>,
    /// watch: follow sub-directories; remove: a non-empty directory too.
    #[serde(default)]
    pub recursive: Option<bool>,
}

/// `PUT .../files/content?path=[&overwrite=][&parents=]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteQuery {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub overwrite: Option<bool>,
    #[serde(default)]
    pub parents: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MkdirBody {
    pub path: String,
    #[serde(default)]
    pub parents: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveBody {
    pub from: String,
    pub to: String,
    #[serde(default)]
    pub overwrite: Option<bool>,
}

/// `POST .../code/run`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeRunBody {
    pub code: String,
    /// Default `python3`; `GET .../code/contexts` and the docs list the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envs: Option<BTreeMap<String, String>>,
    /// Seconds, 1-86400, default 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86_400))]
    pub timeout: Option<u64>,
}

/// `POST .../code/contexts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextRecord {
    pub context_id: String,
    pub language: String,
    pub cwd: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextList {
    pub contexts: Vec<ContextRecord>,
}

/// `GET .../terminal?cols=&rows=&shell=` (spec: client defaults 80, 24, `/bin/bash`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalQuery {
    #[serde(default)]
    pub cols: Option<u32>,
    #[serde(default)]
    pub rows: Option<u32>,
    #[serde(default)]
    pub shell: Option<String>,
}

/// The one text frame a terminal client sends: `{type: "resize", cols, rows}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TerminalControl {
    Resize { cols: u32, rows: u32 },
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
