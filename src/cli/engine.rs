//! `svc provider engine serve|status|stop`: the local engine's process (spec 4.4). `serve`
//! runs it in the foreground (the client starts it the same way, detached); `status` and
//! `stop` talk to a running one and never start one.

use super::say::say;
use crate::client::{Client, ClientError, ClientOptions};
use crate::engine::daemon::{self, DaemonOptions, Outcome};
use crate::wire;
use clap::{Args, Subcommand};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// How long `stop` waits for the engine's process to be gone.
const STOP_WAIT: Duration = Duration::from_secs(10);

#[derive(Args)]
pub struct ProviderArgs {
    #[command(subcommand)]
    command: ProviderCommand,
}

#[derive(Subcommand)]
enum ProviderCommand {
    /// The local engine: a loopback daemon serving the provider layer (`svc-engine/1`).
    /// Its state folder is $SVC_STATE_DIR, else $XDG_STATE_HOME/svc, else
    /// ~/.local/state/svc.
    Engine {
        #[command(subcommand)]
        command: EngineCommand,
    },
}

#[derive(Subcommand)]
enum EngineCommand {
    /// Run the engine in the foreground. Prints `engine listening on http://127.0.0.1:PORT
    /// (pid N)` when ready; exits 0 at once when another engine already runs.
    Serve(ServeArgs),
    /// Print the running engine's pid, port, version, uptime and sessions; exits 1 when
    /// none runs (it never starts one).
    Status {
        /// Print the health record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop the running engine and wait until its process is gone; exits 0 also when none
    /// ran.
    Stop,
}

#[derive(Args)]
struct ServeArgs {
    /// Exit after this many seconds without a request.
    #[arg(long, value_name = "SECONDS", default_value_t = daemon::IDLE_TIMEOUT.as_secs())]
    idle_timeout: u64,
    /// The port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The port of the E2B-compatible front on 127.0.0.1 (`svc e2b env`); 0 picks a free
    /// one.
    #[arg(long, default_value_t = 0)]
    e2b_port: u16,
    /// The most connections open at once, counted over both ports together (past it a
    /// connection is answered 503 `E9003` with `Retry-After` and closed). Default: 1,024,
    /// or half the descriptor limit when that is less.
    #[arg(
        long,
        value_name = "N",
        env = "SVC_ENGINE_MAX_CONNECTIONS",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_connections: Option<u32>,
}

pub fn main(args: ProviderArgs) -> ExitCode {
    let ProviderCommand::Engine { command } = args.command;
    match command {
        EngineCommand::Serve(args) => serve(args),
        EngineCommand::Status { json } => run(status(json)),
        EngineCommand::Stop => run(stop()),
    }
}

/// A small runtime for one command: a single thread starts fastest, and a command is one
/// conversation with the engine.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("svc: error: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        })
}

fn run(command: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    match runtime() {
        Ok(rt) => rt.block_on(command),
        Err(code) => code,
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    // Before any thread or child exists: an engine holds three descriptors per sandbox.
    super::raise_open_files();
    // The engine serves many connections at once: a multi-threaded runtime.
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("svc: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = DaemonOptions {
        state_dir: wire::state_dir(),
        port: args.port,
        e2b_port: args.e2b_port,
        idle_timeout: Duration::from_secs(args.idle_timeout),
        session_idle: daemon::SESSION_IDLE,
        max_connections: args.max_connections.map(|n| n as usize),
    };
    let outcome = runtime.block_on(daemon::serve(options, |d| {
        let mut stdout = std::io::stdout();
        let _ = writeln!(
            stdout,
            "engine listening on http://127.0.0.1:{} (pid {})",
            d.port, d.pid
        );
        let _ = stdout.flush();
    }));
    match outcome {
        Ok(Outcome::Stopped { reason }) => {
            say!("engine stopped ({reason})");
            ExitCode::SUCCESS
        }
        Ok(Outcome::AlreadyRunning(Some(d))) => {
            say!(
                "an engine is already running (pid {}, port {})",
                d.pid,
                d.port
            );
            ExitCode::SUCCESS
        }
        Ok(Outcome::AlreadyRunning(None)) => {
            say!("an engine is already running");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("svc: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn client_without_start() -> Result<Client, ExitCode> {
    Client::new(ClientOptions {
        autostart: false,
        ..ClientOptions::default()
    })
    .map_err(|e| {
        eprintln!("svc: error: {e}");
        ExitCode::FAILURE
    })
}

async fn status(json: bool) -> ExitCode {
    let client = match client_without_start() {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.running_engine().await {
        Ok((descriptor, health)) => {
            if json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&health).unwrap_or_default()
                );
            } else {
                say!("engine running");
                say!("  pid       {}", health.pid);
                say!("  port      {}", descriptor.port);
                say!("  version   {}", health.version);
                say!(
                    "  uptime    {}",
                    humantime::format_duration(Duration::from_secs(health.uptime_s))
                );
                say!("  sessions  {}", health.sessions);
                say!("  protocol  {}", health.protocol);
                match &health.isolation {
                    Some(i) if i.available => say!("  isolation namespaces available"),
                    Some(i) => say!(
                        "  isolation unavailable: {}",
                        i.reason.as_deref().unwrap_or("no reason given")
                    ),
                    None => say!("  isolation not reported (an older engine)"),
                }
            }
            ExitCode::SUCCESS
        }
        Err(e @ ClientError::NoEngine(_)) => {
            eprintln!("svc: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("svc: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn stop() -> ExitCode {
    let client = match client_without_start() {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.stop_engine(STOP_WAIT).await {
        Ok(Some(d)) => {
            say!("engine stopped (pid {}, port {})", d.pid, d.port);
            ExitCode::SUCCESS
        }
        Ok(None) => {
            say!("no engine was running");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("svc: error: {e}");
            ExitCode::FAILURE
        }
    }
}
