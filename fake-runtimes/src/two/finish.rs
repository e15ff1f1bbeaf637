//! Result lines and the `/compact` command for rt-two.

use super::events as ev;
use super::turn::{Settings, TurnRunner};
use crate::out::Out;
use crate::script::Tokens;
use serde_json::{Value, json};

impl TurnRunner<'_> {
    fn usage_fields(&self, line: &mut Value) {
        let tokens = self.effective_tokens();
        if let Some(obj) = line.as_object_mut() {
            obj.insert("total_cost_usd".into(), json!(ev::cost_usd(&tokens)));
            if self.usage_shown() {
                obj.insert("usage".into(), ev::result_usage(&tokens));
            }
            obj.insert("modelUsage".into(), ev::model_usage(&self.s.model, &tokens));
            obj.insert("permission_denials".into(), json!([]));
        }
    }

    /// Fields 2.1.332 adds to every result line; `model_usage_since_last_result` repeats
    /// `modelUsage` since the fake prints one result per process.
    fn result_tail(&self, line: &Value) -> Value {
        json!({
            "fast_mode_disabled_reason": ev::FAST_MODE_DISABLED_REASON,
            "subagent_stats": ev::subagent_stats(),
            "safety_stops": 0,
            "queued_turn_count": 0,
            "result_index": 0,
            "model_usage_since_last_result": line.get("modelUsage").cloned().unwrap_or_else(|| json!({})),
        })
    }

    /// Adds the usage fields, `tail`, the line's `uuid`, then `after` (fields the real CLI puts after `uuid`).
    fn finish_line(&mut self, mut line: Value, tail: Value, after: Value) {
        self.usage_fields(&mut line);
        if let (Some(obj), Value::Object(tail)) = (line.as_object_mut(), tail) {
            obj.extend(tail);
        }
        let common = self.result_tail(&line);
        if let (Some(obj), Value::Object(common)) = (line.as_object_mut(), common) {
            obj.extend(common);
        }
        let uuid = self.uuid();
        if let Some(obj) = line.as_object_mut() {
            obj.insert("uuid".into(), json!(uuid));
            if let Value::Object(after) = after {
                obj.extend(after);
            }
        }
        self.emit(line);
    }

    pub(super) fn success_result(&mut self) {
        let elapsed = self.s.clock.elapsed_ms();
        let line = json!({
            "type": "result",
            "subtype": "success",
            "is_error": false,
            "api_error_status": null,
            "duration_ms": elapsed,
            "duration_api_ms": elapsed,
            "ttft_ms": elapsed,
            "ttft_stream_ms": elapsed,
            "time_to_request_ms": 0,
            "num_turns": self.num_turns,
            "result": self.result_text.clone().unwrap_or_default(),
            "stop_reason": "end_turn",
            "session_id": self.s.session_id,
        });
        let begun = self.begun.clone();
        let mut after = json!({"begun_message_ids": begun});
        if !self.begun.is_empty() {
            after["first_content_frame_ms"] = json!(elapsed);
        }
        self.finish_line(
            line,
            json!({"terminal_reason": "completed", "fast_mode_state": "off"}),
            after,
        );
    }

    /// What Claude Code prints when the API call fails: a synthetic
    /// assistant message, then a `success` result with `is_error: true`.
    /// `status` is the HTTP status of the failed request (`None`: no request was made).
    pub(super) fn api_error(&mut self, message: &str, status: Option<u16>) {
        let requested_nothing = self.msg_seq == 0;
        self.msg = None;
        self.is_error = true;
        self.result_text = Some(message.to_string());
        let id = self.uuid();
        let line = json!({
            "type": "assistant",
            "message": ev::synthetic_message(&id, message),
            "parent_tool_use_id": null,
            "session_id": self.s.session_id,
            "uuid": self.uuid(),
            "timestamp": self.s.clock.now_rfc3339(),
            "error": match status {
                Some(401) => "authentication_failed",
                Some(429) => "rate_limit",
                Some(_) => "server_error",
                None => "unknown",
            },
            "is_api_error_message": status.is_some(),
            "api_error_status": status,
            "api_error_type": api_error_type(status),
        });
        self.emit(line);
        let elapsed = self.s.clock.elapsed_ms();
        let line = json!({
            "type": "result",
            "subtype": "success",
            "is_error": true,
            "api_error_status": status,
            "duration_ms": elapsed,
            "duration_api_ms": 0,
            "num_turns": self.num_turns.max(1),
            "result": message,
            "stop_reason": "stop_sequence",
            "session_id": self.s.session_id,
        });
        let mut tail = json!({"terminal_reason": "api_error", "fast_mode_state": "off", "api_error_type": api_error_type(status)});
        if requested_nothing && status.is_some() {
            // No model answered, so no model has usage.
            tail["modelUsage"] = json!({});
        }
        let begun = self.begun.clone();
        self.finish_line(line, tail, json!({"begun_message_ids": begun}));
    }

    pub(super) fn max_turns_result(&mut self, max: u64) {
        self.is_error = true;
        let elapsed = self.s.clock.elapsed_ms();
        let line = json!({
            "type": "result",
            "subtype": "error_max_turns",
            "duration_ms": elapsed,
            "duration_api_ms": elapsed,
            "is_error": true,
            "num_turns": self.num_turns + 1,
            "stop_reason": "tool_use",
            "session_id": self.s.session_id,
        });
        let tail = json!({
            "terminal_reason": "max_turns",
            "fast_mode_state": "off",
        });
        let errors = json!({"errors": [format!("Reached maximum number of turns ({max})")]});
        self.finish_line(line, tail, errors);
    }

    /// `/compact`: with earlier turns (even one exchange, since 2.1.332), a
    /// `compact_boundary` line and the summary as a synthetic user message; with none,
    /// Claude's "No messages to compact" reply. The result says success either way and
    /// names the command (`local_command`).
    pub fn compact(&mut self, prior_turns: usize, pre_tokens: u64) -> super::turn::TurnReport {
        if prior_turns == 0 {
            let id = self.uuid();
            let line = json!({
                "type": "assistant",
                "message": ev::synthetic_message(&id, NO_MESSAGES),
                "parent_tool_use_id": null,
                "session_id": self.s.session_id,
                "uuid": self.uuid(),
                "timestamp": self.s.clock.now_rfc3339(),
            });
            self.emit(line);
        } else {
            self.system_status_compacting();
            self.status_line(json!({"status": null, "compact_result": "success"}));
            let boundary = json!({
                "type": "system",
                "subtype": "compact_boundary",
                "session_id": self.s.session_id,
                "uuid": self.uuid(),
                "compact_metadata": {
                    "trigger": "manual",
                    "pre_tokens": pre_tokens,
                    "post_tokens": pre_tokens.min(500),
                    "cumulative_dropped_tokens": 0,
                    "duration_ms": self.s.clock.elapsed_ms(),
                },
                "logical_parent_uuid": crate::ids::uuid(4, &[&self.s.session_id, "compact-parent"]),
            });
            self.emit(boundary);
            let summary = summary_message(&format!(
                "Summary of {prior_turns} earlier turn(s) (rt-two fake compaction)."
            ));
            self.user_text(
                json!(summary),
                json!({"isReplay": false, "isSynthetic": true}),
            );
            self.user_text(
                json!("<local-command-stdout>Compacted </local-command-stdout>"),
                json!({"isReplay": true}),
            );
        }
        self.result_text = Some(String::new());
        let elapsed = self.s.clock.elapsed_ms();
        let line = json!({
            "type": "result",
            "subtype": "success",
            "is_error": false,
            "duration_ms": elapsed,
            "duration_api_ms": 0,
            "num_turns": 0,
            "result": "",
            "local_command": "compact",
            "stop_reason": null,
            "session_id": self.s.session_id,
        });
        self.finish_line(line, json!({"fast_mode_state": "off"}), json!({}));
        self.report()
    }

    fn system_status_compacting(&mut self) {
        self.status_line(json!({"status": "compacting"}));
    }

    /// Status lines put `session_id` before `uuid`, unlike other system lines.
    fn status_line(&mut self, fields: Value) {
        let mut line = json!({"type": "system", "subtype": "status"});
        if let (Some(obj), Value::Object(f)) = (line.as_object_mut(), fields) {
            obj.extend(f);
            obj.insert("session_id".into(), json!(self.s.session_id));
        }
        let uuid = self.uuid();
        if let Some(obj) = line.as_object_mut() {
            obj.insert("uuid".into(), json!(uuid));
        }
        self.emit(line);
    }
}

/// What `/compact` answers on a session with nothing in it yet.
const NO_MESSAGES: &str = "Error: No messages to compact";

/// The synthetic user message that starts a compacted conversation (2.1.332's wording,
/// without its pointer to the transcript file, which the fake does not keep).
fn summary_message(summary: &str) -> String {
    format!(
        "This session is being continued from a previous conversation that ran out of context. \
         The summary below covers the earlier portion of the conversation.\n\n\
         <system-reminder>\n<tools-used-before-summary></tools-used-before-summary>\n</system-reminder>\n\
         Summary:\n{summary}\n\n\
         Continue the conversation from where it left off without asking the user any further questions."
    )
}

/// The API's error type for an HTTP status, as 2.1.332 copies it into error lines.
fn api_error_type(status: Option<u16>) -> Value {
    match status {
        Some(401) => json!("authentication_error"),
        Some(403) => json!("permission_error"),
        Some(429) => json!("rate_limit_error"),
        Some(529) => json!("overloaded_error"),
        Some(_) => json!("api_error"),
        None => Value::Null,
    }
}

/// The line Claude Code prints when `--resume` names no known session.
pub fn resume_not_found(out: &mut Out, s: &Settings, requested: &str, message: &str) {
    let zero = Tokens::default();
    out.json(json!({
        "type": "result",
        "subtype": "error_during_execution",
        "duration_ms": 0,
        "duration_api_ms": 0,
        "is_error": true,
        "num_turns": 0,
        "stop_reason": null,
        "session_id": requested,
        "total_cost_usd": 0,
        "usage": ev::result_usage(&zero),
        "modelUsage": {},
        "permission_denials": [],
        "uuid": crate::ids::uuid(4, &[&s.session_id, "resume-error"]),
        "errors": [message],
    }));
}
