//! The providers the engine hosts (`GET /v1/providers`) and the features they declare.

use serde::{Deserialize, Serialize};

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
    /// every sandbox a machine of its own (namespaces): it sees only its own files,
    /// processes and `/etc`
    Isolation,
}

impl Feature {
    /// Every feature of the protocol, in the order a record lists them (what a provider
    /// that serves everything declares: `local`, and `rest`, which forwards all of it).
    pub const ALL: [Feature; 12] = [
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
        Feature::Isolation,
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
            Feature::Isolation => "isolation",
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

/// `GET /v1/providers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProviderList {
    pub providers: Vec<ProviderRecord>,
}
