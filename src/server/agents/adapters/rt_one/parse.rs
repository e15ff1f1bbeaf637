//! `codex exec --json` stdout: one JSON event per line (`thread.started`, `item.*`,
//! `turn.completed`, `turn.failed`, `error`).

use super::super::{
    FileChange, ItemKind, ItemStatus, LineParser, RuntimeEvent, RuntimeItem, Usage,
};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

#[derive(Default)]
pub(super) struct Parser {
    /// The last `error` event's message: codex prints `error` and then `turn.failed`, but a
    /// process that dies in between would otherwise lose the reason.
    pending_error: Option<String>,
    terminal_seen: bool,
    /// Sub-agent thread ids already announced: `spawn_agent` lists its receivers on
    /// completion, and a later `wait` repeats them.
    subagents: HashSet<String>,
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
        match str_field(&event, "type") {
            "thread.started" => match event.get("thread_id").and_then(Value::as_str) {
                Some(id) => vec![RuntimeEvent::ThreadStarted {
                    thread_id: id.to_owned(),
                }],
                None => unparsed(),
            },
            "turn.started" => Vec::new(),
            phase @ ("item.started" | "item.updated" | "item.completed") => {
                match event.get("item").and_then(Value::as_object) {
                    // Warnings such as "Model metadata for `x` not found" (seen from the
                    // real CLI): diagnostics, not something the agent did.
                    Some(item) if str_field(item, "type") == "error" => unparsed(),
                    Some(item) => self.item(phase, item).unwrap_or_else(unparsed),
                    None => unparsed(),
                }
            }
            "turn.completed" => {
                self.terminal_seen = true;
                // A retry notice may have come as `error` before the turn still succeeded.
                self.pending_error = None;
                vec![RuntimeEvent::TurnCompleted {
                    usage: usage(event.get("usage")),
                }]
            }
            "turn.failed" => {
                self.terminal_seen = true;
                let message = event
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| self.pending_error.take())
                    .unwrap_or_else(|| "turn failed".to_owned());
                self.pending_error = None;
                vec![RuntimeEvent::TurnFailed { message }]
            }
            "error" => {
                self.pending_error = Some(str_field(&event, "message").to_owned());
                Vec::new()
            }
            _ => unparsed(),
        }
    }

    fn finish(&mut self) -> Vec<RuntimeEvent> {
        match (self.terminal_seen, self.pending_error.take()) {
            (false, Some(message)) => {
                self.terminal_seen = true;
                vec![RuntimeEvent::TurnFailed { message }]
            }
            _ => Vec::new(),
        }
    }
}

impl Parser {
    /// `None` when the item is not one we can read (no id): the caller keeps the line.
    fn item(&mut self, phase: &str, item: &Map<String, Value>) -> Option<Vec<RuntimeEvent>> {
        let key = item.get("id")?.as_str()?.to_owned();
        let item_type = str_field(item, "type");
        let status = match item.get("status").and_then(Value::as_str) {
            Some("in_progress") => ItemStatus::InProgress,
            Some("failed" | "declined") => ItemStatus::Failed,
            Some("completed") => ItemStatus::Completed,
            _ if phase == "item.completed" => ItemStatus::Completed,
            _ => ItemStatus::InProgress,
        };
        let mut subagents = Vec::new();
        let kind = match item_type {
            "agent_message" => ItemKind::Message {
                text: str_field(item, "text").to_owned(),
            },
            "reasoning" => ItemKind::Reasoning {
                text: str_field(item, "text").to_owned(),
            },
            "command_execution" => ItemKind::CommandExecution {
                command: str_field(item, "command").to_owned(),
                output: str_field(item, "aggregated_output").to_owned(),
                exit_code: item
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok()),
            },
            "file_change" => ItemKind::FileChange {
                changes: file_changes(item.get("changes")),
            },
            "mcp_tool_call" => ItemKind::McpCall {
                server: str_field(item, "server").to_owned(),
                tool: str_field(item, "tool").to_owned(),
                arguments: item.get("arguments").cloned().unwrap_or(Value::Null),
                output: item.get("result").filter(|r| !r.is_null()).cloned(),
                error: item
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            },
            "todo_list" => ItemKind::ToolCall {
                tool_name: "todo_list".into(),
                input: json!({ "items": item.get("items").cloned().unwrap_or(Value::Null) }),
                output: None,
            },
            "collab_tool_call" => {
                let tool = str_field(item, "tool");
                let prompt = item.get("prompt").and_then(Value::as_str);
                let receivers: Vec<&str> = item
                    .get("receiver_thread_ids")
                    .and_then(Value::as_array)
                    .map(|ids| ids.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if tool == "spawn_agent" {
                    for id in &receivers {
                        if self.subagents.insert((*id).to_owned()) {
                            subagents.push(RuntimeEvent::SubagentStarted {
                                id: (*id).to_owned(),
                                description: prompt.map(str::to_owned),
                            });
                        }
                    }
                }
                let output = item
                    .get("agents_states")
                    .filter(|_| phase == "item.completed")
                    .cloned();
                match tool {
                    "spawn_agent" => ItemKind::SubagentCall {
                        agent_id: receivers.first().map(|id| (*id).to_owned()),
                        prompt: prompt.map(str::to_owned),
                        output,
                    },
                    "wait" => ItemKind::SubagentWait {
                        agent_ids: receivers.iter().map(|id| (*id).to_owned()).collect(),
                    },
                    _ => ItemKind::ToolCall {
                        tool_name: if tool.is_empty() {
                            item_type.to_owned()
                        } else {
                            tool.to_owned()
                        },
                        input: json!({ "prompt": prompt, "receiver_thread_ids": receivers }),
                        output,
                    },
                }
            }
            other => {
                let mut input = item.clone();
                for field in ["id", "type", "status"] {
                    input.remove(field);
                }
                ItemKind::ToolCall {
                    tool_name: other.to_owned(),
                    input: Value::Object(input),
                    output: None,
                }
            }
        };
        let item = RuntimeItem { key, kind, status };
        let mut events = vec![match phase {
            "item.started" => RuntimeEvent::ItemStarted(item),
            "item.updated" => RuntimeEvent::ItemUpdated(item),
            _ => RuntimeEvent::ItemCompleted(item),
        }];
        events.extend(subagents);
        Some(events)
    }
}

fn str_field<'a>(object: &'a Map<String, Value>, field: &str) -> &'a str {
    object
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn file_changes(changes: Option<&Value>) -> Vec<FileChange> {
    let Some(changes) = changes.and_then(Value::as_array) else {
        return Vec::new();
    };
    changes
        .iter()
        .filter_map(|change| {
            Some(FileChange {
                path: change.get("path")?.as_str()?.to_owned(),
                kind: change
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("update")
                    .to_owned(),
            })
        })
        .collect()
}

/// Codex's numbers are thread-cumulative (a resumed turn reports the running totals).
fn usage(usage: Option<&Value>) -> Option<Usage> {
    let usage = usage?.as_object()?;
    let count = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
        cached_input_tokens: count("cached_input_tokens"),
    })
}
