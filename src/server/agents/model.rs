//! A session's state and how each part renders on the wire (the shapes follow the OpenAI
//! SDK's `AgentSession`, `Turn` and item models, plus the spec's `x_svc` extensions).

use crate::server::agents::adapters::Usage;
use crate::server::agents::agent_spec::AgentSpec;
use crate::server::agents::sessions::wire::{
    ArtifactObject, MultiAgent, ReasoningShown, SessionAgent, SessionEnvironment, SessionLocal,
    SessionObject, TurnLocal, TurnObject,
};
use crate::server::agents::wire::{
    ErrorObject, InputTokensDetails, OutputTokensDetails, TextFormat, UsageObject, to_json,
};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    Idle,
    InProgress,
    Failed,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::InProgress => "in_progress",
            SessionStatus::Failed => "failed",
        }
    }
}

pub struct SessionState {
    pub created_at: i64,
    pub last_active_at: i64,
    pub status: SessionStatus,
    pub metadata: Map<String, Value>,
    pub agent: AgentSpec,
    pub workspace: PathBuf,
    /// Where the session runs and with what; fixed at creation.
    pub setup: SessionSetup,
    pub thread_id: Option<String>,
    pub usage: Option<Usage>,
    /// The last running total a cumulative runtime reported, to derive per-turn usage.
    pub runtime_total: Option<Usage>,
    pub error: Option<String>,
    pub turns: Vec<Turn>,
    pub items: Vec<Value>,
    pub artifacts: Vec<Artifact>,
    pub traces: Vec<Value>,
    pub subagents: Vec<Value>,
    pub queue: VecDeque<String>,
    /// Set while a turn runs: sending `true` asks it to stop.
    pub running: Option<(String, tokio::sync::watch::Sender<bool>)>,
    pub worker_active: bool,
    pub deleted: bool,
    /// One trace per finished turn (`SVC_AGENTS_TRACES=1`).
    pub traces_enabled: bool,
    /// Idempotency key to the digest of the body it was first used with.
    pub idempotency: HashMap<String, String>,
}

/// What a session's runtime gets beyond the agent: the environment it was created in, its
/// variables, and the vault credentials bound to its MCP tools.
#[derive(Default)]
pub struct SessionSetup {
    /// `None`: the configured default workspace.
    pub workspace: Option<PathBuf>,
    pub environment_id: Option<String>,
    /// Variables for the runtime, from the environment, its template and the request.
    pub env: std::collections::BTreeMap<String, String>,
    pub vault_ids: Vec<String>,
    pub bindings: Vec<crate::server::agents::injection::Binding>,
    /// Looked up again for every turn, so an update applies from the next one.
    pub vaults: Option<std::sync::Arc<crate::server::agents::vaults::Vaults>>,
    pub differences: Vec<String>,
    /// The operator's additions to this runtime's launch (template.yaml `agents.runtimes`).
    pub launch: crate::server::config::template::RuntimeLaunchEntry,
    /// What every child starts from instead of the server's own environment.
    pub child_base: crate::services::child_env::ChildEnv,
    /// `SVC_AGENTS_TURN_TIMEOUT` and `SVC_AGENTS_MAX_OUTPUT_BYTES` when the session opened.
    pub turn_timeout: std::time::Duration,
    pub max_output_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    Queued,
    InProgress,
    Completed,
    Failed,
    Cancelled,
}

impl TurnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Queued => "queued",
            TurnStatus::InProgress => "in_progress",
            TurnStatus::Completed => "completed",
            TurnStatus::Failed => "failed",
            TurnStatus::Cancelled => "cancelled",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            TurnStatus::Completed | TurnStatus::Failed | TurnStatus::Cancelled
        )
    }
}

#[derive(Debug, Clone)]
pub struct Turn {
    pub id: String,
    pub prompt: String,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
    pub status: TurnStatus,
    pub usage: Option<Usage>,
    pub error: Option<String>,
    pub queued_not_steered: bool,
    pub exit_code: Option<i32>,
    /// The runtime wrote more than `SVC_AGENTS_MAX_OUTPUT_BYTES` in one event: what fit is
    /// kept, the rest dropped.
    pub output_truncated: bool,
}

#[derive(Debug, Clone)]
pub struct Artifact {
    pub id: String,
    pub turn_id: String,
    /// Relative to the workspace.
    pub relative: String,
    pub bytes: bytes::Bytes,
    pub created_at: i64,
}

pub fn usage_json(usage: &Usage) -> UsageObject {
    UsageObject {
        input_tokens: usage.input_tokens,
        input_tokens_details: InputTokensDetails {
            cached_tokens: usage.cached_input_tokens,
            cache_write_tokens: 0,
        },
        output_tokens: usage.output_tokens,
        output_tokens_details: OutputTokensDetails {
            reasoning_tokens: 0,
        },
        total_tokens: usage.input_tokens + usage.output_tokens,
    }
}

/// The turn's own usage from a runtime's running total.
pub fn turn_usage(reported: Usage, previous_total: Option<Usage>) -> Usage {
    let p = previous_total.unwrap_or_default();
    Usage {
        input_tokens: reported.input_tokens.saturating_sub(p.input_tokens),
        output_tokens: reported.output_tokens.saturating_sub(p.output_tokens),
        cached_input_tokens: reported
            .cached_input_tokens
            .saturating_sub(p.cached_input_tokens),
    }
}

pub fn add_usage(total: &mut Option<Usage>, more: &Usage) {
    let t = total.get_or_insert_with(Usage::default);
    t.input_tokens += more.input_tokens;
    t.output_tokens += more.output_tokens;
    t.cached_input_tokens += more.cached_input_tokens;
}

impl SessionState {
    pub fn to_json(&self, id: &str) -> Value {
        let agent = &self.agent;
        to_json(&SessionObject {
            id: id.to_owned(),
            object: "agent.session",
            created_at: self.created_at,
            last_active_at: self.last_active_at,
            status: self.status.as_str(),
            agent: SessionAgent {
                id: agent.id.clone(),
                name: agent.name.clone(),
                model: agent.model_shown.clone(),
                instructions: agent.instructions.clone(),
                tools: agent.tools.iter().map(|t| t.to_json()).collect(),
                multi_agent: MultiAgent { enabled: false },
                reasoning: ReasoningShown {
                    effort: agent.reasoning_effort.clone(),
                },
                service_tier: agent.service_tier.clone(),
                text: TextFormat::PLAIN,
            },
            environment: SessionEnvironment {
                kind: "self_hosted",
                id: self.environment_id().to_owned(),
                workspace_directory: self.workspace.clone(),
                capability_directories: [],
                remote_url: "",
            },
            metadata: self.metadata.clone(),
            usage: self.usage.as_ref().map(usage_json),
            vault_ids: self.setup.vault_ids.clone(),
            error: self.error.clone(),
            required_actions: [],
            x_svc: SessionLocal {
                compute: "local_process",
                runtime: agent.runtime.id,
                model_resolved: agent.model_for_cli.is_some(),
                thread_id: self.thread_id.clone(),
                differences: self.setup.differences.clone(),
            },
        })
    }

    /// The environment the session runs in; `env_local` for the default workspace.
    pub fn environment_id(&self) -> &str {
        self.setup.environment_id.as_deref().unwrap_or("env_local")
    }

    pub fn turn(&self, turn_id: &str) -> Option<&Turn> {
        self.turns.iter().find(|t| t.id == turn_id)
    }

    pub fn turn_mut(&mut self, turn_id: &str) -> Option<&mut Turn> {
        self.turns.iter_mut().find(|t| t.id == turn_id)
    }
}

impl Turn {
    pub fn to_json(&self, session_id: &str, agent: &AgentSpec) -> Value {
        to_json(&TurnObject {
            id: self.id.clone(),
            object: "agent.session.turn",
            session_id: session_id.to_owned(),
            agent_id: agent.id.clone(),
            created_at: self.created_at,
            started_at: self.started_at,
            completed_at: self.completed_at,
            status: self.status.as_str(),
            usage: self.usage.as_ref().map(usage_json),
            error: self.error.as_deref().map(ErrorObject::server),
            subagent_id: None,
            x_svc: TurnLocal {
                runtime: agent.runtime.id,
                queued_not_steered: self.queued_not_steered,
                exit_code: self.exit_code,
                output_truncated: self.output_truncated,
            },
        })
    }
}

impl Artifact {
    /// `path` keeps the spec's `/workspace/<relative>` form whatever the real directory.
    pub fn to_json(&self, session_id: &str, environment_id: &str) -> Value {
        to_json(&ArtifactObject {
            id: self.id.clone(),
            object: "agent.session.artifact",
            session_id: session_id.to_owned(),
            turn_id: self.turn_id.clone(),
            environment_id: environment_id.to_owned(),
            path: format!("/workspace/{}", self.relative),
            size_bytes: self.bytes.len(),
            created_at: self.created_at,
        })
    }
}
