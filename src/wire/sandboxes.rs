//! Sandboxes: the record every sandbox route answers with, create, list, timeout, ports.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Spec 8: sandbox lifetime bounds and the client's default.
pub const SANDBOX_TIMEOUT_MAX_S: u64 = 86_400;
pub const SANDBOX_TIMEOUT_DEFAULT_S: u64 = 300;

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
    /// for; with `isolation: namespaces` also `filesystem`, `processes`, `network` and
    /// `pids`), whether the provider really enforces it: never pretended.
    pub limits_enforced: BTreeMap<String, bool>,
    /// How the sandbox is kept apart from the machine (providers that run nothing on the
    /// machine leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// It reaches the machine's network (false: only a loopback of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_internet_access: Option<bool>,
    /// The most processes it holds at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_processes: Option<u32>,
}

/// How a sandbox is kept apart from the machine that runs it, asked for at create. The
/// default is `namespaces` where a provider isolates (`local`); a machine that cannot make
/// them refuses the create (`E8005`) rather than make a sandbox that isolates nothing
/// unasked. `none` is the behaviour before isolation existed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A machine of its own: user, pid, mount, ipc and uts namespaces (and a network one
    /// without internet access); it sees only its own folders, processes and `/etc`.
    #[default]
    Namespaces,
    /// A folder and processes of the engine's user, seeing the whole machine: only for
    /// code as trusted as the engine itself.
    None,
}

/// The default of `max_processes`.
pub const MAX_PROCESSES_DEFAULT: u32 = 4096;
/// The most `max_processes` can be: Linux's own ceiling on process ids on 64-bit machines
/// (`PID_MAX_LIMIT`); the kernel refuses a larger process limit, and no machine could hold
/// more processes anyway.
pub const MAX_PROCESSES_MAX: u32 = 4_194_304;
/// The most cores `cpu` can ask for: more than any Linux machine has (`NR_CPUS` is at most
/// 8,192 on x86-64), and well inside the kernel's ceiling on a CPU quota (2^44 - 1 us per
/// period, about 175 million cores at ours).
pub const CPU_MAX: u32 = 65_536;

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
    /// Cores, 1-65536.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = CPU_MAX))]
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
    /// `namespaces` (a machine of its own; a typed error where this machine cannot make
    /// one) or `none` (the default for now: no isolation, unsafe for untrusted code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// Default true: the machine's network. False: a network of its own with only a
    /// loopback (namespaces only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_internet_access: Option<bool>,
    /// The most processes the sandbox holds at once, 1-4194304 (Linux's own ceiling),
    /// default 4096 (a fork bomb stays inside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_PROCESSES_MAX))]
    pub max_processes: Option<u32>,
}

/// `GET /v1/sandboxes?status=&limit=&offset=`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSandboxes {
    #[serde(default)]
    pub status: Option<SandboxStatus>,
    /// 1-1000, default 100.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000), extend("default" = 100))]
    pub limit: Option<u32>,
    #[serde(default)]
    pub offset: Option<u32>,
}

/// A page of `GET /v1/sandboxes` holds this many unless `limit` says otherwise.
pub const LIST_LIMIT_DEFAULT: u32 = 100;
/// The most a page of `GET /v1/sandboxes` holds.
pub const LIST_LIMIT_MAX: u32 = 1000;

impl ListSandboxes {
    /// The page size asked for (default 100), or why it cannot be (the message of the
    /// `E4001` every checker answers: the engine's handler and each provider).
    pub fn page_size(&self) -> Result<u32, String> {
        let limit = self.limit.unwrap_or(LIST_LIMIT_DEFAULT);
        if (1..=LIST_LIMIT_MAX).contains(&limit) {
            Ok(limit)
        } else {
            Err(format!(
                "`limit` must be 1 to {LIST_LIMIT_MAX}, not {limit}"
            ))
        }
    }
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
