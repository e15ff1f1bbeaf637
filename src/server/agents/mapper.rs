//! From a runtime's normalized events to the session's items and SSE events. Items keep
//! their order of appearance; each gets the next `output_index` of its turn (0 is the
//! user's message).

use crate::server::agents::adapters::{ItemKind, ItemStatus, RuntimeEvent, RuntimeItem, Usage};
use crate::server::agents::model::{Artifact, SessionState};
use crate::server::agents::session_handle::SessionHandle;
use crate::services::ids;
use crate::services::paths::normalize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

/// Files larger than this are not snapshotted as artifacts.
pub const MAX_ARTIFACT_BYTES: u64 = 10 * 1024 * 1024;

pub enum Terminal {
    Completed(Option<Usage>),
    Failed(String),
}

pub struct Mapper {
    pub handle: Arc<SessionHandle>,
    turn_id: String,
    /// Runtime item key to (item id, output index).
    keys: HashMap<String, (String, u64)>,
    next_index: u64,
    /// Streamed text per runtime key, until the item completes.
    texts: HashMap<String, String>,
    /// Item id to its position in the session's items, so an update finds it at once.
    slots: HashMap<String, usize>,
    pub terminal: Option<Terminal>,
    pub exit_code: Option<i32>,
    /// A line of the runtime's output was over the cap and cut.
    pub output_truncated: bool,
    /// The session's agent: the sender of its sub-agent calls.
    agent_id: String,
}

impl Mapper {
    pub fn new(handle: Arc<SessionHandle>, turn_id: String) -> Mapper {
        let agent_id = handle.lock().agent.id.clone();
        Mapper {
            agent_id,
            handle,
            turn_id,
            keys: HashMap::new(),
            next_index: 1,
            texts: HashMap::new(),
            slots: HashMap::new(),
            terminal: None,
            exit_code: None,
            output_truncated: false,
        }
    }

    pub fn runtime(&self) -> &'static crate::server::agents::runtimes::Runtime {
        self.handle.lock().agent.runtime
    }

    pub fn apply(&mut self, event: RuntimeEvent) {
        match event {
            RuntimeEvent::ThreadStarted { thread_id } => {
                self.handle.lock().thread_id = Some(thread_id);
            }
            RuntimeEvent::TextDelta { key, delta } => {
                let (item_id, index) = match self.keys.get(&key) {
                    Some(known) => known.clone(),
                    None => {
                        let placeholder = RuntimeItem {
                            key: key.clone(),
                            kind: ItemKind::Message {
                                text: String::new(),
                            },
                            status: ItemStatus::InProgress,
                        };
                        self.upsert(&placeholder, false)
                    }
                };
                let streamed = self.texts.entry(key).or_default();
                streamed.push_str(&delta);
                // Appended in place: rebuilding the item on every delta would copy the
                // whole text so far each time.
                let mut state = self.handle.lock();
                if let Some(stored) = stored_mut(&self.slots, &mut state, &item_id) {
                    let text = stored
                        .get_mut("content")
                        .and_then(|c| c.get_mut(0))
                        .and_then(|c| c.get_mut("text"));
                    match text {
                        Some(Value::String(text)) => text.push_str(&delta),
                        _ => stored["content"] = json!([{"type": "output_text", "text": streamed}]),
                    }
                }
                drop(state);
                self.push(
                    "agent.session.turn.output_text.delta",
                    json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": delta}),
                );
            }
            RuntimeEvent::ItemStarted(item) | RuntimeEvent::ItemUpdated(item) => {
                self.upsert(&item, false);
            }
            RuntimeEvent::ItemCompleted(item) => self.complete(item),
            RuntimeEvent::SubagentStarted { id, description } => {
                let mut state = self.handle.lock();
                let subagent = json!({
                    "id": id,
                    "object": "agent.session.subagent",
                    "session_id": self.handle.id,
                    "opened_at": ids::now(),
                    "closed_at": null,
                    "parent_agent_id": state.agent.id,
                    "status": "active",
                    "name": description,
                    "x_svc": {"turn_id": self.turn_id},
                });
                state.subagents.push(subagent.clone());
                drop(state);
                self.push(
                    "agent.session.subagent.created",
                    json!({"subagent": subagent}),
                );
            }
            RuntimeEvent::Compacted => {}
            RuntimeEvent::TurnCompleted { usage } => {
                self.terminal = Some(Terminal::Completed(usage))
            }
            RuntimeEvent::TurnFailed { message } => self.terminal = Some(Terminal::Failed(message)),
            RuntimeEvent::Unparsed { line } => {
                let cut: String = line.chars().take(200).collect();
                tracing::debug!(session = %self.handle.id, "runtime printed a line it does not define: {cut}");
            }
        }
    }

    fn push(&self, kind: &str, mut body: Value) {
        body["turn_id"] = json!(self.turn_id);
        self.handle.log.push(kind, body);
    }

    /// Adds or updates the item for `item.key`; emits `item.added` the first time.
    fn upsert(&mut self, item: &RuntimeItem, completed: bool) -> (String, u64) {
        let known = self.keys.get(&item.key).cloned();
        let (item_id, index) = known.clone().unwrap_or_else(|| {
            let prefix = if matches!(item.kind, ItemKind::Message { .. }) {
                "msg"
            } else {
                "item"
            };
            let fresh = (ids::new(prefix), self.next_index);
            self.next_index += 1;
            fresh
        });
        self.keys.insert(item.key.clone(), (item_id.clone(), index));
        let mut json = item_json(&item_id, &self.turn_id, item);
        if json["type"] == "wait_for_subagents_call" {
            json["sender_agent_id"] = json!(self.agent_id);
        }
        if let (ItemKind::Message { text }, Some(streamed)) =
            (&item.kind, self.texts.get(&item.key))
            && text.is_empty()
        {
            json["content"][0]["text"] = json!(streamed);
        }
        if !completed && matches!(item.kind, ItemKind::Message { .. }) && known.is_none() {
            json["content"] = json!([]);
        }
        let mut state = self.handle.lock();
        match stored_mut(&self.slots, &mut state, &item_id) {
            Some(existing) => {
                let created_at = existing["created_at"].clone();
                *existing = json;
                existing["created_at"] = created_at;
            }
            None => {
                self.slots.insert(item_id.clone(), state.items.len());
                state.items.push(json.clone());
                drop(state);
                if known.is_none() {
                    self.push(
                        "agent.session.turn.item.added",
                        json!({"item": json, "output_index": index}),
                    );
                }
            }
        }
        (item_id, index)
    }

    fn complete(&mut self, item: RuntimeItem) {
        let (item_id, index) = self.upsert(&item, true);
        let stored = stored_mut(&self.slots, &mut self.handle.lock(), &item_id).cloned();
        let Some(stored) = stored else { return };
        if let ItemKind::Message { .. } = item.kind {
            let text = stored["content"][0]["text"].clone();
            // A runtime that reports whole messages (codex exec) streamed nothing, or less
            // than the final text: the rest goes out as one delta, so every stream carries
            // the text in deltas before `done`, whatever the runtime.
            let streamed = self.texts.get(&item.key).map_or(0, String::len);
            let full = text.as_str().unwrap_or_default();
            if let Some(rest) = full.get(streamed..).filter(|r| !r.is_empty()) {
                self.push(
                    "agent.session.turn.output_text.delta",
                    json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": rest}),
                );
            }
            self.push(
                "agent.session.turn.output_text.done",
                json!({"item_id": item_id, "output_index": index, "content_index": 0, "text": text}),
            );
            self.texts.remove(&item.key);
        }
        self.push(
            "agent.session.turn.item.done",
            json!({"item": stored, "output_index": index}),
        );
        if let ItemKind::FileChange { changes } = &item.kind
            && item.status == ItemStatus::Completed
        {
            for change in changes.iter().filter(|c| c.kind != "delete") {
                self.snapshot(&change.path);
            }
        }
    }

    /// Keeps a copy of a file the runtime reported, when it lies inside the workspace.
    fn snapshot(&self, reported: &str) {
        let workspace = normalize(&self.handle.lock().workspace);
        let path = normalize(&workspace.join(reported));
        let Ok(relative) = path.strip_prefix(&workspace).map(Path::to_path_buf) else {
            tracing::debug!("not snapshotting {reported}: outside the workspace");
            return;
        };
        // Read without the session lock, and never through a link out of the workspace.
        let Some(bytes) = crate::server::agents::environments::fs::read_beneath(
            &workspace,
            &relative,
            MAX_ARTIFACT_BYTES,
        ) else {
            return;
        };
        let relative = relative.display().to_string();
        let mut state = self.handle.lock();
        state
            .artifacts
            .retain(|a| !(a.relative == relative && a.turn_id == self.turn_id));
        state.artifacts.push(Artifact {
            id: ids::new("art"),
            turn_id: self.turn_id.clone(),
            relative,
            bytes: bytes.into(),
            created_at: ids::now(),
        });
    }

    /// Items the runtime left open when the turn ended are incomplete; returns the item
    /// counts of the turn by type (for traces).
    pub fn close_open_items(&self, state: &mut SessionState) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for item in state
            .items
            .iter_mut()
            .filter(|i| i["turn_id"] == self.turn_id.as_str())
        {
            if item["status"] == "in_progress" {
                item["status"] = json!("incomplete");
            }
            *counts
                .entry(item["type"].as_str().unwrap_or("?").to_owned())
                .or_insert(0) += 1;
        }
        counts
    }
}

/// The stored item `item_id`, at its recorded position (checked, since only the mapper of
/// the running turn records positions).
fn stored_mut<'a>(
    slots: &HashMap<String, usize>,
    state: &'a mut SessionState,
    item_id: &str,
) -> Option<&'a mut Value> {
    let at = slots.get(item_id).copied()?;
    state.items.get_mut(at).filter(|v| v["id"] == item_id)
}

fn status(kind: &ItemKind, status: ItemStatus) -> &'static str {
    let output_only = matches!(kind, ItemKind::Message { .. } | ItemKind::Reasoning { .. });
    match status {
        ItemStatus::InProgress => "in_progress",
        ItemStatus::Completed => "completed",
        ItemStatus::Failed if output_only => "incomplete",
        ItemStatus::Failed => "failed",
    }
}

pub fn item_json(id: &str, turn_id: &str, item: &RuntimeItem) -> Value {
    let status = status(&item.kind, item.status);
    let mut json = match &item.kind {
        ItemKind::Message { text } => json!({
            "type": "message", "role": "assistant", "phase": "final_answer",
            "content": [{"type": "output_text", "text": text}],
        }),
        ItemKind::Reasoning { text } => json!({
            "type": "reasoning", "summary": [{"type": "summary_text", "text": text}],
        }),
        ItemKind::CommandExecution {
            command,
            output,
            exit_code,
        } => json!({
            "type": "command_execution", "command": command, "output": output, "exit_code": exit_code,
        }),
        ItemKind::FileChange { changes } => json!({
            "type": "tool_call", "tool_name": "file_change",
            "arguments": {"changes": changes.iter().map(|c| json!({"path": c.path, "kind": c.kind})).collect::<Vec<_>>()},
            "output": null,
        }),
        ItemKind::McpCall {
            server,
            tool,
            arguments,
            output,
            error,
        } => json!({
            "type": "mcp_call", "server_label": server, "name": tool, "arguments": arguments,
            "output": output, "error": error,
        }),
        ItemKind::ToolCall {
            tool_name,
            input,
            output,
        } => json!({
            "type": "tool_call", "tool_name": tool_name, "arguments": input, "output": output,
        }),
        // The SDK's own sub-agent item types, so strict clients accept them.
        ItemKind::SubagentCall {
            agent_id,
            prompt,
            output,
        } => json!({
            "type": "create_subagent_call", "agent_id": agent_id.clone().unwrap_or_default(),
            "content": [{"type": "output_text", "text": prompt.clone().unwrap_or_default()}],
            "output": output,
        }),
        ItemKind::SubagentWait { agent_ids } => json!({
            "type": "wait_for_subagents_call", "recipient_agent_ids": agent_ids,
            "sender_agent_id": "",
        }),
    };
    let obj = json.as_object_mut().expect("object literal");
    obj.insert("id".into(), json!(id));
    obj.insert("status".into(), json!(status));
    obj.insert("turn_id".into(), json!(turn_id));
    obj.insert("created_at".into(), json!(ids::now()));
    json
}
