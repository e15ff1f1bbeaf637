//! rt-two: Claude Code 2.1.332 driven as `-p --output-format stream-json`, one process per
//! turn.

mod compact;
mod parse;
#[cfg(test)]
mod tests;

use super::{Adapter, Launch, LineParser, McpServer, TurnRequest};
use serde_json::{Map, Value, json};

/// Linux refuses a single argv string over 128 KiB (MAX_ARG_STRLEN); longer prompts go
/// through stdin instead, with margin.
pub(super) const MAX_ARGV_PROMPT: usize = 100_000;

/// A non-interactive turn cannot answer permission prompts, so anything not pre-approved is
/// denied. `bypassPermissions` would approve everything but Claude Code refuses it as root
/// unless `IS_SANDBOX=1`, and sandboxes often run as root. `acceptEdits` approves file edits
/// inside the working directory; `--allowedTools` adds shell commands and the configured
/// MCP servers. Web tools stay denied. An operator can override both through extra_args,
/// which come later (commander keeps the last value).
pub(super) const PERMISSION_MODE: &str = "acceptEdits";

pub struct RtTwo;

impl Adapter for RtTwo {
    fn id(&self) -> &'static str {
        "rt-two"
    }

    fn launch(&self, request: &TurnRequest) -> Launch {
        // stream-json needs `--verbose` in `-p` mode; partial messages give the text deltas.
        let mut args: Vec<String> = [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ]
        .map(String::from)
        .to_vec();
        if let Some(model) = &request.model {
            args.extend(["--model".into(), model.clone()]);
        }
        if let Some(session_id) = &request.resume {
            // `--resume` takes an optional value: the `=` form keeps it from being dropped if
            // an id ever started with `-`.
            args.push(format!("--resume={session_id}"));
        }
        if let Some(instructions) = &request.instructions {
            args.extend(["--append-system-prompt".into(), instructions.clone()]);
        }
        if !request.mcp_servers.is_empty() {
            args.extend(["--mcp-config".into(), mcp_config(&request.mcp_servers)]);
        }
        args.extend(["--permission-mode".into(), PERMISSION_MODE.into()]);
        let mut allowed = vec!["Bash".to_owned()];
        allowed.extend(
            request
                .mcp_servers
                .iter()
                .map(|s| format!("mcp__{}", s.name)),
        );
        // Variadic like `--mcp-config`: one comma-separated word, and an option or `--`
        // always follows, so it cannot swallow the prompt.
        args.extend(["--allowedTools".into(), allowed.join(",")]);
        args.extend(request.extra_args.iter().cloned());
        // `--` ends the options: variadic options in extra_args cannot swallow the prompt,
        // and a prompt starting with `-` is not read as an option.
        let stdin = if request.prompt.len() > MAX_ARGV_PROMPT {
            Some(request.prompt.clone())
        } else {
            args.extend(["--".into(), request.prompt.clone()]);
            None
        };
        Launch {
            program: "rt-two".into(),
            args,
            stdin,
        }
    }

    fn parser(&self) -> Box<dyn LineParser> {
        Box::new(parse::Parser::default())
    }
}

/// Header values are `${VAR}` references that Claude Code expands from its own environment,
/// so argv carries variable names, never secrets.
fn mcp_config(servers: &[McpServer]) -> String {
    let servers: Map<String, Value> = servers
        .iter()
        .map(|server| {
            let headers: Map<String, Value> = server
                .headers_from_env
                .iter()
                .map(|(header, var)| (header.clone(), Value::String(format!("${{{var}}}"))))
                .collect();
            let mut config = json!({ "type": "http", "url": server.url });
            if !headers.is_empty() {
                config["headers"] = Value::Object(headers);
            }
            (server.name.clone(), config)
        })
        .collect();
    json!({ "mcpServers": servers }).to_string()
}
