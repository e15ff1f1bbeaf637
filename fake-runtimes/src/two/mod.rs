//! `rt-two`: the Claude Code stand-in (print mode only).

pub mod argv;
pub mod events;
mod finish;
mod mcp_config;
mod session;
mod tools;
mod turn;

use crate::clock::Clock;
use crate::out::{Out, raw_stdout, stderr_line};
use crate::script::{ScriptFile, steps_for_turn};
use crate::store::{Store, Thread, Turn};
use serde_json::Value;
use std::io::{BufRead, Read};
use turn::{Settings, TurnReport, TurnRunner};

/// Version reported by `--version` and the init line.
pub const VERSION: &str = "2.1.332-fake";
const DEFAULT_MODEL: &str = "claude-opus-4-8";

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args = match argv::parse(&argv) {
        Ok(a) => a,
        Err(e) => {
            // commander exits 1 on usage errors, not 2.
            stderr_line(&e);
            return 1;
        }
    };
    if args.flag("help") {
        raw_stdout(argv::HELP);
        return 0;
    }
    if args.flag("version") {
        raw_stdout(&format!("{VERSION} (Claude Code)"));
        return 0;
    }
    match run(&args) {
        Ok(code) => code,
        Err(message) => {
            stderr_line(&message);
            1
        }
    }
}

fn run(args: &argv::Args) -> Result<i32, String> {
    if !args.flag("print") {
        return Err("rt-two: interactive mode is not part of the fake; pass -p/--print".into());
    }
    let output = args.value("output-format").unwrap_or("text");
    let input = args.value("input-format").unwrap_or("text");
    if output == "stream-json" && !args.flag("verbose") {
        return Err(
            "Error: When using --print, --output-format=stream-json requires --verbose".into(),
        );
    }
    if input == "stream-json" && output != "stream-json" {
        return Err("Error: --input-format=stream-json requires output-format=stream-json.".into());
    }
    let cwd = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("Error: cannot read current directory: {e}"))?;
    let mcp = mcp_config::load(args.values("mcp-config"), &cwd)?;
    let permission_mode = if args.flag("dangerously-skip-permissions") {
        "bypassPermissions"
    } else {
        args.value("permission-mode").unwrap_or("default")
    };
    if permission_mode == "bypassPermissions"
        && running_as_root()
        && !crate::env::flag("IS_SANDBOX")
    {
        return Err("--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons".into());
    }
    let max_turns =
        match args.value("max-turns") {
            None => None,
            Some(v) => Some(v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("Error: --max-turns must be a positive integer, got {v:?}")
            })?),
        };
    let store = Store::new(crate::env::state_dir(&[("HOME", ".rt-two")]), "rt-two");
    let model = args.value("model").unwrap_or(DEFAULT_MODEL).to_string();
    let cwd_text = cwd.display().to_string();
    let script = ScriptFile::from_env().map_err(|e| format!("rt-two: {e}"))?;
    let mut out = if output == "stream-json" {
        Out::streaming()
    } else {
        Out::collecting()
    };

    // Read a text prompt first so a missing prompt leaves no empty session behind.
    let text_prompt = match (input, &args.prompt) {
        ("stream-json", _) => None,
        (_, Some(p)) => Some(p.clone()),
        (_, None) => Some(read_stdin_prompt()?),
    };
    let resolved = session::resolve(args, &store, &model, &cwd_text)?;
    let mut thread = match resolved {
        Ok(t) => t,
        Err(nf) => {
            let settings = settings(String::new(), &model, &cwd, &mcp, args, max_turns);
            finish::resume_not_found(&mut out, &settings, &nf.requested, &nf.message);
            finalize(&out, output, args.flag("verbose"));
            stderr_line(&nf.message);
            return Ok(1);
        }
    };
    let s = settings(thread.id.clone(), &model, &cwd, &mcp, args, max_turns);
    let mut ctx = Ctx {
        out: &mut out,
        s: &s,
        store: &store,
        script: script.as_ref(),
        permission_mode,
        mcp_status: mcp
            .iter()
            .map(|m| (m.name.clone(), mcp_config::status(m)))
            .collect(),
    };
    let mut last = None;
    if input == "stream-json" {
        for line in std::io::stdin().lock().lines() {
            let line = line.map_err(|e| format!("Error reading stdin: {e}"))?;
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(&line)
                .map_err(|e| format!("Error parsing streaming input line: {line}: {e}"))?;
            if let Some(prompt) = user_text(&value) {
                last = Some(ctx.turn(&mut thread, prompt)?);
            }
        }
    } else if let Some(prompt) = text_prompt {
        last = Some(ctx.turn(&mut thread, prompt)?);
    }
    finalize(&out, output, args.flag("verbose"));
    Ok(i32::from(last.is_some_and(|r| r.is_error)))
}

fn settings<'a>(
    session_id: String,
    model: &str,
    cwd: &std::path::Path,
    mcp: &'a [crate::mcp::McpServer],
    args: &argv::Args,
    max_turns: Option<u64>,
) -> Settings<'a> {
    Settings {
        session_id,
        model: model.to_string(),
        cwd: cwd.to_path_buf(),
        mcp,
        partial: args.flag("include-partial-messages"),
        max_turns,
        clock: Clock::from_env(),
    }
}

struct Ctx<'a, 'b> {
    out: &'b mut Out,
    s: &'b Settings<'a>,
    store: &'b Store,
    script: Option<&'b ScriptFile>,
    permission_mode: &'b str,
    mcp_status: Vec<(String, &'static str)>,
}

impl Ctx<'_, '_> {
    /// One user message: init line, the scripted turn, the result line.
    fn turn(&mut self, thread: &mut Thread, prompt: String) -> Result<TurnReport, String> {
        let turn_no = thread.next_turn();
        let history: String = thread
            .turns
            .iter()
            .map(|t| format!("{}{}", t.prompt, t.reply.as_deref().unwrap_or("")))
            .collect();
        let compact = prompt.trim() == "/compact";
        let steps = if compact {
            Vec::new()
        } else {
            steps_for_turn(&prompt, turn_no, self.script)
                .map_err(|e| format!("rt-two: {e}"))?
                .0
        };
        let home = crate::env::var("HOME").unwrap_or_else(|| "/root".into());
        let init = events::InitInfo {
            cwd: &thread.cwd,
            session_id: &thread.id,
            mcp_servers: self.mcp_status.clone(),
            model: &self.s.model,
            permission_mode: self.permission_mode,
            api_key_source: crate::env::key_present(&["ANTHROPIC_API_KEY"]).unwrap_or("none"),
            uuid: crate::ids::uuid(4, &[&thread.id, &turn_no.to_string(), "init"]),
            memory_dir: format!(
                "{home}/.claude/projects/{}/memory/",
                self.s.cwd.display().to_string().replace('/', "-")
            ),
        };
        self.out.json(events::init(&init));
        thread.turns.push(Turn {
            prompt: prompt.clone(),
            reply: None,
        });
        self.store.save(thread)?;

        let mut runner = TurnRunner::new(self.out, self.s, turn_no, prompt, &history);
        let report = if compact {
            let pre_tokens = crate::script::estimate_tokens(&history);
            runner.compact(turn_no - 1, pre_tokens)
        } else {
            runner.run(steps)
        };
        thread.usage.add(report.tokens);
        if let Some(t) = thread.turns.last_mut() {
            t.reply = report.reply.clone();
        }
        self.store.save(thread)?;
        Ok(report)
    }
}

/// Text of a stream-json `user` line; other line types are ignored.
fn user_text(v: &Value) -> Option<String> {
    if v.get("type").and_then(Value::as_str) != Some("user") {
        return None;
    }
    match v.pointer("/message/content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

fn read_stdin_prompt() -> Result<String, String> {
    let mut buf = String::new();
    std::io::stdin()
        .read_to_string(&mut buf)
        .map_err(|e| format!("Error reading stdin: {e}"))?;
    if buf.trim().is_empty() {
        return Err("Error: Input must be provided either through stdin or as a prompt argument when using --print".into());
    }
    Ok(buf.trim_end_matches(['\n', '\r']).to_string())
}

/// `text` prints the last result; `json` the result object (or, with
/// --verbose, every line as one array). stream-json already printed.
fn finalize(out: &Out, output: &str, verbose: bool) {
    let lines = out.collected();
    let result = lines
        .iter()
        .rev()
        .find(|l| l.get("type").and_then(Value::as_str) == Some("result"));
    match output {
        "text" => {
            let text = result.and_then(|r| r.get("result").or_else(|| r.pointer("/errors/0")));
            raw_stdout(text.and_then(Value::as_str).unwrap_or(""));
        }
        "json" if verbose => raw_stdout(&Value::Array(lines.to_vec()).to_string()),
        "json" => raw_stdout(&result.cloned().unwrap_or(Value::Null).to_string()),
        _ => {}
    }
}

/// Claude Code refuses to skip permissions as root; so does the fake.
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}
