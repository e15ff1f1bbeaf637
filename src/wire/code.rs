//! Code runs and code contexts (a context keeps its interpreter's state between runs).

use super::output;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// Variables added for this run. With `context_id` they are this run's only: set before
    /// its code (over a variable the context had) and undone after it.
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

/// `code/run`: like a command's result (see [`output`]), with how long it took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CodeResult {
    #[serde(flatten)]
    pub printed: output::Printed,
    /// `null` when it timed out or a signal ended it.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
}

/// `DELETE .../code/contexts/:context_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextDeleted {
    pub context_id: String,
    #[schemars(extend("const" = true))]
    pub deleted: bool,
}
