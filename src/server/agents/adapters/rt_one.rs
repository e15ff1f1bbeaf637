//! rt-one: Codex CLI 0.171.0 driven as `exec --json`, one process per turn.

mod parse;
#[cfg(test)]
mod tests;

use super::{Adapter, Launch, LineParser, McpServer, TurnRequest};

/// Linux refuses a single argv string over 128 KiB (MAX_ARG_STRLEN); longer prompts go
/// through stdin instead, with margin.
pub(super) const MAX_ARGV_PROMPT: usize = 100_000;

pub struct RtOne;

impl Adapter for RtOne {
    fn id(&self) -> &'static str {
        "rt-one"
    }

    /// Codex reports the thread's totals so far (300, then 600 after a resume).
    fn cumulative_usage(&self) -> bool {
        true
    }

    fn launch(&self, request: &TurnRequest) -> Launch {
        // `--skip-git-repo-check`: workspaces are often not git repos, and codex refuses to
        // start outside one without it. No `-s` sandbox flag: the sandbox policy is the
        // operator's (config.toml or extra_args); a second `-s` would be a clap error.
        let mut args: Vec<String> = vec![
            "exec".into(),
            "--json".into(),
            "--skip-git-repo-check".into(),
        ];
        // `-C` must precede `resume`, which starts a subcommand.
        args.push("-C".into());
        args.push(request.cwd.to_string_lossy().into_owned());
        if let Some(model) = &request.model {
            args.push("-m".into());
            args.push(model.clone());
        }
        if let Some(effort) = &request.reasoning_effort {
            push_config(&mut args, "model_reasoning_effort", &toml_string(effort));
        }
        if let Some(instructions) = &request.instructions {
            // A top-level config key in 0.169 (checked in the binary's ConfigToml fields and
            // against a real run): sent as an extra developer message, not appended to the
            // prompt, so the user's words stay the user's.
            push_config(
                &mut args,
                "developer_instructions",
                &toml_string(instructions),
            );
        }
        for server in &request.mcp_servers {
            push_mcp_server(&mut args, server);
        }
        // After our own `-c`s so an operator's override of the same key wins (codex applies
        // overrides in order), and before `resume`, which takes no exec-level options.
        args.extend(request.extra_args.iter().cloned());
        if let Some(thread_id) = &request.resume {
            args.push("resume".into());
            args.push(thread_id.clone());
        }
        // Clap would read a leading `-` as an option; `-` reads the prompt from stdin instead.
        let stdin = if request.prompt.starts_with('-') || request.prompt.len() > MAX_ARGV_PROMPT {
            args.push("-".into());
            Some(request.prompt.clone())
        } else {
            args.push(request.prompt.clone());
            None
        };
        Launch {
            program: "rt-one".into(),
            args,
            stdin,
        }
    }

    fn parser(&self) -> Box<dyn LineParser> {
        Box::new(parse::Parser::default())
    }
}

fn push_config(args: &mut Vec<String>, key: &str, toml_value: &str) {
    args.push("-c".into());
    args.push(format!("{key}={toml_value}"));
}

/// Codex splits a `-c` key on every `.` (no quoting), so the server name is used bare: the
/// caller keeps names to `[A-Za-z0-9_-]`, which codex itself requires of MCP server names.
fn push_mcp_server(args: &mut Vec<String>, server: &McpServer) {
    let prefix = format!("mcp_servers.{}", server.name);
    push_config(args, &format!("{prefix}.url"), &toml_string(&server.url));
    // `exec` cannot ask anyone: without this codex 0.169 refuses every call of the server
    // ("MCP tool call requires approval, but approval policy is never"). Giving the agent
    // the tool is the approval.
    push_config(
        args,
        &format!("{prefix}.default_tools_approval_mode"),
        &toml_string("approve"),
    );
    if !server.headers_from_env.is_empty() {
        // `env_http_headers` maps a header to the NAME of a variable codex reads from its own
        // environment, so the secret never appears in argv.
        let pairs: Vec<String> = server
            .headers_from_env
            .iter()
            .map(|(header, var)| format!("{}={}", toml_string(header), toml_string(var)))
            .collect();
        push_config(
            args,
            &format!("{prefix}.env_http_headers"),
            &format!("{{{}}}", pairs.join(",")),
        );
    }
}

/// A TOML basic string. `-c` values are parsed as TOML, and a value that fails to parse is
/// silently taken as a raw string, so a bad escape would not error, it would change meaning.
pub(super) fn toml_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
