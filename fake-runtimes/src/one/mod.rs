//! `rt-one`: the Codex CLI stand-in.

pub mod argv;
pub mod config;
pub mod events;
mod exec;
mod turn;

use argv::{Cli, Command, LoginAction};
use clap::Parser;

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version to stdout (exit 0) and errors to stderr (exit 2), like codex.
            let _ = err.print();
            return err.exit_code();
        }
    };
    match cli.command {
        Some(Command::Exec(args)) => exec::run(*args),
        Some(Command::Login(login)) => match login.action {
            Some(LoginAction::Status) | None => login_status(),
        },
        None => {
            crate::out::stderr_line(
                "rt-one: the interactive TUI is not part of the fake; use `rt-one exec --json PROMPT`",
            );
            2
        }
    }
}

/// Reports whether an API key variable is set, never its value.
fn login_status() -> i32 {
    match crate::env::key_present(&["CODEX_API_KEY", "OPENAI_API_KEY"]) {
        Some(name) => {
            crate::out::stderr_line(&format!("Logged in using an API key from {name}"));
            0
        }
        None => {
            crate::out::stderr_line("Not logged in");
            1
        }
    }
}
