//! The event types an endpoint can subscribe to, and the body of a delivery (the shape of
//! the SDK's `agent_session_*_webhook_event` models).

use crate::error::ApiError;
use crate::server::agents::input::invalid;
use crate::services::ids;
use serde_json::{Value, json};

/// Every type a session can emit here. `agent.session.action_required` is absent: a local
/// session never waits for an action (tools run without approval).
pub const ACCEPTED: [&str; 4] = [
    "agent.session.created",
    "agent.session.in_progress",
    "agent.session.idle",
    "agent.session.failed",
];
const PREFIX: &str = "agent.session.";

/// One type, in either spelling (the spec lists three of them without the prefix); the
/// full name is what is stored and returned.
pub fn parse(raw: &str, param: &str) -> Result<&'static str, ApiError> {
    let full = if raw.starts_with(PREFIX) {
        raw.to_owned()
    } else {
        format!("{PREFIX}{raw}")
    };
    if let Some(kind) = ACCEPTED.iter().find(|k| **k == full) {
        return Ok(kind);
    }
    let why = if full == "agent.session.action_required" {
        "`agent.session.action_required` is never sent: local sessions do not wait for actions"
            .to_owned()
    } else {
        format!("unknown or unsupported event type `{raw}`")
    };
    Err(invalid(
        param,
        format!("{why}; accepted: {}", ACCEPTED.join(", ")),
    ))
}

/// A non-empty array of types, without repeats, in the order given.
pub fn parse_list(value: Option<&Value>) -> Result<Vec<&'static str>, ApiError> {
    const PARAM: &str = "event_types";
    let list = match value {
        Some(Value::Array(list)) if !list.is_empty() => list,
        Some(Value::Array(_)) => {
            return Err(invalid(
                PARAM,
                "`event_types` needs at least one event type",
            ));
        }
        None | Some(Value::Null) => return Err(invalid(PARAM, "`event_types` is required")),
        Some(_) => {
            return Err(invalid(PARAM, "`event_types` must be an array of strings"));
        }
    };
    let mut kinds = Vec::new();
    for item in list {
        let raw = item
            .as_str()
            .ok_or_else(|| invalid(PARAM, "`event_types` must be an array of strings"))?;
        let kind = parse(raw, PARAM)?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(kinds)
}

/// The delivery body of a session event; `session` is the session object the event
/// carried. The environment fields are read from it, so they follow whatever the session
/// reports.
pub fn body(kind: &str, session: &Value) -> Value {
    let env = &session["environment"];
    let mut data = json!({
        "id": session["id"],
        "environment_type": env["type"].as_str().unwrap_or("none"),
    });
    if let Some(id) = env["id"].as_str().filter(|id| !id.is_empty()) {
        data["environment_id"] = json!(id);
    }
    if kind == ACCEPTED[0]
        && let Some(url) = env["remote_url"].as_str().filter(|u| !u.is_empty())
    {
        data["connect"] = json!({"remote_url": url});
    }
    json!({
        "id": ids::new("evt"),
        "object": "event",
        "type": kind,
        "created_at": ids::now(),
        "data": data,
    })
}

/// The body the test route sends: a session with no environment, under a fresh id that
/// names no session.
pub fn sample(kind: &str) -> Value {
    body(
        kind,
        &json!({"id": ids::new("agsess"), "environment": {"type": "none"}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_give_the_full_name() {
        assert_eq!(parse("idle", "p").unwrap(), "agent.session.idle");
        assert_eq!(
            parse("agent.session.idle", "p").unwrap(),
            "agent.session.idle"
        );
        assert_eq!(
            parse("in_progress", "p").unwrap(),
            "agent.session.in_progress"
        );
        assert_eq!(parse("created", "p").unwrap(), "agent.session.created");
        for bad in [
            "agent.session.action_required",
            "action_required",
            "response.completed",
            "agent.session.",
            "",
            "IDLE",
        ] {
            let err = parse(bad, "event_types").unwrap_err();
            assert_eq!(err.param.as_deref(), Some("event_types"), "{bad}");
        }
    }

    #[test]
    fn lists_are_non_empty_arrays_of_strings_without_repeats() {
        let list = json!(["failed", "agent.session.failed", "created"]);
        assert_eq!(
            parse_list(Some(&list)).unwrap(),
            ["agent.session.failed", "agent.session.created"]
        );
        for bad in [json!([]), json!("idle"), json!([1]), Value::Null] {
            assert!(parse_list(Some(&bad)).is_err(), "{bad}");
        }
        assert!(parse_list(None).is_err());
    }

    #[test]
    fn bodies_follow_the_sdk_models() {
        let session = json!({"id": "agsess_1", "environment": {"type": "self_hosted", "id": "env_1", "remote_url": "https://r"}});
        let created = body("agent.session.created", &session);
        assert_eq!(created["object"], "event");
        assert!(created["id"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(
            created["data"],
            json!({"id": "agsess_1", "environment_type": "self_hosted", "environment_id": "env_1", "connect": {"remote_url": "https://r"}})
        );
        let idle = body("agent.session.idle", &session);
        assert!(idle["data"].get("connect").is_none());
        assert_eq!(
            sample("agent.session.failed")["data"]["environment_type"],
            "none"
        );
    }
}
