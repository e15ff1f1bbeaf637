//! `rt-two` argv, mirroring Claude Code 2.1.332 (`claude --help`).
//!
//! Claude Code parses with commander.js, whose behaviour differs from clap in
//! ways adapters trip over, so this copies it: unknown options exit 1,
//! `--opt=value` and `--opt value` both work, optional-value options
//! (`--resume [value]`) take the next word unless it starts with `-`, and
//! variadic options (`--mcp-config <configs...>`) swallow every following
//! word up to the next option, including a prompt placed after them.

use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Flag,
    Value,
    Optional,
    Variadic,
}

struct Spec {
    long: &'static str,
    aliases: &'static [&'static str],
    short: Option<char>,
    kind: Kind,
    /// How commander names the option in errors, e.g. `--model <model>`.
    display: &'static str,
    choices: &'static [&'static str],
}

const fn spec(long: &'static str, short: Option<char>, kind: Kind, display: &'static str) -> Spec {
    Spec {
        long,
        aliases: &[],
        short,
        kind,
        display,
        choices: &[],
    }
}

const PERMISSION_MODES: &[&str] = &[
    "acceptEdits",
    "auto",
    "bypassPermissions",
    "default",
    "dontAsk",
    "plan",
];

static SPECS: &[Spec] = &[
    spec("print", Some('p'), Kind::Flag, "-p, --print"),
    spec("verbose", None, Kind::Flag, "--verbose"),
    spec("help", Some('h'), Kind::Flag, "-h, --help"),
    spec("version", Some('v'), Kind::Flag, "-v, --version"),
    Spec {
        choices: &["text", "json", "stream-json"],
        ..spec(
            "output-format",
            None,
            Kind::Value,
            "--output-format <format>",
        )
    },
    Spec {
        choices: &["text", "stream-json"],
        ..spec("input-format", None, Kind::Value, "--input-format <format>")
    },
    spec("model", None, Kind::Value, "--model <model>"),
    spec("resume", Some('r'), Kind::Optional, "-r, --resume [value]"),
    spec("continue", Some('c'), Kind::Flag, "-c, --continue"),
    spec("session-id", None, Kind::Value, "--session-id <uuid>"),
    spec("fork-session", None, Kind::Flag, "--fork-session"),
    spec(
        "append-system-prompt",
        None,
        Kind::Value,
        "--append-system-prompt <prompt>",
    ),
    spec(
        "system-prompt",
        None,
        Kind::Value,
        "--system-prompt <prompt>",
    ),
    spec(
        "mcp-config",
        None,
        Kind::Variadic,
        "--mcp-config <configs...>",
    ),
    spec("strict-mcp-config", None, Kind::Flag, "--strict-mcp-config"),
    Spec {
        choices: PERMISSION_MODES,
        ..spec(
            "permission-mode",
            None,
            Kind::Value,
            "--permission-mode <mode>",
        )
    },
    spec(
        "dangerously-skip-permissions",
        None,
        Kind::Flag,
        "--dangerously-skip-permissions",
    ),
    spec(
        "allow-dangerously-skip-permissions",
        None,
        Kind::Flag,
        "--allow-dangerously-skip-permissions",
    ),
    spec(
        "include-partial-messages",
        None,
        Kind::Flag,
        "--include-partial-messages",
    ),
    spec(
        "include-hook-events",
        None,
        Kind::Flag,
        "--include-hook-events",
    ),
    spec(
        "replay-user-messages",
        None,
        Kind::Flag,
        "--replay-user-messages",
    ),
    spec("max-turns", None, Kind::Value, "--max-turns <turns>"),
    Spec {
        aliases: &["allowed-tools"],
        ..spec(
            "allowedTools",
            None,
            Kind::Variadic,
            "--allowedTools, --allowed-tools <tools...>",
        )
    },
    Spec {
        aliases: &["disallowed-tools"],
        ..spec(
            "disallowedTools",
            None,
            Kind::Variadic,
            "--disallowedTools, --disallowed-tools <tools...>",
        )
    },
    spec("tools", None, Kind::Variadic, "--tools <tools...>"),
    spec(
        "add-dir",
        None,
        Kind::Variadic,
        "--add-dir <directories...>",
    ),
    spec("settings", None, Kind::Value, "--settings <file-or-json>"),
    spec(
        "setting-sources",
        None,
        Kind::Value,
        "--setting-sources <sources>",
    ),
    spec(
        "fallback-model",
        None,
        Kind::Value,
        "--fallback-model <model>",
    ),
    spec("effort", None, Kind::Value, "--effort <level>"),
    spec("agents", None, Kind::Value, "--agents <json>"),
    spec("agent", None, Kind::Value, "--agent <agent>"),
    spec("json-schema", None, Kind::Value, "--json-schema <schema>"),
    spec(
        "max-budget-usd",
        None,
        Kind::Value,
        "--max-budget-usd <amount>",
    ),
    spec(
        "no-session-persistence",
        None,
        Kind::Flag,
        "--no-session-persistence",
    ),
    spec(
        "disable-slash-commands",
        None,
        Kind::Flag,
        "--disable-slash-commands",
    ),
    spec("bare", None, Kind::Flag, "--bare"),
    spec("debug", Some('d'), Kind::Optional, "-d, --debug [filter]"),
    spec("name", Some('n'), Kind::Value, "-n, --name <name>"),
    spec("betas", None, Kind::Variadic, "--betas <betas...>"),
];

/// Parsed options keyed by the canonical long name.
#[derive(Debug, Default, Clone)]
pub struct Args {
    values: HashMap<&'static str, Vec<String>>,
    flags: Vec<&'static str>,
    pub prompt: Option<String>,
}

impl Args {
    pub fn flag(&self, name: &str) -> bool {
        self.flags.contains(&name) || self.values.contains_key(name)
    }

    /// Last value given for an option (commander keeps the last one).
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    pub fn values(&self, name: &str) -> &[String] {
        self.values.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Parses argv (without the program name). Errors carry commander's text.
pub fn parse(argv: &[String]) -> Result<Args, String> {
    let mut args = Args::default();
    let mut i = 0;
    let mut only_positional = false;
    while i < argv.len() {
        let word = &argv[i];
        i += 1;
        if only_positional || !word.starts_with('-') || word == "-" {
            positional(&mut args, word)?;
            continue;
        }
        if word == "--" {
            only_positional = true;
            continue;
        }
        let (name, inline) = match word.strip_prefix("--") {
            Some(long) => match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            },
            None => (word[1..].to_string(), None),
        };
        let found = if word.starts_with("--") {
            SPECS
                .iter()
                .find(|s| s.long == name || s.aliases.contains(&name.as_str()))
        } else {
            let mut chars = name.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => SPECS.iter().find(|s| s.short == Some(c)),
                _ => None,
            }
        };
        let spec = found.ok_or_else(|| format!("error: unknown option '{word}'"))?;
        match spec.kind {
            Kind::Flag => {
                if inline.is_some() {
                    return Err(format!("error: unknown option '{word}'"));
                }
                args.flags.push(spec.long);
            }
            Kind::Value => {
                let value = match inline {
                    Some(v) => v,
                    None if i < argv.len() => {
                        i += 1;
                        argv[i - 1].clone()
                    }
                    None => {
                        return Err(format!("error: option '{}' argument missing", spec.display));
                    }
                };
                check_choice(spec, &value)?;
                args.values.entry(spec.long).or_default().push(value);
            }
            Kind::Optional => {
                let value = match inline {
                    Some(v) => Some(v),
                    None if i < argv.len() && !argv[i].starts_with('-') => {
                        i += 1;
                        Some(argv[i - 1].clone())
                    }
                    None => None,
                };
                match value {
                    Some(v) => args.values.entry(spec.long).or_default().push(v),
                    None => args.flags.push(spec.long),
                }
            }
            Kind::Variadic => {
                let list = args.values.entry(spec.long).or_default();
                let before = list.len();
                if let Some(v) = inline {
                    list.push(v);
                }
                while i < argv.len() && !argv[i].starts_with('-') {
                    list.push(argv[i].clone());
                    i += 1;
                }
                if list.len() == before {
                    return Err(format!("error: option '{}' argument missing", spec.display));
                }
            }
        }
    }
    Ok(args)
}

fn positional(args: &mut Args, word: &str) -> Result<(), String> {
    if args.prompt.is_some() {
        return Err(format!(
            "error: too many arguments. Expected 1 argument but got extra '{word}'."
        ));
    }
    args.prompt = Some(word.to_string());
    Ok(())
}

fn check_choice(spec: &Spec, value: &str) -> Result<(), String> {
    if spec.choices.is_empty() || spec.choices.contains(&value) {
        return Ok(());
    }
    Err(format!(
        "error: option '{}' argument '{value}' is invalid. Allowed choices are {}.",
        spec.display,
        spec.choices.join(", ")
    ))
}

pub const HELP: &str = "Usage: rt-two [options] [prompt]

Scripted stand-in for Claude Code 2.1.332. Only print mode (-p) is implemented.

Arguments:
  prompt                                Your prompt (or stdin; with
                                        --input-format stream-json, user lines on stdin)

Options:
  -p, --print                           Print response and exit
  --output-format <format>              \"text\" (default), \"json\" or \"stream-json\"
  --input-format <format>               \"text\" (default) or \"stream-json\"
  --verbose                             Required with --output-format stream-json
  --include-partial-messages            Emit stream_event lines (message deltas)
  --model <model>                       Model name reported in the output
  -r, --resume [value]                  Resume a conversation by session ID
  -c, --continue                        Continue the most recent conversation
  --session-id <uuid>                   Use a specific session ID
  --fork-session                        With --resume: continue under a new session ID
  --append-system-prompt <prompt>       Accepted (recorded nowhere)
  --system-prompt <prompt>              Accepted (recorded nowhere)
  --mcp-config <configs...>             MCP servers, JSON strings or files (variadic!)
  --strict-mcp-config                   Accepted
  --permission-mode <mode>              acceptEdits, auto, bypassPermissions, default,
                                        dontAsk, plan
  --dangerously-skip-permissions        As bypassPermissions
  --max-turns <turns>                   Stop with error_max_turns after N model turns
  --allowedTools, --disallowedTools, --tools, --add-dir, --settings,
  --setting-sources, --fallback-model, --effort, --agents, --agent,
  --json-schema, --max-budget-usd, --no-session-persistence, --bare,
  --include-hook-events, --replay-user-messages, -d, -n, --betas
                                        Accepted, ignored
  -v, --version                         Output the version number
  -h, --help                            Display help for command

Scenarios: put [[scenario:NAME]] in the prompt or set RT_FAKE_SCRIPT;
see fake-runtimes/README.md.";

#[cfg(test)]
mod tests {
    use super::*;

    fn p(words: &[&str]) -> Result<Args, String> {
        parse(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn commander_semantics() {
        let a = p(&[
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--resume=abc",
        ])
        .unwrap();
        assert_eq!(a.prompt.as_deref(), Some("hi"));
        assert_eq!(a.value("resume"), Some("abc"));
        assert!(a.flag("verbose"));
        let a = p(&["-p", "--mcp-config", "{}", "prompt"]).unwrap();
        assert_eq!(a.values("mcp-config"), ["{}", "prompt"]);
        assert!(a.prompt.is_none());
        assert_eq!(
            p(&["--bogus"]).unwrap_err(),
            "error: unknown option '--bogus'"
        );
        assert!(
            p(&["--output-format", "yaml"])
                .unwrap_err()
                .contains("Allowed choices")
        );
        assert!(p(&["--model"]).unwrap_err().contains("argument missing"));
        let a = p(&["-r", "-p"]).unwrap();
        assert!(a.flag("resume") && a.value("resume").is_none());
    }
}
