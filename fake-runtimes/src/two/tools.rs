//! Tool-using steps for rt-two: each is a `tool_use` block that ends the
//! message, a real side effect where scripted, and the `tool_result` line.

use super::events as ev;
use super::turn::{Ended, Parent, TurnRunner};
use crate::effects::{self, ChangeKind};
use crate::mcp::{McpError, call_tool};
use crate::script::{Step, Subagent, estimate_tokens};
use serde_json::{Value, json};

const TODO_OK: &str = "Todos have been modified successfully. Ensure that you continue to use the todo list to \
                       track your progress. Please proceed with the current tasks if applicable";
const FRESH: &str = "(file state is current in your context — no need to Read it back)";

impl TurnRunner<'_> {
    /// `tool_use` block, then close the message as the model stops for tools.
    /// `display` is an MCP tool's (display name, server) for `tool_use_meta`.
    fn tool_use(&mut self, name: &str, input: &Value, display: Option<(String, String)>) -> String {
        let id = self.tool_id();
        // 2.1.332 also names the server's own tool (`mcp__<server>__<tool>`'s last part).
        let tool_name = name.rsplit("__").next().unwrap_or(name);
        let meta = display.map(|(tool, server)| json!([{"id": id, "display_name": tool, "server_display_name": server, "tool_name": tool_name}]));
        let delta = json!({"type": "input_json_delta", "partial_json": input.to_string()});
        self.count_output(&input.to_string());
        self.block(
            ev::tool_use_block(&id, name, input),
            ev::tool_use_block(&id, name, &json!({})),
            vec![delta],
            0,
            meta,
        );
        self.close_message("tool_use");
        id
    }

    /// After a tool result the model gets another turn, unless --max-turns says no.
    fn after_tool(&mut self) -> Result<(), Ended> {
        match self.s.max_turns {
            Some(max) if self.parent.is_none() && self.num_turns >= max => {
                self.max_turns_result(max);
                Err(Ended)
            }
            _ => Ok(()),
        }
    }

    pub(super) fn command(
        &mut self,
        command: &str,
        output: &str,
        exit_code: i32,
        delay_ms: u64,
    ) -> Result<(), Ended> {
        let id = self.tool_use(
            "Bash",
            &json!({"command": command, "description": "Run command"}),
            None,
        );
        effects::sleep_ms(delay_ms);
        let shown = output.trim_end_matches('\n');
        if exit_code == 0 {
            let result = json!({"stdout": shown, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false});
            self.user_tool_result(&id, json!(shown), Some(false), result);
        } else {
            let text = format!("Exit code {exit_code}\n{shown}");
            self.user_tool_result(
                &id,
                json!(text),
                Some(true),
                json!(format!("Error: {text}")),
            );
        }
        self.after_tool()
    }

    pub(super) fn file_change(&mut self, path: &str, content: Option<&str>) -> Result<(), Ended> {
        let full = self.s.cwd.join(path).display().to_string();
        let Some(text) = content else {
            // Claude Code has no delete tool; it removes files with Bash.
            let applied = effects::apply_file_change(&self.s.cwd, path, None);
            let id = self.tool_use(
                "Bash",
                &json!({"command": format!("rm {full}"), "description": "Delete file"}),
                None,
            );
            match applied {
                Ok(_) => {
                    let result = json!({"stdout": "", "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": true});
                    self.user_tool_result(
                        &id,
                        json!("(Bash completed with no output)"),
                        Some(false),
                        result,
                    );
                }
                Err(e) => {
                    let text = format!("Exit code 1\n{e}");
                    self.user_tool_result(
                        &id,
                        json!(text),
                        Some(true),
                        json!(format!("Error: {text}")),
                    );
                }
            }
            return self.after_tool();
        };
        let id = self.tool_use("Write", &json!({"file_path": full, "content": text}), None);
        match effects::apply_file_change(&self.s.cwd, path, Some(text)) {
            Ok(applied) => {
                let created = applied.kind == ChangeKind::Add;
                let message = if created {
                    format!("File created successfully at: {full} {FRESH}")
                } else {
                    format!("The file {full} has been updated successfully. {FRESH}")
                };
                let result = json!({
                    "type": if created { "create" } else { "update" },
                    "filePath": full,
                    "content": text,
                    "structuredPatch": [],
                    "originalFile": applied.previous,
                    "userModified": false,
                });
                self.user_tool_result(&id, json!(message), None, result);
            }
            Err(e) => {
                let text = format!("<tool_use_error>{e}</tool_use_error>");
                self.user_tool_result(&id, json!(text), Some(true), json!(format!("Error: {e}")));
            }
        }
        self.after_tool()
    }

    pub(super) fn mcp_call(
        &mut self,
        server: Option<&str>,
        tool: &str,
        arguments: &Value,
    ) -> Result<(), Ended> {
        let mcp = self.s.mcp;
        let found = match server {
            Some(name) => mcp.iter().find(|s| s.name == name),
            None => mcp.first(),
        };
        let name = server
            .or(found.map(|s| s.name.as_str()))
            .unwrap_or("unknown")
            .to_string();
        let full = format!("mcp__{name}__{tool}");
        let display = found.map(|_| (title(tool), name.clone()));
        let id = self.tool_use(&full, arguments, display);
        let Some(server) = found else {
            let text =
                format!("<tool_use_error>Error: No such tool available: {full}</tool_use_error>");
            self.user_tool_result(
                &id,
                json!(text),
                Some(true),
                json!(format!("Error: No such tool available: {full}")),
            );
            return self.after_tool();
        };
        match call_tool(server, tool, arguments, "rt-two") {
            Ok(result) if !result.is_error => {
                let content = json!(result.content);
                self.user_tool_result(&id, content.clone(), None, content);
            }
            Ok(result) => {
                let text = result.text();
                self.user_tool_result(
                    &id,
                    json!(text),
                    Some(true),
                    json!(format!("Error: {text}")),
                );
            }
            Err(err) => {
                let text = match err {
                    McpError::Rpc { code, message } => format!("MCP error {code}: {message}"),
                    McpError::Transport(m) => m,
                };
                self.user_tool_result(
                    &id,
                    json!(text),
                    Some(true),
                    json!(format!("Error: {text}")),
                );
            }
        }
        self.after_tool()
    }

    pub(super) fn generic_tool(
        &mut self,
        name: &str,
        input: &Value,
        output: &str,
        is_error: bool,
    ) -> Result<(), Ended> {
        let id = self.tool_use(name, input, None);
        if is_error {
            let text = format!("<tool_use_error>{output}</tool_use_error>");
            self.user_tool_result(
                &id,
                json!(text),
                Some(true),
                json!(format!("Error: {output}")),
            );
        } else {
            self.user_tool_result(&id, json!(output), None, json!(output));
        }
        self.after_tool()
    }

    pub(super) fn todo(&mut self, items: Vec<(String, bool)>) -> Result<(), Ended> {
        let as_todos = |list: &[(String, bool)]| -> Vec<Value> {
            list.iter()
                .map(|(text, done)| {
                    json!({"content": text, "status": if *done { "completed" } else { "pending" }, "activeForm": text})
                })
                .collect()
        };
        let new = as_todos(&items);
        let old = as_todos(&self.todos);
        let id = self.tool_use("TodoWrite", &json!({"todos": new}), None);
        self.user_tool_result(
            &id,
            json!(TODO_OK),
            None,
            json!({"oldTodos": old, "newTodos": new}),
        );
        self.todos = items;
        self.after_tool()
    }

    /// A Task tool call whose sub-agent lines carry `parent_tool_use_id`.
    pub(super) fn subagent(&mut self, sub: &Subagent) -> Result<(), Ended> {
        let input = json!({"description": sub.description, "prompt": sub.prompt, "subagent_type": sub.subagent_type});
        let task_use = self.tool_use("Task", &input, None);
        let task_id = crate::ids::hex(17, &[&self.s.session_id, &task_use]);
        self.system(
            "task_started",
            json!({
                "task_id": task_id, "tool_use_id": task_use, "description": sub.description,
                "subagent_type": sub.subagent_type, "task_type": "local_agent", "prompt": sub.prompt,
            }),
        );
        self.parent = Some(Parent {
            tool_use_id: task_use.clone(),
            subagent_type: sub.subagent_type.clone(),
            description: sub.description.clone(),
        });
        self.user_text(json!([{"type": "text", "text": sub.prompt}]), json!({}));
        let before = self.tokens;
        let mut tool_uses = 0u64;
        for step in &sub.steps {
            // The real CLI does not forward a sub-agent's own text blocks.
            if matches!(step, Step::Text { .. } | Step::Reasoning { .. }) {
                continue;
            }
            if let Some(tool) = tool_name(step) {
                tool_uses += 1;
                let usage = json!({"total_tokens": self.tokens.output - before.output + 1, "tool_uses": tool_uses, "duration_ms": self.s.clock.elapsed_ms()});
                let fields = json!({
                    "task_id": task_id, "tool_use_id": task_use, "description": format!("Running {}", sub.description),
                    "subagent_type": sub.subagent_type, "usage": usage, "last_tool_name": tool,
                });
                self.system("task_progress", fields);
            }
            self.step(step.clone())?;
        }
        self.close_message("end_turn");
        self.parent = None;
        let total_tokens = self.tokens.output - before.output + estimate_tokens(&sub.result);
        let duration = self.s.clock.elapsed_ms();
        let end_time = self.s.clock.now_ms();
        self.system(
            "task_updated",
            json!({"task_id": task_id, "patch": {"status": "completed", "end_time": end_time}}),
        );
        self.system(
            "task_notification",
            json!({
                "task_id": task_id, "tool_use_id": task_use, "status": "completed", "output_file": "",
                "summary": sub.description,
                "usage": {"total_tokens": total_tokens, "tool_uses": tool_uses, "duration_ms": duration},
            }),
        );
        let footer = format!(
            "agentId: {task_id} (use SendMessage with to: '{task_id}', summary: '<5-10 word recap>' to continue this agent)\n\
             <usage>subagent_tokens: {total_tokens}\ntool_uses: {tool_uses}\nduration_ms: {duration}</usage>"
        );
        let content =
            json!([{"type": "text", "text": sub.result}, {"type": "text", "text": footer}]);
        let result = json!({
            "status": "completed", "prompt": sub.prompt, "agentId": task_id, "agentType": sub.subagent_type,
            "content": [{"type": "text", "text": sub.result}], "resolvedModel": self.s.model,
            "totalDurationMs": duration, "totalTokens": total_tokens, "totalToolUseCount": tool_uses,
        });
        self.user_tool_result(&task_use, content, None, result);
        self.after_tool()
    }
}

/// The tool a step shows up as, for sub-agent progress lines.
fn tool_name(step: &Step) -> Option<String> {
    match step {
        Step::Command { .. }
        | Step::Large {
            as_command: true, ..
        } => Some("Bash".into()),
        Step::FileChange {
            content: Some(_), ..
        } => Some("Write".into()),
        Step::FileChange { content: None, .. } => Some("Bash".into()),
        Step::McpCall { server, tool, .. } => Some(format!(
            "mcp__{}__{tool}",
            server.as_deref().unwrap_or("unknown")
        )),
        Step::Tool { name, .. } => Some(name.clone()),
        Step::Todo { .. } => Some("TodoWrite".into()),
        Step::Subagent(_) => Some("Task".into()),
        _ => None,
    }
}

/// Claude shows MCP tools by a capitalised display name (`echo` -> `Echo`).
fn title(tool: &str) -> String {
    let mut chars = tool.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
