//! Builders for `codex exec --json` lines (codex 0.171.0 `exec_events.rs`).
//! Field order matches the real serializer.

use crate::script::Tokens;
use serde_json::{Map, Value, json};

pub fn thread_started(thread_id: &str) -> Value {
    json!({"type": "thread.started", "thread_id": thread_id})
}

pub fn turn_started() -> Value {
    json!({"type": "turn.started"})
}

/// `usage` is thread-cumulative in 0.171.0; None drops the field (scripted).
pub fn turn_completed(usage: Option<&Tokens>) -> Value {
    match usage {
        Some(u) => json!({"type": "turn.completed", "usage": {
            "input_tokens": u.input,
            "cached_input_tokens": u.cached_input,
            "cache_write_input_tokens": u.cache_creation,
            "output_tokens": u.output,
            "reasoning_output_tokens": u.reasoning_output,
        }}),
        None => json!({"type": "turn.completed"}),
    }
}

pub fn turn_failed(message: &str) -> Value {
    json!({"type": "turn.failed", "error": {"message": message}})
}

pub fn error(message: &str) -> Value {
    json!({"type": "error", "message": message})
}

/// `item.started` / `item.updated` / `item.completed` around an item body
/// whose first key is `type`; the item id comes first like in codex.
pub fn item(event: &str, id: &str, body: Value) -> Value {
    let mut item = Map::new();
    item.insert("id".into(), Value::String(id.to_string()));
    if let Value::Object(fields) = body {
        item.extend(fields);
    }
    json!({"type": event, "item": item})
}

pub fn agent_message(text: &str) -> Value {
    json!({"type": "agent_message", "text": text})
}

pub fn reasoning(text: &str) -> Value {
    json!({"type": "reasoning", "text": text})
}

pub fn command_execution(
    command: &str,
    output: &str,
    exit_code: Option<i32>,
    status: &str,
) -> Value {
    json!({
        "type": "command_execution",
        "command": command,
        "aggregated_output": output,
        "exit_code": exit_code,
        "status": status,
    })
}

pub fn file_change(changes: &[(String, &str)], status: &str) -> Value {
    let changes: Vec<Value> = changes
        .iter()
        .map(|(path, kind)| json!({"path": path, "kind": kind}))
        .collect();
    json!({"type": "file_change", "changes": changes, "status": status})
}

pub fn mcp_tool_call(
    server: &str,
    tool: &str,
    arguments: &Value,
    result: Option<Value>,
    error: Option<&str>,
    status: &str,
) -> Value {
    json!({
        "type": "mcp_tool_call",
        "server": server,
        "tool": tool,
        "arguments": arguments,
        "result": result,
        "error": error.map(|m| json!({"message": m})),
        "status": status,
    })
}

pub fn todo_list(items: &[(String, bool)]) -> Value {
    let items: Vec<Value> = items
        .iter()
        .map(|(text, done)| json!({"text": text, "completed": done}))
        .collect();
    json!({"type": "todo_list", "items": items})
}

pub fn collab_tool_call(
    tool: &str,
    sender: &str,
    receivers: &[&str],
    prompt: Option<&str>,
    agents_states: Value,
    status: &str,
) -> Value {
    json!({
        "type": "collab_tool_call",
        "tool": tool,
        "sender_thread_id": sender,
        "receiver_thread_ids": receivers,
        "prompt": prompt,
        "agents_states": agents_states,
        "status": status,
    })
}

/// The user's shell wrapper codex shows in `command` (`/bin/bash -lc '...'`).
pub fn shell_wrapped(command: &str) -> String {
    let safe = !command.is_empty()
        && command
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if safe {
        format!("/bin/bash -lc {command}")
    } else {
        format!("/bin/bash -lc '{}'", command.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_id_comes_first() {
        let v = item("item.completed", "item_0", agent_message("hi"));
        assert_eq!(
            v.to_string(),
            r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"hi"}}"#
        );
        assert_eq!(
            shell_wrapped("echo hi; exit 3"),
            "/bin/bash -lc 'echo hi; exit 3'"
        );
        assert_eq!(shell_wrapped("ls"), "/bin/bash -lc ls");
    }
}
