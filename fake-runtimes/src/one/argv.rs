//! `rt-one` argv, mirroring `codex` 0.171.0 (`codex exec --help`).
//!
//! Codex parses with clap, so using clap here gives the same error text and
//! exit code 2 for unknown flags. Flags that the fake does not act on are
//! still accepted so adapters can pass what they pass to the real CLI.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub const VERSION: &str = "0.171.0-fake";

#[derive(Parser, Debug)]
#[command(
    name = "rt-one",
    version = VERSION,
    about = "Scripted stand-in for the Codex CLI (codex-cli 0.171.0). Only `exec` is implemented.",
    after_help = "Scenarios: put [[scenario:NAME]] in the prompt or set RT_FAKE_SCRIPT; see fake-runtimes/README.md."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run Codex non-interactively
    #[command(version = VERSION)]
    Exec(Box<ExecArgs>),
    /// Manage login (the fake only implements `login status`)
    Login(LoginArgs),
}

#[derive(Args, Debug)]
pub struct LoginArgs {
    #[command(subcommand)]
    pub action: Option<LoginAction>,
}

#[derive(Subcommand, Debug)]
pub enum LoginAction {
    /// Show whether an API key is available (never prints the key)
    Status,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Color {
    Always,
    Never,
    Auto,
}

#[derive(Args, Debug)]
#[command(
    override_usage = "rt-one exec [OPTIONS] [PROMPT]\n       rt-one exec [OPTIONS] <COMMAND> [ARGS]"
)]
pub struct ExecArgs {
    #[command(subcommand)]
    pub action: Option<ExecAction>,

    /// Override a configuration value (`key=value`, value parsed as TOML)
    #[arg(short = 'c', long = "config", value_name = "key=value", global = true)]
    pub config: Vec<String>,

    /// Enable a feature (accepted, ignored)
    #[arg(long = "enable", value_name = "FEATURE", global = true)]
    pub enable: Vec<String>,

    /// Disable a feature (accepted, ignored)
    #[arg(long = "disable", value_name = "FEATURE", global = true)]
    pub disable: Vec<String>,

    /// Accepted, ignored
    #[arg(long, global = true)]
    pub strict_config: bool,

    /// Optional image(s) to attach (accepted, ignored)
    #[arg(short = 'i', long = "image", value_name = "FILE", value_delimiter = ',', num_args = 1..)]
    pub images: Vec<PathBuf>,

    /// Model the agent should use (recorded in the thread file)
    #[arg(short = 'm', long, global = true)]
    pub model: Option<String>,

    /// Accepted, ignored
    #[arg(long)]
    pub oss: bool,

    /// Accepted, ignored
    #[arg(long, value_name = "OSS_PROVIDER")]
    pub local_provider: Option<String>,

    /// Accepted, ignored
    #[arg(short = 'p', long = "profile", value_name = "CONFIG_PROFILE_V2")]
    pub profile: Option<String>,

    /// Sandbox policy (accepted, ignored)
    #[arg(short = 's', long = "sandbox", value_name = "SANDBOX_MODE")]
    pub sandbox: Option<SandboxMode>,

    /// Accepted, ignored
    #[arg(long)]
    pub approve_for_me: bool,

    /// Accepted, ignored
    #[arg(long, global = true)]
    pub dangerously_bypass_approvals_and_sandbox: bool,

    /// Accepted, ignored
    #[arg(long, global = true)]
    pub dangerously_bypass_hook_trust: bool,

    /// Working root: file changes are written relative to it
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,

    /// Accepted, ignored
    #[arg(long, global = true)]
    pub worktree: bool,

    /// Accepted, ignored
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,

    /// Allow running outside a Git repository
    #[arg(long, global = true)]
    pub skip_git_repo_check: bool,

    /// Accepted, ignored (the fake always writes its thread file)
    #[arg(long, global = true)]
    pub ephemeral: bool,

    /// Accepted, ignored
    #[arg(long, global = true)]
    pub ignore_user_config: bool,

    /// Accepted, ignored
    #[arg(long, global = true)]
    pub ignore_rules: bool,

    /// Accepted, ignored
    #[arg(long, value_name = "FILE", global = true)]
    pub output_schema: Option<PathBuf>,

    /// Accepted, ignored
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,

    /// Print events to stdout as JSONL
    #[arg(long, global = true)]
    pub json: bool,

    /// Write the last agent message to this file
    #[arg(short = 'o', long, value_name = "FILE", global = true)]
    pub output_last_message: Option<PathBuf>,

    /// Prompt; `-` or none reads it from stdin
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum ExecAction {
    /// Resume a previous session by id or pick the most recent with --last
    Resume(ResumeArgs),
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// Thread id printed by `thread.started`
    #[arg(value_name = "SESSION_ID")]
    pub session_id: Option<String>,

    /// Prompt; `-` or none reads it from stdin
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Resume the most recent thread in the store
    #[arg(long)]
    pub last: bool,

    /// Accepted, ignored
    #[arg(long)]
    pub all: bool,
}
