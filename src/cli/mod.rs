//! The `svc` command line: `serve`, `check-config`, `endpoints` and `errors`; the local
//! engine's `provider engine` commands (`engine.rs`) and the `sandbox` commands on its
//! client (`sandbox.rs`, with `exec.rs`, `cp.rs`, `terminal.rs`).

mod cp;
mod e2b;
mod engine;
mod exec;
mod sandbox;
mod say;
mod terminal;

use crate::server::config::{LoadOptions, Settings, parse_group_name};
use crate::server::endpoints::Group;
use crate::server::{self, AppState, Listeners};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// In-sandbox agent server: one policy-guarded HTTP API for coding agents, files,
/// processes and terminals.
#[derive(Parser)]
#[command(name = "svc", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server. Prints `listening on http://HOST:PORT` on stdout when ready; logs go to
    /// stderr (filter with RUST_LOG). Stops cleanly on SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Validate the configuration (template and SVC_* variables) and print its warnings.
    CheckConfig(ConfigArgs),
    /// Print the endpoint table.
    Endpoints {
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Print the error tables (server and engine).
    Errors {
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Print the OpenAPI 3.1 document of the server's endpoints (docs/openapi.json), or with
    /// --engine the local engine's (docs/engine-openapi.json).
    Openapi {
        /// Write it to FILE instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// The local engine's routes instead of the server's.
        #[arg(long)]
        engine: bool,
    },
    /// Providers of sandboxes: `svc provider engine serve|status|stop` runs the local
    /// engine.
    Provider(engine::ProviderArgs),
    /// Sandboxes through the local engine (started on demand): create, list, info, kill,
    /// pause, resume, exec, cp, terminal.
    Sandbox(sandbox::SandboxArgs),
    /// The E2B-compatible front: `eval "$(svc e2b env)"` points the unchanged E2B SDKs at
    /// the local engine.
    E2b(e2b::E2bArgs),
}

#[derive(clap::Args)]
struct ConfigArgs {
    /// The template.yaml to load (default: $SVC_CONFIG, else none).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Use the embedded demo template (agents group on, one sample command).
    #[arg(long, conflicts_with = "config")]
    demo: bool,
    /// Switch a group on as the launching program's choice (rule `code:enable_group:<g>`).
    #[arg(long = "enable-group", value_name = "GROUP", value_parser = parse_group_arg)]
    enable_groups: Vec<Group>,
    /// Switch a group off as the launching program's choice (rule `code:enable_group:<g>`).
    #[arg(long = "disable-group", value_name = "GROUP", value_parser = parse_group_arg)]
    disable_groups: Vec<Group>,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// API port; 0 picks a free port.
    #[arg(long, default_value_t = 9000)]
    port: u16,
    /// Terminal WebSocket port; 0 picks a free port [default: 9001, or 0 with --port 0].
    #[arg(long)]
    terminal_port: Option<u16>,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Markdown,
    Json,
}

fn parse_group_arg(name: &str) -> Result<Group, String> {
    parse_group_name(name)
}

/// Parses the command line and runs the command; the process exits with the code returned.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::CheckConfig(args) => check_config(&args),
        Command::Endpoints { format } => {
            print_endpoints(format);
            ExitCode::SUCCESS
        }
        Command::Errors { format } => {
            print_errors(format);
            ExitCode::SUCCESS
        }
        Command::Openapi { out, engine } => {
            let text = if engine {
                crate::engine::openapi::document_json()
            } else {
                crate::server::openapi::document_json()
            };
            crate::server::openapi::main(text, out.as_deref())
        }
        Command::Provider(args) => engine::main(args),
        Command::Sandbox(args) => sandbox::main(args),
        Command::E2b(args) => e2b::main(args),
    }
}

fn load(args: &ConfigArgs) -> Result<Settings, ExitCode> {
    let mut code_groups: Vec<(Group, bool)> =
        args.enable_groups.iter().map(|g| (*g, true)).collect();
    code_groups.extend(args.disable_groups.iter().map(|g| (*g, false)));
    let options = LoadOptions {
        config_path: args.config.clone(),
        demo: args.demo,
        code_groups,
    };
    Settings::load(&options).map_err(|e| {
        eprintln!("svc: configuration error: {e}");
        ExitCode::from(2)
    })
}

fn check_config(args: &ConfigArgs) -> ExitCode {
    match load(args) {
        Ok(settings) => {
            println!("configuration ok (revision {})", settings.revision);
            for warning in &settings.warnings {
                println!("warning: {warning}");
            }
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("svc=info,warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

/// Raises the soft open-files limit to the hard one, for the connections, children and
/// sandboxes a long-running process holds; its children get the old one back.
pub(crate) fn raise_open_files() {
    match crate::services::open_files::raise() {
        Ok(r) if r.after != r.before => {
            tracing::debug!("open-files limit raised from {} to {}", r.before, r.after);
        }
        Ok(_) => {}
        // Not fatal: the process still serves, only fewer at once.
        Err(e) => eprintln!("svc: warning: cannot raise the open-files limit: {e}"),
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    init_logging();
    let settings = match load(&args.config) {
        Ok(s) => s,
        Err(code) => return code,
    };
    for warning in &settings.warnings {
        tracing::warn!("{warning}");
    }
    // Before any thread or child exists.
    raise_open_files();
    for warning in server::children::guard_children(&settings) {
        tracing::warn!("{warning}");
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("svc: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let terminal_port = args
        .terminal_port
        .unwrap_or(if args.port == 0 { 0 } else { 9001 });
    runtime.block_on(async move {
        let state = match AppState::new(settings) {
            Ok(state) => state,
            Err(e) => {
                eprintln!("svc: error: {e}");
                return ExitCode::from(2);
            }
        };
        let listeners = match Listeners::bind(&args.host, args.port, terminal_port).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("svc: error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let (main, terminal) = match (listeners.main_addr(), listeners.terminal_addr()) {
            (Ok(m), Ok(t)) => (m, t),
            _ => {
                eprintln!("svc: error: cannot read the bound addresses");
                return ExitCode::FAILURE;
            }
        };
        let stop = match server::StopSignal::install() {
            Ok(stop) => stop,
            Err(e) => {
                eprintln!("svc: error: cannot install the SIGINT/SIGTERM handlers: {e}");
                return ExitCode::FAILURE;
            }
        };
        tracing::info!(terminal = %server::url_of(terminal), "terminal WebSocket listening");
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "listening on {}", server::url_of(main));
        let _ = stdout.flush();
        match server::run(state, listeners, stop.wait()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("svc: error: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

fn print_endpoints(format: Format) {
    match format {
        Format::Markdown => print!("{}", crate::server::docs::endpoints_markdown()),
        Format::Json => {
            let json = serde_json::to_string_pretty(crate::server::endpoints::ENDPOINTS)
                .unwrap_or_default();
            println!("{json}");
        }
        Format::Table => {
            for e in crate::server::endpoints::ENDPOINTS {
                println!(
                    "{:<40} {:<6} {:<12} {}",
                    e.id,
                    e.method.as_str(),
                    e.group.name(),
                    e.path
                );
            }
        }
    }
}

fn print_errors(format: Format) {
    let server = crate::error::server::Code::docs();
    let engine = crate::error::engine::Code::docs();
    match format {
        Format::Markdown => print!("{}", crate::server::error_docs::errors_markdown()),
        Format::Json => {
            let json = serde_json::to_string_pretty(&serde_json::json!({
                "server": server,
                "engine": engine,
            }))
            .unwrap_or_default();
            println!("{json}");
        }
        Format::Table => {
            for (table, rows) in [("server", server), ("engine", engine)] {
                for row in rows {
                    println!(
                        "{table:<7} {:<38} {:<4} {}",
                        row.code, row.status, row.class
                    );
                }
            }
        }
    }
}
