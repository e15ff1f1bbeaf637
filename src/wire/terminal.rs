//! The terminal WebSocket: its query and the one text frame a client sends.

use serde::{Deserialize, Serialize};

/// `cols` and `rows` of a terminal: 1-1000.
pub const TERMINAL_SIZE_MAX: u32 = 1000;

/// `GET .../terminal?cols=&rows=&shell=&user=` (spec: client defaults 80, 24, `/bin/bash`).
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
}

/// The one text frame a terminal client sends: `{type: "resize", cols, rows}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TerminalControl {
    Resize { cols: u32, rows: u32 },
}
