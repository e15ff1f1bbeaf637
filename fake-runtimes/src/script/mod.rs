//! The scenario model: a turn is a list of steps, taken from a directive in
//! the prompt, from the `RT_FAKE_SCRIPT` file, or the default echo reply.

mod directive;
mod file;
mod parse;

pub use directive::{DIRECTIVES, directives_in};
pub use file::ScriptFile;
pub use parse::parse_steps;

use serde_json::Value;

/// One scripted action. Each fake renders it in its own CLI's format.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Assistant text; `None` means the default echo reply.
    Text {
        text: Option<String>,
        deltas: usize,
        delay_ms: u64,
    },
    Reasoning {
        text: String,
        delay_ms: u64,
    },
    /// A shell command; the output is scripted, the command is not run.
    Command {
        command: String,
        output: String,
        exit_code: i32,
        delay_ms: u64,
    },
    /// Really writes `content` to `path` (or deletes it when `content` is None).
    FileChange {
        path: String,
        content: Option<String>,
    },
    /// Really calls `tools/call` on the configured MCP server.
    McpCall {
        server: Option<String>,
        tool: String,
        arguments: Value,
    },
    /// Any other tool call.
    Tool {
        name: String,
        input: Value,
        output: String,
        is_error: bool,
    },
    Todo {
        items: Vec<(String, bool)>,
    },
    Subagent(Subagent),
    Usage(UsageSetting),
    Fail {
        message: String,
    },
    Crash {
        after_ms: u64,
        exit_code: i32,
    },
    Stderr(String),
    Malformed(String),
    Hang,
    Large {
        bytes: usize,
        as_command: bool,
    },
    Sleep {
        ms: u64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subagent {
    pub description: String,
    pub prompt: String,
    pub subagent_type: String,
    /// Tool steps the sub-agent runs (rt-two shows them; codex exec does not).
    pub steps: Vec<Step>,
    pub result: String,
}

/// `{"usage": false}` hides usage; `{"usage": {...}}` replaces the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageSetting {
    Omit,
    Fixed(Tokens),
}

/// Token counts of a turn, the superset of what both CLIs report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cached_input: u64,
    pub cache_creation: u64,
    pub reasoning_output: u64,
}

impl Tokens {
    pub fn add(&mut self, other: Tokens) {
        self.input += other.input;
        self.output += other.output;
        self.cached_input += other.cached_input;
        self.cache_creation += other.cache_creation;
        self.reasoning_output += other.reasoning_output;
    }
}

/// Rough token estimate: deterministic and monotonic is all tests need.
pub fn estimate_tokens(text: &str) -> u64 {
    u64::try_from(text.len().div_ceil(4))
        .unwrap_or(u64::MAX)
        .max(1)
}

/// The default reply; it names the turn so resume continuity is visible.
pub fn echo_reply(prompt: &str, turn: usize) -> String {
    format!("echo (turn {turn}): {prompt}")
}

/// Where a turn's steps come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Directive,
    ScriptFile,
    Default,
}

/// Picks the steps for a turn: prompt directives win, then the script file,
/// then an empty list (which renders as the echo reply).
pub fn steps_for_turn(
    prompt: &str,
    turn: usize,
    script: Option<&ScriptFile>,
) -> Result<(Vec<Step>, Source), String> {
    let from_prompt = directives_in(prompt)?;
    if !from_prompt.is_empty() {
        return Ok((from_prompt, Source::Directive));
    }
    if let Some(steps) = script.and_then(|s| s.for_turn(turn)) {
        return Ok((steps.to_vec(), Source::ScriptFile));
    }
    Ok((Vec::new(), Source::Default))
}

/// True when the steps end the turn themselves (no reply should be appended).
pub fn is_terminal(step: &Step) -> bool {
    matches!(step, Step::Fail { .. } | Step::Crash { .. } | Step::Hang)
}

/// Appends the echo reply when the steps produce no assistant text, so every
/// completed turn has a final message like the real CLIs.
pub fn with_reply(mut steps: Vec<Step>) -> Vec<Step> {
    let has_text = steps.iter().any(|s| {
        matches!(
            s,
            Step::Text { .. }
                | Step::Large {
                    as_command: false,
                    ..
                }
        )
    });
    let ends = steps.iter().any(is_terminal);
    if !has_text && !ends {
        steps.push(Step::Text {
            text: None,
            deltas: 1,
            delay_ms: 0,
        });
    }
    steps
}
