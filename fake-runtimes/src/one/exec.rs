//! `rt-one exec`: resolve cwd, prompt and thread, then run one turn.

use super::argv::{ExecAction, ExecArgs};
use super::config::from_overrides;
use super::events;
use super::turn::{Outcome, TurnRunner};
use crate::out::{Out, stderr_line};
use crate::script::{ScriptFile, steps_for_turn};
use crate::store::{Store, Thread, Turn};
use std::io::Read;
use std::path::{Path, PathBuf};

const DEFAULT_MODEL: &str = "gpt-5.1-codex";

pub fn run(args: ExecArgs) -> i32 {
    match run_inner(args) {
        Ok(code) => code,
        Err(message) => {
            stderr_line(&message);
            1
        }
    }
}

fn run_inner(args: ExecArgs) -> Result<i32, String> {
    let config = from_overrides(&args.config)?;
    let cwd = working_dir(args.cd.as_deref())?;
    if !args.skip_git_repo_check && !inside_git_repo(&cwd) {
        return Err(
            "Not inside a trusted directory and --skip-git-repo-check was not specified.".into(),
        );
    }
    let store = Store::new(
        crate::env::state_dir(&[("CODEX_HOME", "rt-one"), ("HOME", ".rt-one")]),
        "rt-one",
    );
    let model = args
        .model
        .clone()
        .or(config.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.into());
    let cwd_text = cwd.display().to_string();

    // The thread file is only created once the prompt and scenario are
    // known to be valid, so argv mistakes leave no empty threads behind.
    let (existing, prompt_arg) = match args.action {
        None => (None, args.prompt),
        Some(ExecAction::Resume(r)) => {
            // With --last the first positional is the prompt.
            let (id, prompt) = if r.last {
                (None, r.session_id.or(r.prompt))
            } else {
                (r.session_id, r.prompt)
            };
            (resume(&store, id.as_deref(), r.last)?, prompt)
        }
    };
    let prompt = read_prompt(prompt_arg)?;
    let script = ScriptFile::from_env().map_err(|e| format!("rt-one: {e}"))?;
    let turn_no = existing.as_ref().map_or(1, Thread::next_turn);
    let (steps, _) =
        steps_for_turn(&prompt, turn_no, script.as_ref()).map_err(|e| format!("rt-one: {e}"))?;
    let mut thread = match existing {
        Some(t) => t,
        None => store.create(7, None, &model, &cwd_text)?,
    };

    let mut out = if args.json {
        Out::streaming()
    } else {
        Out::collecting()
    };
    out.json(events::thread_started(&thread.id));

    thread.turns.push(Turn {
        prompt: prompt.clone(),
        reply: None,
    });
    store.save(&thread)?;

    let mut runner = TurnRunner::new(&mut out, &thread, cwd, &config.mcp_servers, prompt, turn_no);
    let outcome = runner.run(steps);
    let last_message = runner.last_message().map(str::to_string);
    let turn_tokens = runner.tokens();
    drop(runner);

    thread.usage.add(turn_tokens);
    if let Some(t) = thread.turns.last_mut() {
        t.reply = last_message.clone();
    }
    store.save(&thread)?;

    if let Some(path) = &args.output_last_message {
        std::fs::write(path, last_message.as_deref().unwrap_or(""))
            .map_err(|e| format!("Failed to write last message file {}: {e}", path.display()))?;
    }
    Ok(match outcome {
        Outcome::Completed { omit_usage } => {
            out.json(events::turn_completed(
                (!omit_usage).then_some(&thread.usage),
            ));
            if !args.json {
                // Human mode prints only the final message on stdout, like codex.
                crate::out::raw_stdout(last_message.as_deref().unwrap_or(""));
            }
            0
        }
        Outcome::Failed(message) => {
            if !args.json {
                stderr_line(&format!("ERROR: {message}"));
            }
            1
        }
    })
}

/// The thread to continue; `None` means start a new one.
fn resume(store: &Store, id: Option<&str>, last: bool) -> Result<Option<Thread>, String> {
    let id = match (id, last) {
        (Some(id), _) => id.to_string(),
        (None, true) => match store.latest() {
            Some(id) => id,
            None => return Ok(None),
        },
        (None, false) => return Err("Error: resume needs a SESSION_ID or --last".into()),
    };
    if let Some(thread) = store.load(&id)? {
        return Ok(Some(thread));
    }
    if crate::ids::looks_like_uuid(&id) {
        return Err(format!(
            "Error: thread/resume: thread/resume failed: no rollout found for thread id {id} (code -32600)"
        ));
    }
    // Codex treats a non-UUID as a thread name and starts a new thread when none matches.
    Ok(None)
}

fn working_dir(cd: Option<&Path>) -> Result<PathBuf, String> {
    let base = std::env::current_dir()
        .map_err(|e| format!("Error: cannot read current directory: {e}"))?;
    let dir = match cd {
        Some(d) => base.join(d),
        None => base,
    };
    std::fs::canonicalize(&dir)
        .map_err(|e| format!("Error: cannot use working directory {}: {e}", dir.display()))
}

fn inside_git_repo(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// `-` or no prompt reads stdin, with codex's messages.
fn read_prompt(arg: Option<String>) -> Result<String, String> {
    match arg {
        Some(p) if p != "-" => Ok(p),
        _ => {
            stderr_line("Reading prompt from stdin...");
            let mut buf = String::new();
            std::io::stdin()
                .read_to_string(&mut buf)
                .map_err(|e| format!("Failed to read prompt from stdin: {e}"))?;
            if buf.trim().is_empty() {
                return Err("No prompt provided via stdin.".into());
            }
            Ok(buf.trim_end_matches(['\n', '\r']).to_string())
        }
    }
}
