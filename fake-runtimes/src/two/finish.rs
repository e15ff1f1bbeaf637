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

    /// Adds the usage fields, `tail`, the line's `uuid`, then `after` (fields the real CLI puts after `uuid`).
    fn finish_line(&mut self, mut line: Value, tail: Value, after: Value) {
        self.usage_fields(&mut line);
        if let (Some(obj), Value::Object(tail)) = (line.as_object_mut(), tail) {
            obj.extend(tail);
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
        self.finish_line(
            line,
            json!({"terminal_reason": "completed", "fast_mode_state": "off"}),
            json!({}),
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
            "error": match status {
                Some(401) => "authentication_failed",
                Some(429) => "rate_limit",
                Some(_) => "server_error",
                None => "unknown",
            },
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
        let mut tail = json!({"terminal_reason": "completed", "fast_mode_state": "off"});
        if requested_nothing && status.is_some() {
            // No model answered, so no model has usage.
            tail["modelUsage"] = json!({});
        }
        self.finish_line(line, tail, json!({}));
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

    /// `/compact`: with earlier turns, a `compact_boundary` line and the
    /// summary; with none, Claude's "Not enough messages" reply.
    pub fn compact(&mut self, prior_turns: usize, pre_tokens: u64) -> super::turn::TurnReport {
        self.system_status_compacting();
        if prior_turns == 0 {
            const NOT_ENOUGH: &str = "Not enough messages to compact.";
            self.status_line(
                json!({"status": null, "compact_result": "failed", "compact_error": NOT_ENOUGH}),
            );
            let id = self.uuid();
            let line = json!({
                "type": "assistant",
                "message": ev::synthetic_message(&id, NOT_ENOUGH),
                "parent_tool_use_id": null,
                "session_id": self.s.session_id,
                "uuid": self.uuid(),
            });
            self.emit(line);
            self.result_text = Some(NOT_ENOUGH.into());
        } else {
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
            });
            self.emit(boundary);
            let summary = format!(
                "This session is being continued from a previous conversation that ran out of context. \
                 The summary below covers the earlier portion of the conversation.\n\n\
                 Summary of {prior_turns} earlier turn(s) (rt-two fake compaction)."
            );
            self.user_text(
                json!(summary),
                json!({"isReplay": false, "isSynthetic": true}),
            );
            self.user_text(
                json!("<local-command-stdout>Compacted </local-command-stdout>"),
                json!({"isReplay": true}),
            );
            self.result_text = Some(String::new());
        }
        let elapsed = self.s.clock.elapsed_ms();
        let line = json!({
            "type": "result",
            "subtype": "success",
            "is_error": false,
            "duration_ms": elapsed,
            "duration_api_ms": 0,
            "num_turns": 0,
            "result": self.result_text.clone().unwrap_or_default(),
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
