//! The `template.yaml` schema as written by operators. Unknown keys are errors, so a typo
//! never silently weakens the policy.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

// The sections a service reads are declared by the service itself (a service imports nothing
// of the server); they are part of this schema all the same.
pub use crate::services::commands::{ArgKind, CommandArgEntry, CommandEntry};
pub use crate::services::exec_rules::ProcessRules as ProcessSection;
pub use crate::services::paths::{PathRules as PathsSection, SymlinkPolicy};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub identities: Vec<IdentityEntry>,
    #[serde(default)]
    pub paths: PathsSection,
    #[serde(default)]
    pub commands: Vec<CommandEntry>,
    /// The command, process and variable guards of every route that starts a child.
    #[serde(default)]
    pub process: ProcessSection,
    #[serde(default)]
    pub agents: AgentsSection,
    /// `code_run` languages and `http_fetch` hosts.
    #[serde(default)]
    pub dev_tools: DevToolsSection,
}

/// The dev_tools group's keys.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevToolsSection {
    /// Languages `code_run` may use (`python3`, `bash`, `sh`, `node`); default every
    /// installed one.
    pub languages: Option<Vec<String>>,
    /// Hosts `http_fetch` may reach (`host`, `host:port`, `*.domain`); default any public
    /// host. An exact entry naming a private host (`127.0.0.1:8080`) opens that one.
    #[serde(default)]
    pub url_allow: Vec<String>,
    /// Hosts `http_fetch` never reaches, whatever `url_allow` says.
    #[serde(default)]
    pub url_deny: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsSection {
    /// Per implemented runtime (`rt-one`, `rt-two`): how its child process is started.
    #[serde(default)]
    pub runtimes: BTreeMap<String, RuntimeLaunchEntry>,
}

/// What an operator adds to every launch of one runtime: arguments placed before the prompt
/// (e.g. a model provider for codex) and environment variables (e.g. a base URL for claude).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeLaunchEntry {
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub preset: Option<String>,
    /// A list of groups to switch on, or a map of group to on/off.
    pub groups: Option<GroupSwitches>,
    #[serde(default)]
    pub endpoints: BTreeMap<String, bool>,
    #[serde(default)]
    pub limits: LimitsSection,
    pub audit: Option<AuditMode>,
    pub audit_file: Option<PathBuf>,
    pub max_body_bytes: Option<u64>,
    /// How long a request head may take and how many connections may be open.
    #[serde(default)]
    pub connections: ConnectionsSection,
    /// Variables of the server's environment passed on to every child (names, or prefixes
    /// ending in `*`), besides the login basics; `SVC_*` never.
    #[serde(default)]
    pub child_env: Vec<String>,
}

/// `server.connections`: what the main and terminal listeners allow a connection.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionsSection {
    /// Connections open at once on both listeners together; past it a new one is answered
    /// 503 `too_many_connections` and closed. Default 1024, or half the process's
    /// descriptor limit when that is less.
    pub max: Option<usize>,
    /// Seconds a request head may take to arrive whole, counted from the connection's
    /// start or the previous answer's end (so also how long a kept connection may idle).
    /// Default 30.
    pub header_timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum GroupSwitches {
    List(Vec<String>),
    Map(BTreeMap<String, bool>),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    #[serde(default)]
    pub groups: BTreeMap<String, LimitEntry>,
    #[serde(default)]
    pub endpoints: BTreeMap<String, LimitEntry>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitEntry {
    /// `N/s`, `N/m` or `N/h`, per identity.
    pub rate: Option<String>,
    pub burst: Option<u32>,
    /// Requests (or open streams and sockets) in flight at once, all identities together.
    pub concurrency: Option<u32>,
    pub body_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AuditMode {
    #[default]
    Off,
    Deny,
    All,
}

impl AuditMode {
    pub fn parse(s: &str) -> Option<AuditMode> {
        match s {
            "off" => Some(AuditMode::Off),
            "deny" => Some(AuditMode::Deny),
            "all" => Some(AuditMode::All),
            _ => None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityEntry {
    pub id: String,
    pub token: Option<String>,
    /// Name of an environment variable holding the token, so the file holds no secret.
    pub token_env: Option<String>,
    pub scopes: Vec<String>,
}
