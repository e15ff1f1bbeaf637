//! `cargo test -p conformance`: every case against our own server and engine,
//! through the same `run_suite` the `svc-conformance` binary uses. Cases are
//! run up front; libtest-mimic then reports one trial per case.

use std::collections::HashSet;
use std::process::ExitCode;

use conformance::Contract;
use conformance::providers::{self, ProviderTarget};
use conformance::report::{self, Status};
use conformance::runner::{self, Options, Reach, Target};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

const SUMMARY_TRIAL: &str = "conformance/summary";

fn main() -> ExitCode {
    let args = Arguments::from_args();
    // Every engine provider case also runs against the other provider kinds: `node`
    // (memory), `exec` (the example plugin) and `rest` (a second engine behind it).
    let cases = providers::with_variants(conformance::all_cases(), &provider_targets());

    // Ask libtest-mimic itself which trials it would run, so filter, --skip,
    // --exact and --ignored mean exactly what they mean for the final run.
    let wanted = |name: &str| {
        let probe = Trial::test(name, || Ok(()));
        !args.is_filtered_out(&probe) && !args.is_ignored(&probe)
    };
    let selected: Vec<_> = cases.iter().copied().filter(|c| wanted(c.id)).collect();
    let filtered = args.filter.is_some() || !args.skip.is_empty() || args.ignored;

    let report = if args.list || selected.is_empty() {
        report::Report::default()
    } else {
        let (Some(server), Some(engine)) = (server_cmd(), engine_cmd()) else {
            eprintln!(
                "build the server first: cargo build --workspace --bins \
                 (or set SVC_CONFORMANCE_SERVER_CMD and SVC_CONFORMANCE_ENGINE_CMD)"
            );
            return ExitCode::from(1);
        };
        let target =
            Target::server(Reach::Launch(server)).with(Contract::Engine, Reach::Launch(engine));
        let mut options = Options::new(target);
        options.engine_providers = provider_targets();
        options.engine_plugins = Some(example_plugin().to_string_lossy().into_owned());
        runner::run_suite(selected.clone(), &options)
    };
    let ran: HashSet<&str> = selected.iter().map(|c| c.id).collect();

    let mut trials: Vec<Trial> = cases
        .iter()
        .map(|case| {
            let outcome = ran
                .contains(case.id)
                .then(|| report.get(case.id).cloned())
                .flatten();
            Trial::ignorable_test(case.id, move || match outcome {
                Some(r) => match r.status {
                    Status::Pass => Ok(Completion::Completed),
                    Status::Skip => Ok(Completion::ignored_with(r.message)),
                    Status::Fail => Err(Failed::from(r.message)),
                },
                None => Ok(Completion::ignored_with("not run")),
            })
        })
        .collect();

    let full_run = !filtered && !args.list;
    trials.push(Trial::ignorable_test(SUMMARY_TRIAL, move || {
        if !full_run {
            return Ok(Completion::ignored_with("filtered run"));
        }
        let update = std::env::var("SVC_CONFORMANCE_UPDATE_SUMMARY").is_ok_and(|v| v == "1");
        report::check_summary(&report, &conformance::summary_file(), update)
            .map(|()| Completion::Completed)
            .map_err(|e| {
                Failed::from(format!(
                    "{e:#}\n(to accept: SVC_CONFORMANCE_UPDATE_SUMMARY=1 cargo test -p conformance --test suite)"
                ))
            })
    }));

    libtest_mimic::run(&args, trials).exit_code()
}

/// `SVC_CONFORMANCE_SERVER_CMD`, else our own debug build when it exists.
fn server_cmd() -> Option<String> {
    if let Ok(cmd) = std::env::var("SVC_CONFORMANCE_SERVER_CMD")
        && !cmd.trim().is_empty()
    {
        return Some(cmd);
    }
    let bin = conformance::launch::target_dir().join("debug").join("svc");
    bin.is_file().then(|| {
        format!(
            "{} serve --port {{port}} --terminal-port {{terminal_port}}",
            conformance::launch::shell_quote(&bin.to_string_lossy())
        )
    })
}

/// `SVC_CONFORMANCE_ENGINE_CMD`, else our own debug build's engine when it exists.
fn engine_cmd() -> Option<String> {
    if let Ok(cmd) = std::env::var("SVC_CONFORMANCE_ENGINE_CMD")
        && !cmd.trim().is_empty()
    {
        return Some(cmd);
    }
    let bin = conformance::launch::target_dir().join("debug").join("svc");
    bin.is_file().then(|| {
        format!(
            "{} provider engine serve --port {{port}} --idle-timeout 600",
            conformance::launch::shell_quote(&bin.to_string_lossy())
        )
    })
}

/// The provider kinds beside the builtin `local` the engine cases also run against.
fn provider_targets() -> Vec<ProviderTarget> {
    [
        "memory",
        "dir",
        r#"rest={"provider": "rest", "api_url": "{upstream_url}", "api_key": "{upstream_token}"}"#,
    ]
    .into_iter()
    .map(|spec| ProviderTarget::parse(spec).expect("a valid provider spec"))
    .collect()
}

/// The example `exec` plugin, built beside the server by `cargo build --workspace --bins`.
fn example_plugin() -> std::path::PathBuf {
    conformance::launch::target_dir()
        .join("debug")
        .join("svc-plugin-dir")
}
