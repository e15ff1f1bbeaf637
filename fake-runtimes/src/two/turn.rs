//! Renders a turn's steps as Claude Code stream-json lines.
//!
//! Content is grouped into API messages like the real CLI: blocks share a
//! message until a tool call ends it (`stop_reason: tool_use`); the tool
//! result comes back as a `user` line and the next block opens a new message.

use super::events::{self as ev, stream};
use crate::clock::Clock;
use crate::effects;
use crate::mcp::McpServer;
use crate::out::{Out, raw_stdout, stderr_line};
use crate::script::{Step, Tokens, UsageSetting, echo_reply, estimate_tokens, with_reply};
use serde_json::{Map, Value, json};
use std::path::PathBuf;

/// How a turn ended, for the exit code and the store.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    pub reply: Option<String>,
    pub is_error: bool,
    pub tokens: Tokens,
}

/// Per-process settings shared by every turn.
pub struct Settings<'a> {
    pub session_id: String,
    pub model: String,
    pub cwd: PathBuf,
    pub mcp: &'a [McpServer],
    pub partial: bool,
    pub max_turns: Option<u64>,
    pub clock: Clock,
}

/// How 2.1.332 shows thinking in print mode (its default `display: updates`).
const THINKING_DISPLAY: &str = "updates";

/// The sub-agent whose lines are being written (`parent_tool_use_id`).
pub(super) struct Parent {
    pub tool_use_id: String,
    pub subagent_type: String,
    pub description: String,
}

pub(super) struct OpenMessage {
    id: String,
    next_index: usize,
    output_tokens: u64,
}

/// Signals that the turn is over (failure, max turns) and no result follows.
pub(super) struct Ended;

pub struct TurnRunner<'a> {
    pub(super) out: &'a mut Out,
    pub(super) s: &'a Settings<'a>,
    pub(super) turn: usize,
    pub(super) prompt: String,
    base_input: u64,
    seq: u64,
    pub(super) msg_seq: u64,
    /// Ids of the API messages this turn started (the result's `begun_message_ids`).
    pub(super) begun: Vec<String>,
    tool_seq: u64,
    pub(super) msg: Option<OpenMessage>,
    pub(super) parent: Option<Parent>,
    pub(super) num_turns: u64,
    pub(super) tokens: Tokens,
    pub(super) usage: Option<UsageSetting>,
    pub(super) result_text: Option<String>,
    pub(super) todos: Vec<(String, bool)>,
    pub(super) is_error: bool,
}

impl<'a> TurnRunner<'a> {
    pub fn new(
        out: &'a mut Out,
        s: &'a Settings<'a>,
        turn: usize,
        prompt: String,
        history: &str,
    ) -> Self {
        let base_input = estimate_tokens(&prompt) + estimate_tokens(history);
        TurnRunner {
            out,
            s,
            turn,
            prompt,
            base_input,
            seq: 0,
            msg_seq: 0,
            begun: Vec::new(),
            tool_seq: 0,
            msg: None,
            parent: None,
            num_turns: 0,
            tokens: Tokens::default(),
            usage: None,
            result_text: None,
            todos: Vec::new(),
            is_error: false,
        }
    }

    pub(super) fn uuid(&mut self) -> String {
        self.seq += 1;
        crate::ids::uuid(
            4,
            &[
                &self.s.session_id,
                &self.turn.to_string(),
                &self.seq.to_string(),
            ],
        )
    }

    pub(super) fn tool_id(&mut self) -> String {
        self.tool_seq += 1;
        format!("toolu_fake_{:02}_{:04}", self.turn, self.tool_seq)
    }

    pub(super) fn report(&self) -> TurnReport {
        TurnReport {
            reply: self.result_text.clone(),
            is_error: self.is_error,
            tokens: self.effective_tokens(),
        }
    }

    pub(super) fn effective_tokens(&self) -> Tokens {
        match self.usage {
            Some(UsageSetting::Fixed(t)) => t,
            _ => self.tokens,
        }
    }

    pub(super) fn usage_shown(&self) -> bool {
        self.usage != Some(UsageSetting::Omit)
    }

    fn streaming(&self) -> bool {
        self.s.partial && self.parent.is_none()
    }

    pub(super) fn emit(&mut self, v: Value) {
        self.out.json(v);
    }

    /// `system` line with Claude's trailing `uuid`, `session_id`.
    pub(super) fn system(&mut self, subtype: &str, fields: Value) {
        let mut line = Map::new();
        line.insert("type".into(), json!("system"));
        line.insert("subtype".into(), json!(subtype));
        if let Value::Object(f) = fields {
            line.extend(f);
        }
        line.insert("uuid".into(), json!(self.uuid()));
        line.insert("session_id".into(), json!(self.s.session_id));
        self.emit(Value::Object(line));
    }

    fn stream_event(&mut self, event: Value, ttft: bool) {
        let mut line = json!({
            "type": "stream_event",
            "event": event,
            "session_id": self.s.session_id,
            "parent_tool_use_id": null,
            "uuid": self.uuid(),
        });
        if ttft && let Some(obj) = line.as_object_mut() {
            obj.insert("ttft_ms".into(), json!(self.s.clock.elapsed_ms()));
        }
        // 2.1.332 says how thinking is shown on the events that may carry it, and names the
        // API message on every event (deltas carry only an index).
        let shows_thinking = line["event"]["type"] == "message_start"
            || line["event"]["content_block"]["type"] == "thinking"
            || line["event"]["delta"]["type"] == "thinking_delta";
        let message_id = self.msg.as_ref().map(|m| m.id.clone());
        if let Some(obj) = line.as_object_mut() {
            if shows_thinking {
                obj.insert("thinking_display".into(), json!(THINKING_DISPLAY));
            }
            if let Some(id) = message_id {
                obj.insert("api_message_id".into(), json!(id));
            }
        }
        self.emit(line);
    }

    fn parent_id(&self) -> Value {
        self.parent
            .as_ref()
            .map_or(Value::Null, |p| json!(p.tool_use_id))
    }

    /// Sub-agent lines carry these two extra fields.
    fn tag_parent(&self, line: &mut Value) {
        if let (Some(p), Some(obj)) = (&self.parent, line.as_object_mut()) {
            obj.insert("subagent_type".into(), json!(p.subagent_type));
            obj.insert("task_description".into(), json!(p.description));
        }
    }

    /// A `user` line carrying a tool result.
    pub(super) fn user_tool_result(
        &mut self,
        tool_use_id: &str,
        content: Value,
        is_error: Option<bool>,
        tool_use_result: Value,
    ) {
        let mut line = json!({
            "type": "user",
            "message": {"role": "user", "content": [ev::tool_result(tool_use_id, content, is_error)]},
            "parent_tool_use_id": self.parent_id(),
            "session_id": self.s.session_id,
            "uuid": self.uuid(),
            "timestamp": self.s.clock.now_rfc3339(),
        });
        if self.parent.is_none() {
            if let Some(obj) = line.as_object_mut() {
                obj.insert("tool_use_result".into(), tool_use_result);
                // 2.1.332 says why the call was allowed: the fake runs only pre-approved
                // tools (`--allowedTools`, `--permission-mode`), a rule of the config.
                obj.insert(
                    "tool_result_meta".into(),
                    json!([{"id": tool_use_id, "permission_decision": {"decision": "accept", "source": "config", "reason_type": "rule"}}]),
                );
            }
        } else {
            self.tag_parent(&mut line);
        }
        self.emit(line);
    }

    /// A `user` line with plain content (sub-agent prompt, compact summary).
    pub(super) fn user_text(&mut self, content: Value, extra: Value) {
        let mut line = json!({
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": self.parent_id(),
            "session_id": self.s.session_id,
            "uuid": self.uuid(),
            "timestamp": self.s.clock.now_rfc3339(),
        });
        if let (Value::Object(e), Some(obj)) = (extra, line.as_object_mut()) {
            obj.extend(e);
        }
        self.tag_parent(&mut line);
        self.emit(line);
    }

    fn open_message(&mut self) {
        if self.msg.is_some() {
            return;
        }
        self.msg_seq += 1;
        let id = format!("msg_fake_{:02}_{:04}", self.turn, self.msg_seq);
        if self.parent.is_none() {
            self.num_turns += 1;
            self.begun.push(id.clone());
        }
        self.tokens.input += self.base_input;
        self.msg = Some(OpenMessage {
            id: id.clone(),
            next_index: 0,
            output_tokens: 0,
        });
        if self.streaming() {
            self.system("status", json!({"status": "requesting"}));
            let mut start =
                ev::assistant_message(&id, &self.s.model, json!(null), Some(&self.snapshot()));
            if let Some(obj) = start.as_object_mut() {
                obj.insert("content".into(), json!([]));
                obj.remove("context_management");
                if !self.usage_shown() {
                    obj.remove("usage");
                }
            }
            self.stream_event(stream::message_start(start), true);
        }
    }

    /// Usage as known at message start (the real CLI shows that snapshot).
    fn snapshot(&self) -> Tokens {
        Tokens {
            input: self.base_input,
            output: 1,
            ..Tokens::default()
        }
    }

    /// Emits one content block: stream events around the assistant line.
    pub(super) fn block(
        &mut self,
        block: Value,
        start: Value,
        deltas: Vec<Value>,
        delay_ms: u64,
        meta: Option<Value>,
    ) {
        self.open_message();
        let streaming = self.streaming();
        let thinking_block = block["type"] == "thinking";
        let (msg_id, index) = match &mut self.msg {
            Some(m) => {
                m.next_index += 1;
                (m.id.clone(), m.next_index - 1)
            }
            None => return,
        };
        if streaming {
            let thinking = start["type"] == "thinking";
            self.stream_event(stream::block_start(index, start), false);
            if thinking {
                // Claude Code reports its estimate as soon as a thinking block opens.
                let estimate = estimate_tokens(block["thinking"].as_str().unwrap_or_default());
                self.system(
                    "thinking_tokens",
                    json!({"estimated_tokens": estimate, "estimated_tokens_delta": estimate}),
                );
            }
        }
        for delta in deltas {
            if streaming {
                self.stream_event(stream::block_delta(index, delta), false);
            }
            effects::sleep_ms(delay_ms);
        }
        let usage = self.usage_shown().then(|| self.snapshot());
        let mut line = json!({
            "type": "assistant",
            "message": ev::assistant_message(&msg_id, &self.s.model, block, usage.as_ref()),
            "parent_tool_use_id": self.parent_id(),
            "session_id": self.s.session_id,
            "uuid": self.uuid(),
            "timestamp": self.s.clock.now_rfc3339(),
            "request_id": format!("req_fake_{:02}_{:04}", self.turn, self.msg_seq),
        });
        if thinking_block && let Some(obj) = line.as_object_mut() {
            // The fake thinks for no time at all.
            obj.insert("thinking_duration_ms".into(), json!(0));
            obj.insert("thinking_display".into(), json!(THINKING_DISPLAY));
        }
        if let (Some(meta), Some(obj)) = (meta, line.as_object_mut()) {
            obj.insert("tool_use_meta".into(), meta);
        }
        self.tag_parent(&mut line);
        self.emit(line);
        if streaming {
            self.stream_event(stream::block_stop(index), false);
        }
    }

    pub(super) fn close_message(&mut self, stop_reason: &str) {
        // Closed after its last events, which still name the message (`api_message_id`).
        if let Some(output_tokens) = self.msg.as_ref().map(|m| m.output_tokens)
            && self.streaming()
        {
            self.stream_event(
                stream::message_delta(stop_reason, output_tokens.max(1)),
                false,
            );
            self.stream_event(stream::message_stop(), false);
        }
        self.msg = None;
    }

    pub(super) fn count_output(&mut self, text: &str) {
        let n = estimate_tokens(text);
        self.tokens.output += n;
        if let Some(m) = &mut self.msg {
            m.output_tokens += n;
        }
    }

    pub(super) fn text(&mut self, text: String, deltas: usize, delay_ms: u64) {
        let chunks = effects::split_chunks(&text, deltas);
        let deltas = chunks
            .iter()
            .map(|c| json!({"type": "text_delta", "text": c}))
            .collect();
        self.open_message();
        self.count_output(&text);
        self.block(
            ev::text_block(&text),
            ev::text_block(""),
            deltas,
            delay_ms,
            None,
        );
        if self.parent.is_none() {
            self.result_text = Some(text);
        }
    }

    fn thinking(&mut self, text: &str, delay_ms: u64) {
        const SIGNATURE: &str = "ZmFrZS1zaWduYXR1cmU=";
        self.open_message();
        self.count_output(text);
        self.tokens.reasoning_output += estimate_tokens(text);
        let deltas = vec![
            json!({"type": "thinking_delta", "thinking": text}),
            json!({"type": "signature_delta", "signature": SIGNATURE}),
        ];
        self.block(
            ev::thinking_block(text, SIGNATURE),
            ev::thinking_block("", ""),
            deltas,
            delay_ms / 2,
            None,
        );
    }

    /// Runs the turn's steps and writes the result line.
    pub fn run(&mut self, steps: Vec<Step>) -> TurnReport {
        if crate::env::flag(crate::env::REQUIRE_KEY)
            && crate::env::key_present(&["ANTHROPIC_API_KEY"]).is_none()
        {
            self.num_turns = 1;
            self.api_error("Not logged in · Please run /login", None);
            return self.report();
        }
        for step in with_reply(steps) {
            if self.step(step).is_err() {
                return self.report();
            }
        }
        self.close_message("end_turn");
        self.success_result();
        self.report()
    }

    /// Runs one step; `Err(Ended)` means the turn already wrote its result.
    pub(super) fn step(&mut self, step: Step) -> Result<(), Ended> {
        match step {
            Step::Text {
                text,
                deltas,
                delay_ms,
            } => {
                let text = text.unwrap_or_else(|| echo_reply(&self.prompt, self.turn));
                self.text(text, deltas, delay_ms);
            }
            Step::Reasoning { text, delay_ms } => self.thinking(&text, delay_ms),
            Step::Command {
                command,
                output,
                exit_code,
                delay_ms,
            } => {
                return self.command(&command, &output, exit_code, delay_ms);
            }
            Step::FileChange { path, content } => {
                return self.file_change(&path, content.as_deref());
            }
            Step::McpCall {
                server,
                tool,
                arguments,
            } => return self.mcp_call(server.as_deref(), &tool, &arguments),
            Step::Tool {
                name,
                input,
                output,
                is_error,
            } => return self.generic_tool(&name, &input, &output, is_error),
            Step::Todo { items } => return self.todo(items),
            Step::Subagent(sub) => return self.subagent(&sub),
            Step::Usage(setting) => self.usage = Some(setting),
            Step::Fail { message } => {
                // A failing model request, as Claude Code shows one: the request is
                // announced, then the synthetic error message and an error result.
                if self.streaming() && self.msg.is_none() {
                    self.system("status", json!({"status": "requesting"}));
                }
                self.api_error(&message, Some(500));
                return Err(Ended);
            }
            Step::Crash {
                after_ms,
                exit_code,
            } => {
                effects::sleep_ms(after_ms);
                effects::crash("rt-two", exit_code);
            }
            Step::Stderr(text) => text.lines().for_each(stderr_line),
            Step::Malformed(text) => raw_stdout(&text),
            Step::Hang => effects::hang(),
            Step::Large { bytes, as_command } => {
                let text = effects::large_text(bytes);
                if as_command {
                    return self.command("cat rt-fake-large.txt", &text, 0, 0);
                }
                self.text(text, 1, 0);
            }
            Step::Sleep { ms } => effects::sleep_ms(ms),
        }
        Ok(())
    }
}
