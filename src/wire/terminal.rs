//! The terminal WebSocket: its query, the one text frame a client sends, and the reason
//! the socket closes with when the shell exits.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `cols` and `rows` of a terminal: 1-1000.
pub const TERMINAL_SIZE_MAX: u32 = 1000;

/// `GET .../terminal?cols=&rows=&shell=&user=&cwd=&args=&env=` (spec: client defaults 80, 24,
/// `/bin/bash`). A list and a map do not fit one query parameter each, so `args` and `env`
/// are JSON text (`args=["-l"]`, `env={"A":"1"}`), as Docker's API sends its `filters`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalQuery {
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub cols: Option<u32>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub rows: Option<u32>,
    #[serde(default)]
    pub shell: Option<String>,
    /// Who runs the shell, as for a command: in an isolated sandbox `user` (the default)
    /// or `root`.
    #[serde(default)]
    pub user: Option<String>,
    /// The shell's working directory, a directory of the sandbox; its home when absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The shell's arguments, a JSON array of strings (none when absent: an interactive
    /// shell).
    #[serde(default, with = "super::json_text")]
    #[schemars(with = "Option<String>", extend("contentMediaType" = "application/json"))]
    pub args: Option<Vec<String>>,
    /// Variables added to the sandbox's for the shell, a JSON object of strings.
    #[serde(default, with = "super::json_text")]
    #[schemars(with = "Option<String>", extend("contentMediaType" = "application/json"))]
    pub env: Option<BTreeMap<String, String>>,
}

/// The reason of the close frame (code 1000) the engine sends when the shell has exited:
/// how it ended, as a command's `exit` event says it (128 + the signal when a signal ended
/// it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TerminalExit {
    pub exit_code: i32,
}

impl TerminalExit {
    /// The close frame's reason saying that the shell exited with `exit_code`.
    pub fn reason(exit_code: i32) -> String {
        serde_json::to_string(&TerminalExit { exit_code }).unwrap_or_default()
    }

    /// The exit code a close frame's `reason` gives; `None` for any other reason (an
    /// engine that did not know how the shell ended).
    pub fn from_reason(reason: &str) -> Option<i32> {
        serde_json::from_str::<TerminalExit>(reason)
            .ok()
            .map(|e| e.exit_code)
    }
}

/// The one text frame a terminal client sends: `{type: "resize", cols, rows}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TerminalControl {
    Resize { cols: u32, rows: u32 },
}
