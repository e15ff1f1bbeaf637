//! `svc e2b env`: what an E2B program needs to reach this machine's engine instead of
//! E2B's cloud, as three `export` lines for `eval "$(svc e2b env)"`. Starts an engine
//! when none runs.

use super::engine::runtime;
use crate::client::Client;
use clap::{Args, Subcommand};
use std::process::ExitCode;

#[derive(Args)]
pub struct E2bArgs {
    #[command(subcommand)]
    command: E2bCommand,
}

#[derive(Subcommand)]
enum E2bCommand {
    /// Print `export E2B_API_URL=…`, `E2B_SANDBOX_URL=…` and `E2B_API_KEY=…` for the
    /// running engine's E2B-compatible front (starting an engine when none runs).
    Env,
}

pub fn main(args: E2bArgs) -> ExitCode {
    let E2bCommand::Env = args.command;
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    runtime.block_on(env())
}

async fn env() -> ExitCode {
    let client = match Client::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("svc: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = client.health().await {
        eprintln!("svc: error: {e}");
        return ExitCode::FAILURE;
    }
    let Some(descriptor) = client.descriptor() else {
        eprintln!("svc: error: the engine started but left no descriptor");
        return ExitCode::FAILURE;
    };
    let (Some(port), Some(key)) = (descriptor.e2b_port, &descriptor.e2b_api_key) else {
        eprintln!(
            "svc: error: the running engine (pid {}) has no E2B front: it is older than this \
             svc; stop it (`svc provider engine stop`) and run this again",
            descriptor.pid
        );
        return ExitCode::FAILURE;
    };
    let url = format!("http://127.0.0.1:{port}");
    println!("export E2B_API_URL={url}");
    println!("export E2B_SANDBOX_URL={url}");
    println!("export E2B_API_KEY={key}");
    ExitCode::SUCCESS
}
