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

/// A JSON line that was cut at the output cap, closed so it parses again: the text is cut
/// back to the last whole character inside a string, then that string and every open
/// object and array are closed. The event keeps its shape with the long value shortened;
/// `None` when the cut fell where no closing makes valid JSON (a key, a number).
pub fn close_cut_json(cut: &str) -> Option<String> {
    // First pass: the last byte offset that ends a whole character inside a string, outside
    // any escape sequence.
    let (mut in_string, mut escape, mut last_safe) = (false, 0u8, None);
    for (i, c) in cut.char_indices() {
        if !in_string {
            in_string = c == '"';
            continue;
        }
        match (escape, c) {
            (0, '\\') => escape = 1,
            (0, '"') => in_string = false,
            (0, _) => last_safe = Some(i + c.len_utf8()),
            // `\uXXXX` lasts four more characters; other escapes end here.
            (1, 'u') => escape = 5,
            (1, _) | (2, _) => {
                escape = 0;
                last_safe = Some(i + c.len_utf8());
            }
            _ => escape -= 1,
        }
    }
    let prefix = &cut[..last_safe?];
    // Second pass: what is open at that point.
    let (mut open, mut in_string, mut escaped) = (Vec::new(), false, false);
    for c in prefix.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (true, ..) => {}
            (false, _, '"') => in_string = true,
            (false, _, '{') => open.push('}'),
            (false, _, '[') => open.push(']'),
            (false, _, '}' | ']') => {
                open.pop();
            }
            _ => {}
        }
    }
    let mut closed = String::with_capacity(prefix.len() + open.len() + 1);
    closed.push_str(prefix);
    closed.push('"');
    closed.extend(open.iter().rev());
    serde_json::from_str::<serde_json::Value>(&closed)
        .is_ok()
        .then_some(closed)
}

#[cfg(test)]
mod close_cut_json_tests {
    use super::close_cut_json;
    use serde_json::{Value, json};

    fn closed(cut: &str) -> Option<Value> {
        close_cut_json(cut).map(|s| serde_json::from_str(&s).unwrap())
    }

    #[test]
    fn a_long_value_is_shortened_and_every_container_closed() {
        let whole = json!({"type": "item.completed", "item": {"type": "agent_message", "text": "héllo \"world\" \\ \u{1F600} and more"}}).to_string();
        for cut in 1..whole.len() {
            if !whole.is_char_boundary(cut) {
                continue;
            }
            let Some(value) = closed(&whole[..cut]) else {
                continue;
            };
            // Whatever parses is the same event with a prefix of the text.
            if let Some(text) = value["item"]["text"].as_str() {
                assert_eq!(value["type"], "item.completed");
                assert!(
                    "héllo \"world\" \\ \u{1F600} and more".starts_with(text),
                    "{text:?}"
                );
            }
        }
        let cut = &whole[..whole.find("and").unwrap() + 2];
        assert_eq!(
            closed(cut).unwrap()["item"]["text"],
            "héllo \"world\" \\ \u{1F600} an"
        );
    }

    #[test]
    fn escapes_are_never_split() {
        assert_eq!(closed(r#"{"t":"ab\"#), Some(json!({"t": "ab"})));
        assert_eq!(closed(r#"{"t":"ab\u00e"#), Some(json!({"t": "ab"})));
        assert_eq!(closed(r#"{"t":"ab\u00e9c"#), Some(json!({"t": "abéc"})));
        assert_eq!(
            closed(r#"{"a":[1,{"t":"xy"#),
            Some(json!({"a": [1, {"t": "xy"}]}))
        );
        assert_eq!(closed(r#"{"a":12"#), None);
        assert_eq!(closed("garbage"), None);
    }
}
