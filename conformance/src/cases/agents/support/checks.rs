//! Shape checks shared by the agents sessions cases: turns, items, usage,
//! event frames, and the pre-redaction snapshots need.

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use super::sessions::{RUNTIMES, check_id};
use crate::SseFrame;

/// The text of every assistant message, joined.
pub fn assistant_text(items: &[Value]) -> String {
    items
        .iter()
        .filter(|i| i["type"] == "message" && i["role"] == "assistant")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("")
}

pub fn of_type<'a>(items: &'a [Value], ty: &str) -> Vec<&'a Value> {
    items.iter().filter(|i| i["type"] == ty).collect()
}

/// Every turn field of the design, with types.
pub fn check_turn(t: &Value, sid: &str, runtime: &str) -> anyhow::Result<()> {
    check_id(&t["id"], "turn")?;
    ensure!(t["object"] == "agent.session.turn", "object: {t}");
    ensure!(t["session_id"] == sid, "session_id: {t}");
    ensure!(t["agent_id"].is_string(), "agent_id: {t}");
    ensure!(t["created_at"].is_u64(), "created_at: {t}");
    for key in ["started_at", "completed_at"] {
        ensure!(t[key].is_u64() || t[key].is_null(), "{key}: {t}");
    }
    ensure!(
        ["queued", "in_progress", "completed", "failed", "cancelled"]
            .contains(&t["status"].as_str().unwrap_or_default()),
        "status: {t}"
    );
    ensure!(t["usage"].is_null() || t["usage"].is_object(), "usage: {t}");
    ensure!(t["error"].is_null() || t["error"].is_object(), "error: {t}");
    ensure!(
        t.get("subagent_id").is_some_and(Value::is_null),
        "subagent_id: {t}"
    );
    ensure!(t["x_svc"]["runtime"] == runtime, "x_svc.runtime: {t}");
    ensure!(
        t["x_svc"]["queued_not_steered"].is_boolean(),
        "x_svc.queued_not_steered: {t}"
    );
    let exit = &t["x_svc"]["exit_code"];
    ensure!(
        t["x_svc"].get("exit_code").is_some() && (exit.is_i64() || exit.is_null()),
        "x_svc.exit_code: {t}"
    );
    Ok(())
}

/// Every item has `id`, `type`, `turn_id`, `created_at`.
pub fn check_item(i: &Value) -> anyhow::Result<()> {
    ensure!(i["id"].is_string(), "item id: {i}");
    ensure!(i["type"].is_string(), "item type: {i}");
    ensure!(i["turn_id"].is_string(), "item turn_id: {i}");
    ensure!(i["created_at"].is_u64(), "item created_at: {i}");
    Ok(())
}

/// `TokenUsage` of the design.
pub fn check_usage(u: &Value) -> anyhow::Result<()> {
    for key in ["input_tokens", "output_tokens", "total_tokens"] {
        ensure!(u[key].is_u64(), "usage.{key}: {u}");
    }
    ensure!(
        u["input_tokens_details"]["cached_tokens"].is_u64(),
        "usage cached_tokens: {u}"
    );
    ensure!(
        u["output_tokens_details"]["reasoning_tokens"].is_u64(),
        "usage reasoning_tokens: {u}"
    );
    Ok(())
}

/// `agent_<runtime>_<hex>`; the runtime name may be spelled without its hyphen.
pub fn is_agent_id(s: &str, runtime: &str) -> bool {
    let Some(rest) = s.strip_prefix("agent_") else {
        return false;
    };
    [runtime.to_owned(), runtime.replace('-', "")]
        .iter()
        .any(|rt| {
            rest.strip_prefix(rt.as_str())
                .and_then(|r| r.strip_prefix('_'))
                .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
        })
}

/// Before the harness redaction: values the harness does not know are checked
/// and replaced (`agent_<runtime>_<hex>` ids, `completed_at`, `opened_at`,
/// `closed_at`).
pub fn pre_redact(v: &Value) -> anyhow::Result<Value> {
    fn walk(v: &Value, key: Option<&str>) -> anyhow::Result<Value> {
        if let (Some(k), Some(s)) = (key, v.as_str())
            && (k == "id" || k.ends_with("agent_id"))
            && s.starts_with("agent_")
        {
            let ok = RUNTIMES.iter().any(|rt| is_agent_id(s, rt));
            ensure!(ok, "{k}: expected agent_<runtime>_<hex>, got {s:?}");
            return Ok(json!("[agent_id]"));
        }
        if let Some(k) = key
            && ["completed_at", "opened_at", "closed_at"].contains(&k)
            && !v.is_null()
        {
            ensure!(v.is_u64(), "{k}: expected unix seconds, got {v}");
            return Ok(json!("[timestamp]"));
        }
        Ok(match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), walk(v, Some(k))?)))
                    .collect::<anyhow::Result<_>>()?,
            ),
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|v| walk(v, None))
                    .collect::<anyhow::Result<_>>()?,
            ),
            other => other.clone(),
        })
    }
    walk(v, None)
}

/// Parsed data of event frames, checking the frame/event invariants: frame
/// `id` = `sequence_number`, `event` = `type`, `event_id` = `evt_<seq>`, session id.
pub fn event_data(frames: &[SseFrame], sid: &str) -> anyhow::Result<Vec<Value>> {
    frames
        .iter()
        .map(|f| {
            let e = f.json()?;
            ensure!(e["type"].is_string(), "event without type: {e}");
            ensure!(
                f.event.as_deref() == e["type"].as_str(),
                "frame event name {:?} != type in {e}",
                f.event
            );
            if e["type"] == "error" {
                return Ok(e);
            }
            let seq = e["sequence_number"]
                .as_u64()
                .with_context(|| format!("sequence_number: {e}"))?;
            ensure!(
                f.id.as_deref() == Some(seq.to_string().as_str()),
                "frame id {:?} != sequence_number {seq}",
                f.id
            );
            ensure!(e["event_id"] == format!("evt_{seq}"), "event_id: {e}");
            ensure!(e["session_id"] == sid, "session_id: {e}");
            Ok(e)
        })
        .collect()
}

pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}
