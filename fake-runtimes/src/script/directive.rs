//! Built-in scenarios chosen by `[[scenario:NAME]]` or `[[scenario:NAME:ARG]]`
//! inside the prompt. Several directives in one prompt run one after another.

use super::{Step, Subagent, UsageSetting, with_reply};
use serde_json::json;

/// Name, argument, and what the scenario does (listed in `--help` and the README).
pub const DIRECTIVES: &[(&str, &str, &str)] = &[
    ("echo", "", "the default: reply `echo (turn N): <prompt>`"),
    (
        "stream",
        "DELAY_MS",
        "reply streamed in 5 deltas, DELAY_MS apart (default 50)",
    ),
    (
        "reasoning",
        "",
        "a reasoning/thinking block, then the reply",
    ),
    (
        "command",
        "",
        "a command `echo hi` with output `hi\\n`, exit 0",
    ),
    ("command_fail", "", "a command `false` that exits 1"),
    (
        "env",
        "NAME",
        "a command `printenv NAME` (default HOME) whose output is NAME's real value (exit 1 when unset)",
    ),
    (
        "file_change",
        "PATH",
        "really writes PATH (default rt-fake-notes.txt) with the prompt",
    ),
    (
        "mcp",
        "SERVER/TOOL",
        "really calls TOOL (default echo) on SERVER (default: first configured)",
    ),
    (
        "tool",
        "",
        "a generic tool call (rt-two: Read; rt-one: a command item)",
    ),
    (
        "todo",
        "",
        "a to-do list (rt-one: todo_list item; rt-two: TodoWrite)",
    ),
    ("subagent", "", "a sub-agent running one command"),
    ("no_usage", "", "the reply without usage"),
    (
        "fail",
        "MESSAGE",
        "the turn fails with MESSAGE (default `scripted failure`)",
    ),
    (
        "crash",
        "MS",
        "a reasoning item, then the process dies after MS ms (default 100)",
    ),
    ("stderr", "", "three noise lines on stderr, then the reply"),
    ("malformed", "", "a line that is not JSON, then the reply"),
    ("hang", "", "a reasoning item, then sleeps until killed"),
    ("large", "BYTES", "a reply of BYTES bytes (default 1048576)"),
    (
        "large_command",
        "BYTES",
        "a command whose output is BYTES bytes (default 1048576)",
    ),
];

const OPEN: &str = "[[scenario:";

/// Finds every directive in `prompt` and returns their combined steps
/// (with the reply appended when none of them writes text).
pub fn directives_in(prompt: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut found = false;
    let mut rest = prompt;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let end = after
            .find("]]")
            .ok_or_else(|| "unterminated [[scenario:...]] directive in prompt".to_string())?;
        let body = after[..end].trim();
        let (name, arg) = match body.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (body, None),
        };
        steps.extend(builtin(name, arg, prompt)?);
        found = true;
        rest = &after[end + 2..];
    }
    Ok(if found { with_reply(steps) } else { steps })
}

fn num(arg: Option<&str>, default: u64, name: &str) -> Result<u64, String> {
    match arg {
        None | Some("") => Ok(default),
        Some(a) => a
            .parse()
            .map_err(|_| format!("scenario {name}: argument {a:?} is not a number")),
    }
}

fn reply(deltas: usize, delay_ms: u64) -> Step {
    Step::Text {
        text: None,
        deltas,
        delay_ms,
    }
}

fn builtin(name: &str, arg: Option<&str>, prompt: &str) -> Result<Vec<Step>, String> {
    const MIB: u64 = 1024 * 1024;
    let steps = match name {
        "echo" => vec![reply(1, 0)],
        "stream" => vec![reply(5, num(arg, 50, name)?)],
        "reasoning" => vec![Step::Reasoning {
            text: format!("Thinking about: {prompt}"),
            delay_ms: 0,
        }],
        "command" => vec![Step::Command {
            command: "echo hi".into(),
            output: "hi\n".into(),
            exit_code: 0,
            delay_ms: 0,
        }],
        "command_fail" => vec![Step::Command {
            command: "false".into(),
            output: String::new(),
            exit_code: 1,
            delay_ms: 0,
        }],
        "env" => {
            let name = arg.filter(|a| !a.is_empty()).unwrap_or("HOME");
            let value = std::env::var(name).ok();
            vec![Step::Command {
                command: format!("printenv {name}"),
                exit_code: if value.is_some() { 0 } else { 1 },
                output: value.map(|v| format!("{v}\n")).unwrap_or_default(),
                delay_ms: 0,
            }]
        }
        "file_change" => vec![Step::FileChange {
            path: arg
                .filter(|a| !a.is_empty())
                .unwrap_or("rt-fake-notes.txt")
                .to_string(),
            content: Some(format!("{prompt}\n")),
        }],
        "mcp" => {
            let (server, tool) = match arg.filter(|a| !a.is_empty()) {
                Some(a) => match a.split_once('/') {
                    Some((s, t)) => (Some(s.to_string()), t.to_string()),
                    None => (Some(a.to_string()), "echo".to_string()),
                },
                None => (None, "echo".to_string()),
            };
            vec![Step::McpCall {
                server,
                tool,
                arguments: json!({ "text": prompt }),
            }]
        }
        "tool" => vec![Step::Tool {
            name: "Read".into(),
            input: json!({ "file_path": "README.md" }),
            output: "1\t# fake file\n".into(),
            is_error: false,
        }],
        "todo" => vec![Step::Todo {
            items: vec![
                ("Read the code".into(), true),
                ("Write the fix".into(), false),
            ],
        }],
        "subagent" => vec![Step::Subagent(Subagent {
            description: "Inspect files".into(),
            prompt: format!("Look into: {prompt}"),
            subagent_type: "general-purpose".into(),
            steps: vec![Step::Command {
                command: "ls".into(),
                output: "README.md\n".into(),
                exit_code: 0,
                delay_ms: 0,
            }],
            result: "The sub-agent found README.md".into(),
        })],
        "no_usage" => vec![Step::Usage(UsageSetting::Omit)],
        "fail" => vec![Step::Fail {
            message: arg
                .filter(|a| !a.is_empty())
                .unwrap_or("scripted failure")
                .to_string(),
        }],
        "crash" => vec![
            Step::Reasoning {
                text: "About to crash".into(),
                delay_ms: 0,
            },
            Step::Crash {
                after_ms: num(arg, 100, name)?,
                exit_code: 101,
            },
        ],
        "stderr" => vec![Step::Stderr(
            "rt-fake noise 1\nrt-fake noise 2\nrt-fake noise 3".into(),
        )],
        "malformed" => vec![Step::Malformed("this line is not JSON {".into())],
        "hang" => vec![
            Step::Reasoning {
                text: "About to hang".into(),
                delay_ms: 0,
            },
            Step::Hang,
        ],
        "large" | "large_command" => vec![Step::Large {
            bytes: usize::try_from(num(arg, MIB, name)?).unwrap_or(usize::MAX),
            as_command: name == "large_command",
        }],
        other => {
            let known: Vec<&str> = DIRECTIVES.iter().map(|d| d.0).collect();
            return Err(format!(
                "unknown scenario {other:?} in prompt; known scenarios: {}",
                known.join(", ")
            ));
        }
    };
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_combines_directives() {
        assert!(directives_in("plain prompt").unwrap().is_empty());
        let s = directives_in("[[scenario:reasoning]] and [[scenario:command]]").unwrap();
        assert_eq!(s.len(), 3, "{s:?}");
        assert!(matches!(s[2], Step::Text { text: None, .. }));
        let s = directives_in("[[scenario:fail:nope]]").unwrap();
        assert_eq!(
            s,
            vec![Step::Fail {
                message: "nope".into()
            }]
        );
        assert!(
            directives_in("[[scenario:bogus]]")
                .unwrap_err()
                .contains("known")
        );
        assert!(directives_in("[[scenario:large:abc]]").is_err());
        for (name, _, _) in DIRECTIVES {
            assert!(
                directives_in(&format!("[[scenario:{name}]]")).is_ok(),
                "{name}"
            );
        }
    }
}
