//! Renders a turn's steps as `codex exec --json` events.

use super::events::{self as ev, item};
use crate::effects;
use crate::mcp::{McpError, McpServer, call_tool};
use crate::out::{Out, raw_stdout, stderr_line};
use crate::script::{
    Step, Subagent, Tokens, UsageSetting, echo_reply, estimate_tokens, with_reply,
};
use crate::store::Thread;
use serde_json::{Value, json};
use std::path::PathBuf;

pub enum Outcome {
    Completed { omit_usage: bool },
    Failed(String),
}

pub struct TurnRunner<'a> {
    out: &'a mut Out,
    thread_id: String,
    history: String,
    cwd: PathBuf,
    mcp: &'a [McpServer],
    prompt: String,
    turn: usize,
    next_item: u64,
    children: u64,
    last_message: Option<String>,
    tokens: Tokens,
    usage: Option<UsageSetting>,
    /// Codex keeps one to-do item open until the turn ends.
    todo: Option<(String, Vec<(String, bool)>)>,
}

impl<'a> TurnRunner<'a> {
    pub fn new(
        out: &'a mut Out,
        thread: &Thread,
        cwd: PathBuf,
        mcp: &'a [McpServer],
        prompt: String,
        turn: usize,
    ) -> Self {
        let history = thread
            .turns
            .iter()
            .take(turn.saturating_sub(1))
            .map(|t| format!("{}{}", t.prompt, t.reply.as_deref().unwrap_or("")))
            .collect();
        TurnRunner {
            out,
            thread_id: thread.id.clone(),
            history,
            cwd,
            mcp,
            prompt,
            turn,
            next_item: 0,
            children: 0,
            last_message: None,
            tokens: Tokens::default(),
            usage: None,
            todo: None,
        }
    }

    pub fn last_message(&self) -> Option<&str> {
        self.last_message.as_deref()
    }

    /// Tokens this turn adds to the thread totals.
    pub fn tokens(&self) -> Tokens {
        match self.usage {
            Some(UsageSetting::Fixed(t)) => t,
            _ => self.tokens,
        }
    }

    fn item_id(&mut self) -> String {
        let id = format!("item_{}", self.next_item);
        self.next_item += 1;
        id
    }

    fn emit(&mut self, v: Value) {
        self.out.json(v);
    }

    pub fn run(&mut self, steps: Vec<Step>) -> Outcome {
        self.emit(ev::turn_started());
        self.tokens.input = estimate_tokens(&self.prompt) + estimate_tokens(&self.history);
        self.tokens.cached_input = if self.history.is_empty() {
            0
        } else {
            estimate_tokens(&self.history)
        };
        if crate::env::flag(crate::env::REQUIRE_KEY)
            && crate::env::key_present(&["CODEX_API_KEY", "OPENAI_API_KEY"]).is_none()
        {
            return self.fail("unexpected status 401 Unauthorized: Missing bearer or basic authentication in header");
        }
        for step in with_reply(steps) {
            if let Some(outcome) = self.step(step) {
                return outcome;
            }
        }
        if let Some((id, items)) = self.todo.take() {
            self.emit(item("item.completed", &id, ev::todo_list(&items)));
        }
        Outcome::Completed {
            omit_usage: self.usage == Some(UsageSetting::Omit),
        }
    }

    fn fail(&mut self, message: &str) -> Outcome {
        self.emit(ev::error(message));
        self.emit(ev::turn_failed(message));
        Outcome::Failed(message.to_string())
    }

    /// Runs one step; `Some` ends the turn.
    fn step(&mut self, step: Step) -> Option<Outcome> {
        match step {
            Step::Text {
                text,
                deltas,
                delay_ms,
            } => {
                let text = text.unwrap_or_else(|| echo_reply(&self.prompt, self.turn));
                // exec --json has no message deltas; the time still passes.
                for _ in 0..deltas {
                    effects::sleep_ms(delay_ms);
                }
                self.agent_message(text);
            }
            Step::Reasoning { text, delay_ms } => {
                effects::sleep_ms(delay_ms);
                self.tokens.reasoning_output += estimate_tokens(&text);
                let id = self.item_id();
                self.emit(item("item.completed", &id, ev::reasoning(&text)));
            }
            Step::Command {
                command,
                output,
                exit_code,
                delay_ms,
            } => self.command(&command, &output, exit_code, delay_ms),
            Step::FileChange { path, content } => self.file_change(&path, content.as_deref()),
            Step::McpCall {
                server,
                tool,
                arguments,
            } => self.mcp_call(server.as_deref(), &tool, &arguments),
            Step::Tool {
                name,
                input,
                output,
                is_error,
            } => {
                if name == "update_plan" {
                    self.todo(plan_items(&input));
                } else {
                    self.command(&format!("{name} {input}"), &output, i32::from(is_error), 0);
                }
            }
            Step::Todo { items } => self.todo(items),
            Step::Subagent(sub) => self.subagent(&sub),
            Step::Usage(setting) => self.usage = Some(setting),
            Step::Fail { message } => return Some(self.fail(&message)),
            Step::Crash {
                after_ms,
                exit_code,
            } => {
                effects::sleep_ms(after_ms);
                effects::crash("rt-one", exit_code);
            }
            Step::Stderr(text) => text.lines().for_each(stderr_line),
            Step::Malformed(text) => raw_stdout(&text),
            Step::Hang => effects::hang(),
            Step::Large { bytes, as_command } => {
                let text = effects::large_text(bytes);
                if as_command {
                    self.command("cat rt-fake-large.txt", &text, 0, 0);
                } else {
                    self.agent_message(text);
                }
            }
            Step::Sleep { ms } => effects::sleep_ms(ms),
        }
        None
    }

    fn agent_message(&mut self, text: String) {
        self.tokens.output += estimate_tokens(&text);
        let id = self.item_id();
        self.emit(item("item.completed", &id, ev::agent_message(&text)));
        self.last_message = Some(text);
    }

    fn command(&mut self, command: &str, output: &str, exit_code: i32, delay_ms: u64) {
        let id = self.item_id();
        let shown = ev::shell_wrapped(command);
        self.emit(item(
            "item.started",
            &id,
            ev::command_execution(&shown, "", None, "in_progress"),
        ));
        effects::sleep_ms(delay_ms);
        let status = if exit_code == 0 {
            "completed"
        } else {
            "failed"
        };
        self.emit(item(
            "item.completed",
            &id,
            ev::command_execution(&shown, output, Some(exit_code), status),
        ));
    }

    fn file_change(&mut self, path: &str, content: Option<&str>) {
        let id = self.item_id();
        let (changes, status) = match effects::apply_file_change(&self.cwd, path, content) {
            Ok(applied) => (
                vec![(applied.path.display().to_string(), applied.kind.as_str())],
                "completed",
            ),
            Err(err) => {
                stderr_line(&format!("rt-one: file change failed: {err}"));
                let kind = if content.is_some() { "add" } else { "delete" };
                (
                    vec![(self.cwd.join(path).display().to_string(), kind)],
                    "failed",
                )
            }
        };
        self.emit(item(
            "item.started",
            &id,
            ev::file_change(&changes, "in_progress"),
        ));
        self.emit(item(
            "item.completed",
            &id,
            ev::file_change(&changes, status),
        ));
    }

    fn mcp_call(&mut self, server: Option<&str>, tool: &str, arguments: &Value) {
        let id = self.item_id();
        let found = match server {
            Some(name) => self.mcp.iter().find(|s| s.name == name),
            None => self.mcp.first(),
        };
        let name = server
            .or(found.map(|s| s.name.as_str()))
            .unwrap_or("")
            .to_string();
        self.emit(item(
            "item.started",
            &id,
            ev::mcp_tool_call(&name, tool, arguments, None, None, "in_progress"),
        ));
        let done = match found {
            None => ev::mcp_tool_call(
                &name,
                tool,
                arguments,
                None,
                Some(&format!("unknown MCP server '{name}'")),
                "failed",
            ),
            Some(server) => match call_tool(server, tool, arguments, "rt-one") {
                Ok(result) => {
                    let status = if result.is_error {
                        "failed"
                    } else {
                        "completed"
                    };
                    let body = json!({"content": result.content, "structured_content": result.structured_content});
                    ev::mcp_tool_call(&name, tool, arguments, Some(body), None, status)
                }
                Err(err) => {
                    let message = mcp_error_message(&name, tool, &err);
                    ev::mcp_tool_call(&name, tool, arguments, None, Some(&message), "failed")
                }
            },
        };
        self.emit(item("item.completed", &id, done));
    }

    fn todo(&mut self, items: Vec<(String, bool)>) {
        match self.todo.take() {
            None => {
                let id = self.item_id();
                self.emit(item("item.started", &id, ev::todo_list(&items)));
                self.todo = Some((id, items));
            }
            Some((id, _)) => {
                self.emit(item("item.updated", &id, ev::todo_list(&items)));
                self.todo = Some((id, items));
            }
        }
    }

    /// Codex shows sub-agents as collab tool calls (spawn, then wait); the
    /// child's own items are not part of the parent's exec stream, but its
    /// side effects (files, MCP calls) still happen.
    fn subagent(&mut self, sub: &Subagent) {
        self.children += 1;
        let child = crate::ids::uuid(
            7,
            &[
                &self.thread_id,
                "child",
                &self.turn.to_string(),
                &self.children.to_string(),
            ],
        );
        let parent = self.thread_id.clone();
        let spawn = self.item_id();
        let started = ev::collab_tool_call(
            "spawn_agent",
            &parent,
            &[],
            Some(&sub.prompt),
            json!({}),
            "in_progress",
        );
        self.emit(item("item.started", &spawn, started));
        let states = json!({ child.clone(): {"status": "pending_init", "message": null} });
        let done = ev::collab_tool_call(
            "spawn_agent",
            &parent,
            &[&child],
            Some(&sub.prompt),
            states,
            "completed",
        );
        self.emit(item("item.completed", &spawn, done));

        for step in &sub.steps {
            match step {
                Step::FileChange { path, content } => {
                    if let Err(e) = effects::apply_file_change(&self.cwd, path, content.as_deref())
                    {
                        stderr_line(&format!("rt-one: sub-agent file change failed: {e}"));
                    }
                }
                Step::McpCall {
                    server,
                    tool,
                    arguments,
                } => {
                    let found = match server {
                        Some(name) => self.mcp.iter().find(|s| &s.name == name),
                        None => self.mcp.first(),
                    };
                    if let Some(s) = found {
                        let _ = call_tool(s, tool, arguments, "rt-one");
                    }
                }
                Step::Sleep { ms } => effects::sleep_ms(*ms),
                _ => {}
            }
        }

        let wait = self.item_id();
        let running = json!({ child.clone(): {"status": "running", "message": null} });
        self.emit(item(
            "item.started",
            &wait,
            ev::collab_tool_call("wait", &parent, &[&child], None, running, "in_progress"),
        ));
        let finished = json!({ child.clone(): {"status": "completed", "message": sub.result} });
        self.emit(item(
            "item.completed",
            &wait,
            ev::collab_tool_call("wait", &parent, &[&child], None, finished, "completed"),
        ));
    }
}

/// Codex's wording for a failed MCP call (minus the backtrace it appends).
fn mcp_error_message(server: &str, tool: &str, err: &McpError) -> String {
    format!("tool call error: tool call failed for `{server}/{tool}`\n\nCaused by:\n    {err}")
}

/// `update_plan` input (`{"plan": [{"step", "status"}]}`) to to-do items.
fn plan_items(input: &Value) -> Vec<(String, bool)> {
    input
        .get("plan")
        .and_then(Value::as_array)
        .map(|steps| {
            steps
                .iter()
                .map(|s| {
                    (
                        s.get("step")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        s.get("status").and_then(Value::as_str) == Some("completed"),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}
