//! Builders for Claude Code 2.1.332 `stream-json` lines. Field names and
//! order follow captured output of the real CLI.

use crate::script::Tokens;
use serde_json::{Value, json};

/// Built-in tools listed by the real init line (2.1.332, default settings).
pub const TOOLS: &[&str] = &[
    "Task",
    "Bash",
    "CronCreate",
    "CronDelete",
    "CronList",
    "Edit",
    "EnterWorktree",
    "ExitWorktree",
    "ListAgents",
    "Monitor",
    "NotebookEdit",
    "Read",
    "ReportFindings",
    "ScheduleWakeup",
    "SendMessage",
    "Skill",
    "TaskStop",
    "ToolSearch",
    "WebFetch",
    "WebSearch",
    "Workflow",
    "Write",
];

const SLASH_COMMANDS: &[&str] = &[
    "clear", "compact", "config", "context", "init", "review", "usage",
];
/// The commands 2.1.332 runs only in its terminal UI.
const TERMINAL_SLASH_COMMANDS: &[&str] = &["doctor", "color", "focus", "reload-plugins"];
/// A sample of the protocol capabilities 2.1.332 announces (the real list is longer).
const CAPABILITIES: &[&str] = &[
    "interrupt_receipt_v1",
    "interrupt_cancel_queued_v1",
    "msg_lifecycle_v1",
    "sdk_mcp_tools_list_changed",
    "mcp_read_resource_v1",
];
const AGENTS: &[&str] = &[
    "claude",
    "Explore",
    "general-purpose",
    "Plan",
    "statusline-setup",
];

/// Why fast mode is off in print mode (2.1.332, init and result lines).
pub const FAST_MODE_DISABLED_REASON: &str = "sdk_opt_in_required";

pub struct InitInfo<'a> {
    pub cwd: &'a str,
    pub session_id: &'a str,
    pub mcp_servers: Vec<(String, &'static str)>,
    pub model: &'a str,
    pub permission_mode: &'a str,
    pub api_key_source: &'a str,
    pub uuid: String,
    pub memory_dir: String,
}

pub fn init(i: &InitInfo) -> Value {
    let servers: Vec<Value> = i
        .mcp_servers
        .iter()
        // Servers from `--mcp-config` are `dynamic` (not from a settings file) in 2.1.332.
        .map(|(name, status)| json!({"name": name, "status": status, "source": "dynamic"}))
        .collect();
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": i.cwd,
        "session_id": i.session_id,
        "tools": TOOLS,
        "mcp_servers": servers,
        "model": i.model,
        "permissionMode": i.permission_mode,
        "slash_commands": SLASH_COMMANDS,
        "apiKeySource": i.api_key_source,
        "claude_code_version": crate::two::VERSION,
        "output_style": "default",
        "agents": AGENTS,
        "skills": [],
        "plugins": [],
        "analytics_disabled": false,
        "product_feedback_disabled": false,
        "uuid": i.uuid,
        "memory_paths": {"auto": i.memory_dir},
        "fast_mode_state": "off",
        "terminal_slash_commands": TERMINAL_SLASH_COMMANDS,
        "capabilities": CAPABILITIES,
        "served_by_anthropic": false,
        "sandbox_enabled": false,
        "original_cwd": i.cwd,
        "additional_directories": [],
        // The real CLI listens there for `claude message`; the fake only names it.
        "messaging_socket_path": format!("/tmp/cc-socks/{}.sock", std::process::id()),
        "fast_mode_disabled_reason": FAST_MODE_DISABLED_REASON,
        "per_turn_effort_active": true,
        "ultrathink_available": false,
        "ultrathink_typed_raises": false,
        "view_mode": "default",
    })
}

/// The result line's sub-agent counters (2.1.332); the fakes' sub-agents are not counted.
pub fn subagent_stats() -> Value {
    json!({
        "spawned": 0,
        "requested": {"background": 0, "foreground": 0, "unset": 0},
        "started_in_background": 0, "max_depth": 0, "spawned_by_subagents": 0,
        "completed": 0, "failed": 0,
        "killed": {"parent": 0, "user": 0, "system": 0},
        "refused": {"depth_limit": 0, "concurrency_limit": 0, "budget": 0},
        "by_type": {},
    })
}

/// Per-message usage as in assistant lines and `message_start`.
pub fn message_usage(t: &Tokens) -> Value {
    json!({
        "input_tokens": t.input,
        "cache_creation_input_tokens": t.cache_creation,
        "cache_read_input_tokens": t.cached_input,
        "output_tokens": t.output,
    })
}

/// Session usage as in the result line.
pub fn result_usage(t: &Tokens) -> Value {
    json!({
        "input_tokens": t.input,
        "cache_creation_input_tokens": t.cache_creation,
        "cache_read_input_tokens": t.cached_input,
        "output_tokens": t.output,
        // The fakes' thinking is not counted apart from the other output.
        "output_tokens_details": {"thinking_tokens": 0},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "inference_geo": "",
        "iterations": [],
        "speed": "standard",
        "fallback_credit": null,
    })
}

/// Deterministic price so `total_cost_usd` is stable (sonnet-like rates).
pub fn cost_usd(t: &Tokens) -> f64 {
    let micro =
        t.input * 3 + t.output * 15 + t.cache_creation * 375 / 100 + t.cached_input * 30 / 100;
    // Whole micro-dollars keep the float free of rounding noise.
    micro as f64 / 1_000_000.0
}

pub fn model_usage(model: &str, t: &Tokens) -> Value {
    json!({ model: {
        "inputTokens": t.input,
        "outputTokens": t.output,
        "cacheReadInputTokens": t.cached_input,
        "cacheCreationInputTokens": t.cache_creation,
        "webSearchRequests": 0,
        "costUSD": cost_usd(t),
        "contextWindow": 1000000,
        "maxOutputTokens": 128000,
        "thinkingTokens": 0,
        "cacheCreationEphemeral5mInputTokens": t.cache_creation,
        "cacheCreationEphemeral1hInputTokens": 0,
        "canonicalModel": model,
        "provider": "firstParty",
        "costBasis": "list",
    }})
}

/// The `message` object of an assistant line (one content block per line,
/// `stop_reason` null, like the real CLI).
pub fn assistant_message(id: &str, model: &str, block: Value, usage: Option<&Tokens>) -> Value {
    let mut m = json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": null,
        "stop_sequence": null,
    });
    if let (Some(u), Some(obj)) = (usage, m.as_object_mut()) {
        obj.insert("usage".into(), message_usage(u));
    }
    if let Some(obj) = m.as_object_mut() {
        obj.insert("context_management".into(), Value::Null);
    }
    m
}

/// Synthetic assistant message Claude Code prints for API and login errors.
pub fn synthetic_message(id: &str, text: &str) -> Value {
    json!({
        "diagnostics": null,
        "id": id,
        "container": null,
        "model": "<synthetic>",
        "role": "assistant",
        "stop_details": null,
        "stop_reason": "stop_sequence",
        "stop_sequence": "",
        "type": "message",
        "usage": {
            "output_tokens_details": null,
            "input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
            "service_tier": null,
            "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
            "inference_geo": null, "iterations": null, "speed": null,
            "fallback_credit": null
        },
        "content": [{"type": "text", "text": text}],
        "context_management": null,
    })
}

pub fn tool_result(tool_use_id: &str, content: Value, is_error: Option<bool>) -> Value {
    let mut v = json!({"tool_use_id": tool_use_id, "type": "tool_result", "content": content});
    if let (Some(e), Some(obj)) = (is_error, v.as_object_mut()) {
        obj.insert("is_error".into(), Value::Bool(e));
    }
    v
}

pub fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

pub fn thinking_block(thinking: &str, signature: &str) -> Value {
    json!({"type": "thinking", "thinking": thinking, "signature": signature})
}

pub fn tool_use_block(id: &str, name: &str, input: &Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// Messages API stream events wrapped by `stream_event` lines.
pub mod stream {
    use serde_json::{Value, json};

    pub fn message_start(message: Value) -> Value {
        json!({"type": "message_start", "message": message})
    }

    pub fn block_start(index: usize, block: Value) -> Value {
        json!({"type": "content_block_start", "index": index, "content_block": block})
    }

    pub fn block_delta(index: usize, delta: Value) -> Value {
        json!({"type": "content_block_delta", "index": index, "delta": delta})
    }

    pub fn block_stop(index: usize) -> Value {
        json!({"type": "content_block_stop", "index": index})
    }

    pub fn message_delta(stop_reason: &str, output_tokens: u64) -> Value {
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}})
    }

    pub fn message_stop() -> Value {
        json!({"type": "message_stop"})
    }
}
