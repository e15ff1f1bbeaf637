//! Claude Code `stream-json` stdout: `system`, `stream_event`, `assistant` (one line per
//! content block), `user` (tool results) and a final `result` line.

use super::super::{
    FileChange, ItemKind, ItemStatus, LineParser, RuntimeEvent, RuntimeItem, Usage,
};
use super::compact::Compaction;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

#[derive(Default)]
pub(super) struct Parser {
    /// The message id from the latest top-level `message_start`: deltas carry only an index.
    streaming_message: Option<String>,
    /// The block index of the open `content_block_start`: its `assistant` line arrives
    /// before `content_block_stop`, and gets the same key as its deltas.
    open_block: Option<(String, u64)>,
    /// Assistant lines seen per message id: without partial messages, the n-th line of a
    /// message is its n-th block.
    blocks_seen: HashMap<String, u64>,
    /// tool_use id to the call, so its tool_result can complete it.
    tools: HashMap<String, ToolUse>,
    /// What the lines said about a `/compact`: the `result` that follows says success
    /// whether or not the conversation was compacted.
    compaction: Compaction,
}

struct ToolUse {
    /// The tool_use id: a `Task` sub-agent is known by it.
    id: String,
    name: String,
    input: Value,
}

impl LineParser for Parser {
    fn parse(&mut self, line: &str) -> Vec<RuntimeEvent> {
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            return Vec::new();
        }
        let unparsed = || {
            vec![RuntimeEvent::Unparsed {
                line: line.to_owned(),
            }]
        };
        let Ok(Value::Object(event)) = serde_json::from_str::<Value>(line) else {
            return unparsed();
        };
        // Sub-agent internals: the Task tool_use already announced the sub-agent, and its
        // result completes it; its inner steps are not the conversation's items.
        if event
            .get("parent_tool_use_id")
            .is_some_and(|p| !p.is_null())
        {
            return Vec::new();
        }
        match str_field(&event, "type") {
            "system" => match str_field(&event, "subtype") {
                "init" => match event.get("session_id").and_then(Value::as_str) {
                    Some(id) => vec![RuntimeEvent::ThreadStarted {
                        thread_id: id.to_owned(),
                    }],
                    None => unparsed(),
                },
                "compact_boundary" => self.compaction.boundary(&event),
                "status" if str_field(&event, "compact_result") == "failed" => {
                    self.compaction.refused(str_field(&event, "compact_error"));
                    Vec::new()
                }
                // status, task_*, thinking_tokens, hooks...: progress noise.
                _ => Vec::new(),
            },
            "stream_event" => self.stream_event(event.get("event")),
            "assistant" => match event.get("message").and_then(Value::as_object) {
                // A synthetic message carrying an API error: the `result` line that follows
                // fails the turn with the same text, so it is no reply.
                Some(_) if event.get("error").is_some_and(|e| !e.is_null()) => Vec::new(),
                Some(message) => {
                    if str_field(message, "model") == "<synthetic>" {
                        self.compaction.synthetic_reply(message);
                    }
                    self.assistant(message)
                }
                None => unparsed(),
            },
            "user" => match self.compaction.user(&event) {
                Some(summary) => vec![summary],
                None => self.user(&event),
            },
            "result" => match self.compaction.failure(&event) {
                Some(message) => vec![RuntimeEvent::TurnFailed { message }],
                None => vec![result(&event)],
            },
            _ => unparsed(),
        }
    }
}

impl Parser {
    fn stream_event(&mut self, event: Option<&Value>) -> Vec<RuntimeEvent> {
        let Some(event) = event.and_then(Value::as_object) else {
            return Vec::new();
        };
        let index = event.get("index").and_then(Value::as_u64);
        match str_field(event, "type") {
            "message_start" => {
                self.streaming_message = event
                    .get("message")
                    .and_then(|m| m.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            "content_block_start" => {
                self.open_block = self.streaming_message.clone().zip(index);
                let block = event.get("content_block").map(|b| str_field_of(b, "type"));
                if let (Some("text"), Some((message, index))) = (block, &self.open_block) {
                    return vec![RuntimeEvent::ItemStarted(RuntimeItem {
                        key: block_key(message, *index),
                        kind: ItemKind::Message {
                            text: String::new(),
                        },
                        status: ItemStatus::InProgress,
                    })];
                }
            }
            "content_block_stop" => self.open_block = None,
            "content_block_delta" => {
                let delta = event.get("delta");
                let text =
                    delta.filter(|d| d.get("type").and_then(Value::as_str) == Some("text_delta"));
                if let (Some(text), Some(message), Some(index)) = (
                    text.and_then(|d| d.get("text")).and_then(Value::as_str),
                    &self.streaming_message,
                    index,
                ) {
                    return vec![RuntimeEvent::TextDelta {
                        key: block_key(message, index),
                        delta: text.to_owned(),
                    }];
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn assistant(&mut self, message: &Map<String, Value>) -> Vec<RuntimeEvent> {
        let message_id = str_field(message, "id").to_owned();
        let blocks = message
            .get("content")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut events = Vec::new();
        for block in blocks {
            let seen = self.blocks_seen.entry(message_id.clone()).or_default();
            let index = match &self.open_block {
                Some((open, index)) if *open == message_id => *index,
                _ => *seen,
            };
            *seen = (*seen).max(index + 1);
            let key = block_key(&message_id, index);
            match str_field_of(block, "type") {
                "text" => events.push(RuntimeEvent::ItemCompleted(RuntimeItem {
                    key,
                    kind: ItemKind::Message {
                        text: str_field_of(block, "text").to_owned(),
                    },
                    status: ItemStatus::Completed,
                })),
                "thinking" => events.push(RuntimeEvent::ItemCompleted(RuntimeItem {
                    key,
                    kind: ItemKind::Reasoning {
                        text: str_field_of(block, "thinking").to_owned(),
                    },
                    status: ItemStatus::Completed,
                })),
                "tool_use" => events.extend(self.tool_use(block)),
                // redacted_thinking, server tool blocks: nothing a client can show.
                _ => {}
            }
        }
        events
    }

    fn tool_use(&mut self, block: &Value) -> Vec<RuntimeEvent> {
        let Some(id) = block.get("id").and_then(Value::as_str) else {
            return Vec::new();
        };
        let tool = ToolUse {
            id: id.to_owned(),
            name: str_field_of(block, "name").to_owned(),
            input: block.get("input").cloned().unwrap_or(Value::Null),
        };
        let mut events = vec![RuntimeEvent::ItemStarted(RuntimeItem {
            key: id.to_owned(),
            kind: tool.kind(None, false),
            status: ItemStatus::InProgress,
        })];
        if matches!(tool.name.as_str(), "Task" | "Agent") {
            events.push(RuntimeEvent::SubagentStarted {
                id: id.to_owned(),
                description: tool
                    .input
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
        self.tools.insert(id.to_owned(), tool);
        events
    }

    fn user(&mut self, event: &Map<String, Value>) -> Vec<RuntimeEvent> {
        // Prompts are plain strings (compaction summaries are taken before): only tool
        // results matter.
        let Some(blocks) = event
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        let mut events = Vec::new();
        for block in blocks
            .iter()
            .filter(|b| str_field_of(b, "type") == "tool_result")
        {
            let id = str_field_of(block, "tool_use_id");
            let Some(tool) = self.tools.remove(id) else {
                events.push(RuntimeEvent::Unparsed {
                    line: block.to_string(),
                });
                continue;
            };
            let failed = block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let content = block.get("content").cloned().unwrap_or(Value::Null);
            let status = if failed {
                ItemStatus::Failed
            } else {
                ItemStatus::Completed
            };
            events.push(RuntimeEvent::ItemCompleted(RuntimeItem {
                key: id.to_owned(),
                kind: tool.kind(Some(content), failed),
                status,
            }));
            if let Some(change) = tool
                .file_change(event.get("tool_use_result"))
                .filter(|_| !failed)
            {
                // A separate item so the server snapshots the file like codex's file_change.
                events.push(RuntimeEvent::ItemCompleted(RuntimeItem {
                    key: format!("{id}:file"),
                    kind: ItemKind::FileChange {
                        changes: vec![change],
                    },
                    status: ItemStatus::Completed,
                }));
            }
        }
        events
    }
}

impl ToolUse {
    /// The item for this call; `content` is the tool_result's, once it came.
    fn kind(&self, content: Option<Value>, failed: bool) -> ItemKind {
        if self.name == "Bash" {
            let command = self
                .input
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let Some(content) = content else {
                return ItemKind::CommandExecution {
                    command,
                    output: String::new(),
                    exit_code: None,
                };
            };
            let text = text_of(&content);
            if !failed {
                return ItemKind::CommandExecution {
                    command,
                    output: text,
                    exit_code: Some(0),
                };
            }
            // A failed command's result reads "Exit code N\n<output>"; other failures
            // (denied, interrupted) have no exit code.
            let parsed = text.strip_prefix("Exit code ").and_then(|rest| {
                let (code, output) = rest.split_once('\n').unwrap_or((rest, ""));
                Some((code.trim().parse::<i32>().ok()?, output.to_owned()))
            });
            return match parsed {
                Some((code, output)) => ItemKind::CommandExecution {
                    command,
                    output,
                    exit_code: Some(code),
                },
                None => ItemKind::CommandExecution {
                    command,
                    output: text,
                    exit_code: None,
                },
            };
        }
        if let Some((server, tool)) = self
            .name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
        {
            let (output, error) = match content {
                None => (None, None),
                Some(content) if failed => (None, Some(text_of(&content))),
                // Shaped like codex's MCP result, so both runtimes report one form.
                Some(Value::String(text)) => (
                    Some(json!({ "content": [{ "type": "text", "text": text }] })),
                    None,
                ),
                Some(content) => (Some(json!({ "content": content })), None),
            };
            return ItemKind::McpCall {
                server: server.to_owned(),
                tool: tool.to_owned(),
                arguments: self.input.clone(),
                output,
                error,
            };
        }
        if matches!(self.name.as_str(), "Task" | "Agent") {
            return ItemKind::SubagentCall {
                agent_id: Some(self.id.clone()),
                prompt: self
                    .input
                    .get("prompt")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                output: content,
            };
        }
        ItemKind::ToolCall {
            tool_name: self.name.clone(),
            input: self.input.clone(),
            output: content,
        }
    }

    fn file_change(&self, tool_use_result: Option<&Value>) -> Option<FileChange> {
        let (path_field, kind) = match self.name.as_str() {
            // Write reports whether it created the file; without that, assume a new file.
            "Write" => {
                let created = tool_use_result
                    .and_then(|r| r.get("type"))
                    .and_then(Value::as_str)
                    != Some("update");
                ("file_path", if created { "add" } else { "update" })
            }
            "Edit" | "MultiEdit" => ("file_path", "update"),
            "NotebookEdit" => ("notebook_path", "update"),
            _ => return None,
        };
        let path = self.input.get(path_field)?.as_str()?;
        Some(FileChange {
            path: path.to_owned(),
            kind: kind.to_owned(),
        })
    }
}

/// Keys a text or thinking block: the message id plus the block's index in that message,
/// which both its deltas and its `assistant` line can name.
fn block_key(message_id: &str, index: u64) -> String {
    format!("{message_id}:{index}")
}

fn result(event: &Map<String, Value>) -> RuntimeEvent {
    if !event
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        return RuntimeEvent::TurnCompleted {
            usage: usage(event.get("usage")),
        };
    }
    let from_result = event
        .get("result")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty());
    let message = match from_result {
        Some(message) => message.to_owned(),
        None => {
            let errors: Vec<&str> = event
                .get("errors")
                .and_then(Value::as_array)
                .map(|errors| errors.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if errors.is_empty() {
                format!("turn failed ({})", str_field(event, "subtype"))
            } else {
                errors.join("; ")
            }
        }
    };
    RuntimeEvent::TurnFailed { message }
}

fn usage(usage: Option<&Value>) -> Option<Usage> {
    let usage = usage?.as_object()?;
    let count = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
        cached_input_tokens: count("cache_read_input_tokens"),
    })
}

/// A tool_result's content is a string or a list of blocks; the text of its text blocks.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn str_field<'a>(object: &'a Map<String, Value>, field: &str) -> &'a str {
    object
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn str_field_of<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or_default()
}
