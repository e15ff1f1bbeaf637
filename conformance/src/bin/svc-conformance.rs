//! Runs the conformance suite against any svc-compatible server and engine.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory as _, Parser, ValueEnum, error::ErrorKind};
use conformance::Contract;
use conformance::providers::{self, ProviderTarget};
use conformance::report::{self, CaseResult};
use conformance::runner::{self, Options, Reach, Target};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Pretty,
    Json,
}

/// Black-box conformance suite for svc-compatible servers and engines.
#[derive(Debug, Parser)]
#[command(name = "svc-conformance", version)]
struct Cli {
    /// Launch the server per profile: a shell command containing {port}
    /// (replaced by 0); {config} becomes the profile's template.yaml path;
    /// {terminal_port} a free port the runner picks for the terminal listener
    /// (terminal cases skip without it).
    #[arg(long, value_name = "CMD", conflicts_with = "base_url")]
    server_cmd: Option<String>,
    /// Test an already running server; only profile-free cases run.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The terminal listener of the --base-url server (`pty_connect`).
    #[arg(long, value_name = "URL", requires = "base_url")]
    terminal_url: Option<String>,
    /// Bearer token sent by cases that authenticate.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Launch an engine per profile: a shell command ({port} replaced by 0,
    /// {state_dir} by the fresh state folder also given as SVC_STATE_DIR); the
    /// runner reads the port and token from <state_dir>/engine.json.
    #[arg(long, value_name = "CMD", conflicts_with = "engine_url")]
    engine_cmd: Option<String>,
    /// Test an already running engine (`http://127.0.0.1:PORT`); cases that
    /// stop it or read its state folder are skipped.
    #[arg(long, value_name = "URL", requires = "engine_token")]
    engine_url: Option<String>,
    /// The token of the --engine-url engine (its descriptor's `token`).
    #[arg(long, value_name = "TOKEN", requires = "engine_url")]
    engine_token: Option<String>,
    /// Directory put first on the server's PATH (fake runtimes rt-one, rt-two).
    #[arg(long, value_name = "DIR")]
    runtimes_dir: Option<PathBuf>,
    /// Skip cases carrying this tag (repeatable).
    #[arg(long = "skip-tag", value_name = "TAG")]
    skip_tags: Vec<String>,
    /// Run only cases whose id contains this (repeatable; any may match).
    #[arg(long = "filter", value_name = "SUBSTR")]
    filters: Vec<String>,
    /// Output on stdout.
    #[arg(long, value_enum, default_value_t = Format::Pretty)]
    format: Format,
    /// Also write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// List the selected case ids and exit.
    #[arg(long)]
    list: bool,
    /// Compare the per-group summary table with FILE (a mismatch fails the run).
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// Rewrite the --summary FILE instead of comparing.
    #[arg(long, requires = "summary")]
    update_summary: bool,
    /// Cases of one profile run at once.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: u64,
    /// Also run every engine provider case against this provider: `ID`, or
    /// `ID=CONNECTION_JSON` where `{upstream_url}` and `{upstream_token}` make the
    /// runner launch a second engine behind it (for `rest`). Repeatable; the copies'
    /// ids start with `engine@ID/`.
    #[arg(long = "engine-provider", value_name = "ID[=JSON]")]
    engine_providers: Vec<String>,
    /// `SVC_ENGINE_PLUGINS` of the launched engines (plugin executables or folders,
    /// colon-separated).
    #[arg(long, value_name = "PATHS", requires = "engine_cmd")]
    engine_plugins: Option<String>,
    /// Per-case timeout in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    case_timeout: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let targets: Vec<ProviderTarget> = cli
        .engine_providers
        .iter()
        .map(|spec| {
            ProviderTarget::parse(spec)
                .unwrap_or_else(|e| usage(&format!("--engine-provider: {e:#}")))
        })
        .collect();
    let cases = runner::select(
        providers::with_variants(conformance::all_cases(), &targets),
        &cli.filters,
    );
    if cli.list {
        let mut out = std::io::stdout().lock();
        for case in &cases {
            let _ = writeln!(out, "{}", case.id);
        }
        return ExitCode::SUCCESS;
    }
    // One reach per contract; cases of a contract left unreached are skipped.
    let server = match (cli.server_cmd.clone(), cli.base_url.clone()) {
        (Some(cmd), _) if !cmd.contains("{port}") => usage("--server-cmd must contain {port}"),
        (Some(cmd), _) => Some(Reach::Launch(cmd)),
        (None, Some(url)) if !url.starts_with("http://") && !url.starts_with("https://") => {
            usage("--base-url must start with http:// or https://")
        }
        (None, Some(url)) => Some(Reach::BaseUrl(url)),
        (None, None) => None,
    };
    let engine = match (cli.engine_cmd.clone(), cli.engine_url.clone()) {
        (Some(cmd), _) if cmd.trim().is_empty() => usage("--engine-cmd must not be empty"),
        (Some(cmd), _) => Some(Reach::Launch(cmd)),
        (None, Some(url)) if !url.starts_with("http://") => {
            usage("--engine-url must start with http:// (the engine listens on loopback)")
        }
        (None, Some(url)) => Some(Reach::BaseUrl(url)),
        (None, None) => None,
    };
    let mut target = Target::new();
    if let Some(reach) = server {
        target = target.with(Contract::Server, reach);
    }
    if let Some(reach) = engine {
        target = target.with(Contract::Engine, reach);
    }
    if target.is_empty() {
        usage(
            "give --server-cmd '<command with {port}>' or --base-url URL, \
             and/or --engine-cmd CMD or --engine-url URL --engine-token TOKEN",
        );
    }
    quiet_insta();

    let mut opts = Options::new(target);
    opts.token = cli.token.clone();
    opts.engine_token = cli.engine_token.clone();
    opts.terminal_url = cli.terminal_url.clone();
    opts.runtimes_dir = cli.runtimes_dir.clone();
    opts.skip_tags = cli.skip_tags.clone();
    opts.engine_providers = targets;
    opts.engine_plugins = cli.engine_plugins.clone();
    opts.jobs = usize::try_from(cli.jobs).unwrap_or(8);
    opts.case_timeout = Duration::from_secs(cli.case_timeout);
    if cli.format == Format::Pretty {
        let width = report::output_width();
        opts.on_result = Some(Arc::new(move |r: &CaseResult| {
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                report::pretty_line(r, width)
            );
        }));
    }

    let report = runner::run_suite(cases, &opts);
    let mut failed = report.has_failures();
    if let Some(path) = &cli.report
        && let Err(e) = std::fs::write(path, report.to_json())
    {
        eprintln!("error: writing the report {}: {e}", path.display());
        failed = true;
    }
    if let Some(path) = &cli.summary
        && let Err(e) = report::check_summary(&report, path, cli.update_summary)
    {
        eprintln!("error: {e:#}");
        failed = true;
    }
    match cli.format {
        Format::Pretty => {
            println!("\n{}\n{}", report.summary_text(), report.final_line());
        }
        Format::Json => {
            println!("{}", report.to_json());
            // Stdout stays pure JSON; CI still finds its line.
            eprintln!("{}", report.final_line());
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn usage(msg: &str) -> ! {
    Cli::command()
        .error(ErrorKind::MissingRequiredArgument, msg)
        .exit()
}

/// Snapshot diffs are part of each failure message, so insta's own printing
/// would only duplicate them and corrupt `--format json`. Insta reads its
/// settings from the environment, which a running program cannot safely
/// change, so re-exec once with them set.
fn quiet_insta() {
    use std::os::unix::process::CommandExt as _;
    if std::env::var_os("INSTA_OUTPUT").is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.args(std::env::args_os().skip(1))
        .env("INSTA_OUTPUT", "none");
    if std::env::var_os("INSTA_WORKSPACE_ROOT").is_none() {
        // Otherwise insta runs `cargo metadata`, which another implementer may not have.
        let root = conformance::launch::workspace_root();
        let root = if root.is_dir() {
            root
        } else {
            std::env::current_dir().unwrap_or(root)
        };
        cmd.env("INSTA_WORKSPACE_ROOT", root);
    }
    let err = cmd.exec();
    eprintln!("warning: could not re-run with INSTA_OUTPUT=none ({err}); continuing");
}
