//! Runtime adapters: how to start one turn of a CLI agent (argv, environment, stdin) and
//! how to read its stdout. Each adapter turns its CLI's own line format into the
//! normalized [`RuntimeEvent`]s the session service understands, so sessions, responses and
//! SSE never look at a CLI's format. The same code drives the fakes and the real CLIs.

mod rt_one;
mod rt_two;

#[cfg(test)]
mod test_support;

pub use rt_one::RtOne;
pub use rt_two::RtTwo;

use serde_json::Value;
use std::path::PathBuf;

/// Everything an adapter needs to build one turn's command.
#[derive(Debug, Clone, Default)]
pub struct TurnRequest {
    pub prompt: String,
    /// A model id for the CLI; `None` lets the CLI use its default.
    pub model: Option<String>,
    /// The runtime's own thread/session id to continue (codex `resume`, claude `--resume`).
    pub resume: Option<String>,
    pub cwd: PathBuf,
    /// Extra system instructions (claude `--append-system-prompt`; codex
    /// `-c developer_instructions=...`).
    pub instructions: Option<String>,
    /// `low | medium | high` (codex `-c model_reasoning_effort=...`); rt-two refuses it earlier.
    pub reasoning_effort: Option<String>,
    pub mcp_servers: Vec<McpServer>,
    /// Operator-configured extra arguments, placed before the prompt.
    pub extra_args: Vec<String>,
}

/// An MCP server the runtime may call (http transport only).
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    pub name: String,
    pub url: String,
    /// Header name to the NAME of an environment variable holding its value: secrets reach
    /// the child through its environment, never its argv.
    pub headers_from_env: Vec<(String, String)>,
}

/// The command for one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// The binary name (looked up on PATH) and its arguments.
    pub program: String,
    pub args: Vec<String>,
    /// Written to stdin, which is then closed; `None` closes stdin at once.
    pub stdin: Option<String>,
}

/// One thing the runtime reported, in its order.
#[derive(Debug, Clone, PartialEq)]
pub enum RuntimeEvent {
    /// The runtime's own thread id, used to resume the conversation next turn.
    ThreadStarted {
        thread_id: String,
    },
    /// A piece of streamed assistant text for item `key` (only runtimes that stream text).
    TextDelta {
        key: String,
        delta: String,
    },
    ItemStarted(RuntimeItem),
    ItemUpdated(RuntimeItem),
    ItemCompleted(RuntimeItem),
    /// A sub-agent the runtime started (only ids the runtime really emitted).
    SubagentStarted {
        id: String,
        description: Option<String>,
    },
    /// The conversation was compacted (claude `compact_boundary`).
    Compacted,
    /// The turn ended normally. `usage` is `None` when the runtime reported none.
    TurnCompleted {
        usage: Option<Usage>,
    },
    /// The turn failed; the message is the runtime's own.
    TurnFailed {
        message: String,
    },
    /// A line that is not the runtime's format: kept for diagnostics, never fatal.
    Unparsed {
        line: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeItem {
    /// The runtime's id for the item (stable across started/updated/completed).
    pub key: String,
    pub kind: ItemKind,
    pub status: ItemStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemStatus {
    InProgress,
    Completed,
    Failed,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ItemKind {
    Message {
        text: String,
    },
    Reasoning {
        text: String,
    },
    CommandExecution {
        command: String,
        output: String,
        exit_code: Option<i32>,
    },
    /// Paths as the runtime reported them (absolute or relative to the working directory).
    FileChange {
        changes: Vec<FileChange>,
    },
    McpCall {
        server: String,
        tool: String,
        arguments: Value,
        output: Option<Value>,
        error: Option<String>,
    },
    /// Any other tool (claude's Read/Write/Edit/Task..., codex's todo list).
    ToolCall {
        tool_name: String,
        input: Value,
        output: Option<Value>,
    },
    /// The runtime starts a sub-agent (codex `spawn_agent`, claude `Task`). The agent id
    /// may be unknown until the call completes.
    SubagentCall {
        agent_id: Option<String>,
        prompt: Option<String>,
        output: Option<Value>,
    },
    /// The runtime waits for sub-agents (codex `wait`).
    SubagentWait {
        agent_ids: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: String,
    /// `add | update | delete`
    pub kind: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
}

/// Reads one runtime's stdout, line by line. Stateful: a parser may need earlier lines to
/// understand later ones (claude's tool_result refers to a tool_use).
pub trait LineParser: Send {
    fn parse(&mut self, line: &str) -> Vec<RuntimeEvent>;
    /// Called once stdout closed, so a parser can flush what it held back.
    fn finish(&mut self) -> Vec<RuntimeEvent> {
        Vec::new()
    }
}

pub trait Adapter: Send + Sync {
    /// The runtime id (`rt-one`, `rt-two`).
    fn id(&self) -> &'static str;
    fn launch(&self, request: &TurnRequest) -> Launch;
    fn parser(&self) -> Box<dyn LineParser>;
    /// Whether the usage a turn reports is the running total of the whole thread (codex)
    /// rather than the turn's own.
    fn cumulative_usage(&self) -> bool {
        false
    }
}
