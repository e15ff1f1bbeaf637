//! Running cases: skip rules, one server (or engine) per profile, bounded
//! concurrency, per-case timeouts, and panics turned into failures.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Once};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use futures::StreamExt as _;

use crate::case::{Case, CaseFuture};
use crate::contract::Contract;
use crate::ctx::Ctx;
use crate::engine::{self, Engine};
use crate::launch::{self, Server};
use crate::panic::panic_message;
use crate::profiles::{ENGINE_UPSTREAM, Profile};
use crate::providers::{self, ProviderTarget};
use crate::report::{CaseResult, Report, Status};

/// How the runner reaches one contract's implementation.
#[derive(Debug, Clone)]
pub enum Reach {
    /// A command with `{port}` (and optionally `{config}`), launched per profile.
    /// An engine's command gets a fresh `SVC_STATE_DIR` and is found through
    /// the descriptor it writes there.
    Launch(String),
    /// Already running at this base URL. A server runs only `ANY` cases; an
    /// engine runs every case but those that stop it or read its state folder.
    BaseUrl(String),
}

/// What a run tests: a [`Reach`] per [`Contract`]. Cases of a contract the
/// target does not reach are skipped, naming the flags that would.
#[derive(Debug, Clone, Default)]
pub struct Target {
    reaches: BTreeMap<Contract, Reach>,
}

impl Target {
    /// Reaches nothing yet; see [`Target::with`].
    pub fn new() -> Target {
        Target::default()
    }

    /// Only the server, reached as `reach`.
    pub fn server(reach: Reach) -> Target {
        Target::new().with(Contract::Server, reach)
    }

    /// Also reaches `contract`, as `reach` (replacing an earlier one).
    pub fn with(mut self, contract: Contract, reach: Reach) -> Target {
        self.reaches.insert(contract, reach);
        self
    }

    pub fn reach(&self, contract: Contract) -> Option<&Reach> {
        self.reaches.get(&contract)
    }

    /// Reaches no contract at all.
    pub fn is_empty(&self) -> bool {
        self.reaches.is_empty()
    }
}

pub type ResultHook = Arc<dyn Fn(&CaseResult) + Send + Sync>;

#[derive(Clone)]
pub struct Options {
    pub target: Target,
    /// Sent as a bearer token by `Ctx::request`.
    pub token: Option<String>,
    /// The token of an engine reached by [`Reach::BaseUrl`] (a launched one's is read
    /// from its descriptor).
    pub engine_token: Option<String>,
    /// Put first on the server's PATH; `None` means [`launch::default_runtimes_dir`].
    pub runtimes_dir: Option<PathBuf>,
    pub skip_tags: Vec<String>,
    /// Cases of one profile running at once.
    pub jobs: usize,
    pub case_timeout: Duration,
    pub ready_timeout: Duration,
    /// Called as each case finishes (or is skipped), for live output.
    pub on_result: Option<ResultHook>,
    /// The terminal listener of a server reached by [`Reach::BaseUrl`] (a launched one
    /// gets the port the runner picks for `{terminal_port}`).
    pub terminal_url: Option<String>,
    /// Providers beside `local` that engine provider cases also run against: the
    /// copies `providers::with_variants` made find their connection here.
    pub engine_providers: Vec<ProviderTarget>,
    /// `SVC_ENGINE_PLUGINS` of every engine the runner launches (the `exec` plugins).
    pub engine_plugins: Option<String>,
}

impl Options {
    pub fn new(target: Target) -> Options {
        Options {
            target,
            token: None,
            engine_token: None,
            runtimes_dir: None,
            skip_tags: Vec::new(),
            jobs: 8,
            case_timeout: Duration::from_secs(60),
            ready_timeout: Duration::from_secs(30),
            on_result: None,
            terminal_url: None,
            engine_providers: Vec::new(),
            engine_plugins: None,
        }
    }
}

/// Cases whose id contains any of `filters` (all when empty).
pub fn select(cases: Vec<Case>, filters: &[String]) -> Vec<Case> {
    if filters.is_empty() {
        return cases;
    }
    cases
        .into_iter()
        .filter(|c| filters.iter().any(|f| c.id.contains(f.as_str())))
        .collect()
}

/// Ids unique and shaped `group/area/nnn`; one profile per profile name.
pub fn check_cases(cases: &[Case]) -> anyhow::Result<()> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut profiles: HashMap<&str, &'static Profile> = HashMap::new();
    let mut problems = Vec::new();
    for case in cases {
        *ids.entry(case.id).or_default() += 1;
        let parts: Vec<&str> = case.id.split('/').collect();
        if parts.len() < 3 || parts.iter().any(|p| p.is_empty()) {
            problems.push(format!("{}: id must look like group/area/nnn", case.id));
        }
        let known = profiles.entry(case.profile.name).or_insert(case.profile);
        if !std::ptr::eq(*known, case.profile) {
            problems.push(format!(
                "{}: two different profiles are named {:?}",
                case.id, case.profile.name
            ));
        }
    }
    let mut dups: Vec<&str> = ids
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(id, _)| id)
        .collect();
    dups.sort_unstable();
    problems.extend(
        dups.into_iter()
            .map(|id| format!("{id}: duplicate case id")),
    );
    if !problems.is_empty() {
        bail!("invalid case list:\n  {}", problems.join("\n  "));
    }
    Ok(())
}

/// Blocking entry point shared by the binary and the test harness.
pub fn run_suite(cases: Vec<Case>, opts: &Options) -> Report {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(run_suite_async(cases, opts)),
        Err(e) => {
            let msg = format!("cannot start the async runtime: {e}");
            Report::new(
                cases
                    .iter()
                    .map(|c| result(c, Status::Fail, msg.clone(), 0))
                    .collect(),
            )
        }
    }
}

pub async fn run_suite_async(cases: Vec<Case>, opts: &Options) -> Report {
    install_panic_hook();
    let runtimes = opts
        .runtimes_dir
        .clone()
        .or_else(launch::default_runtimes_dir);
    let fake_runtimes = launch::has_fake_runtimes(runtimes.as_deref());

    let mut results = Vec::new();
    let mut groups: Vec<(&'static Profile, Vec<Case>)> = Vec::new();
    for case in cases {
        if let Some(reason) = skip_reason(&case, opts, fake_runtimes) {
            let r = result(&case, Status::Skip, reason, 0);
            notify(opts, &r);
            results.push(r);
            continue;
        }
        match groups.iter_mut().find(|(p, _)| p.name == case.profile.name) {
            Some((_, list)) => list.push(case),
            None => groups.push((case.profile, vec![case])),
        }
    }

    let run_all = async {
        for (profile, cases) in groups {
            results.extend(run_profile(profile, cases, opts, runtimes.as_deref()).await);
        }
    };
    tokio::select! {
        () = run_all => {}
        () = interrupted() => {
            // Dropping the run above killed the current server's process group.
            eprintln!("interrupted; servers stopped");
            std::process::exit(130);
        }
    }
    Report::new(results)
}

/// Servers run in their own process groups, so a terminal Ctrl-C would not
/// reach them: the runner has to stop them itself.
async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

fn skip_reason(case: &Case, opts: &Options, fake_runtimes: bool) -> Option<String> {
    let contract = case.contract();
    let Some(reach) = opts.target.reach(contract) else {
        return Some(format!(
            "no {contract} to test; give {}",
            contract.reach_flags()
        ));
    };
    let running = matches!(reach, Reach::BaseUrl(_));
    if running && contract == Contract::Engine && case.has_tag("needs:own-engine") {
        return Some(
            "needs:own-engine: it stops the engine or reads its state folder; \
             launch one with --engine-cmd"
                .to_string(),
        );
    }
    if running && contract == Contract::Server && !case.profile.is_any() {
        return Some(format!(
            "needs profile {}; launch the {contract} with {}",
            case.profile.name,
            contract.launch_flag()
        ));
    }
    if let Some(tag) = opts.skip_tags.iter().find(|t| case.has_tag(t)) {
        return Some(format!("tag {tag} skipped"));
    }
    let knows_terminal = match reach {
        Reach::Launch(cmd) => cmd.contains(launch::TERMINAL_PORT),
        Reach::BaseUrl(_) => opts.terminal_url.is_some(),
    };
    if case.has_tag("needs:terminal-port") && !knows_terminal {
        return Some(
            "needs:terminal-port: add --terminal-port {terminal_port} to --server-cmd \
             (or give --terminal-url with --base-url)"
                .to_string(),
        );
    }
    if case.has_tag("needs:engine-plugins")
        && matches!(reach, Reach::Launch(_))
        && opts.engine_plugins.is_none()
    {
        return Some(
            "needs:engine-plugins: give --engine-plugins PATHS (an exec plugin such as \
             target/debug/svc-plugin-dir)"
                .to_string(),
        );
    }
    if case.has_tag("needs:browser") && !launch::has_browser() {
        return Some(
            "needs:browser: no chromium, chromium-browser or google-chrome on PATH \
             (apt-get install -y chromium)"
                .to_string(),
        );
    }
    if case.has_tag("needs:fake-runtimes") && !fake_runtimes {
        return Some(
            "needs:fake-runtimes: no rt-one on the runtimes dir or PATH \
             (cargo build -p fake-runtimes, or --runtimes-dir)"
                .to_string(),
        );
    }
    None
}

async fn run_profile(
    profile: &'static Profile,
    cases: Vec<Case>,
    opts: &Options,
    runtimes: Option<&Path>,
) -> Vec<CaseResult> {
    let started = Instant::now();
    let fail_all = |cases: &[Case], e: anyhow::Error| -> Vec<CaseResult> {
        let msg = format!("{e:#}");
        let ms = elapsed_ms(started);
        cases
            .iter()
            .map(|c| {
                let r = result(c, Status::Fail, msg.clone(), ms);
                notify(opts, &r);
                r
            })
            .collect()
    };
    let (launched, ctx) = match connect(profile, opts, runtimes).await {
        Ok(pair) => pair,
        Err(e) => return fail_all(&cases, e),
    };
    let (cases, mut skipped) = match provider_skips(profile, &ctx, cases).await {
        Ok(split) => split,
        Err((cases, e)) => {
            let results = fail_all(&cases, e);
            launched.stop(&ctx).await;
            return results;
        }
    };
    for r in &skipped {
        notify(opts, r);
    }
    let mut results = futures::stream::iter(cases)
        .map(|case| {
            let ctx = ctx.for_case(case.id);
            let timeout = opts.case_timeout;
            async move {
                let started = Instant::now();
                // A task per case: a case that blocks its thread cannot stall the others.
                let outcome = match tokio::spawn(run_one(case, ctx, timeout)).await {
                    Ok(outcome) => outcome,
                    Err(e) => Err(anyhow!("case task failed: {e}")),
                };
                let ms = elapsed_ms(started);
                match outcome {
                    Ok(()) => result(&case, Status::Pass, String::new(), ms),
                    Err(e) => result(&case, Status::Fail, format!("{e:#}"), ms),
                }
            }
        })
        .buffer_unordered(opts.jobs.max(1))
        .inspect(|r| notify(opts, r))
        .collect::<Vec<_>>()
        .await;
    launched.stop(&ctx).await;
    results.append(&mut skipped);
    results
}

/// What the runner started for a profile, to be stopped after its cases.
enum Launched {
    /// Already running (`--base-url`, `--engine-url`).
    Nothing,
    Server(Server),
    /// An engine, and the one behind it when its provider reaches another (`rest`).
    Engine {
        engine: Engine,
        upstream: Option<Box<Engine>>,
    },
}

impl Launched {
    /// Stops what was launched. An engine's sandboxes are killed first, even one the
    /// runner did not launch: a sandbox outlives its engine.
    async fn stop(self, ctx: &Ctx) {
        if ctx.is_engine() {
            engine::kill_sandboxes(ctx, matches!(self, Launched::Engine { .. })).await;
        }
        match self {
            Launched::Nothing => {}
            Launched::Server(server) => server.stop().await,
            Launched::Engine { engine, upstream } => {
                engine.stop(ctx).await;
                if let Some(upstream) = upstream {
                    upstream.stop_alone().await;
                }
            }
        }
    }
}

/// An engine profile's cases split into those to run and those skipped because its
/// provider does not declare a feature they need (or is not there at all). An error
/// hands the cases back: the engine could not say what its providers declare.
async fn provider_skips(
    profile: &'static Profile,
    ctx: &Ctx,
    cases: Vec<Case>,
) -> Result<(Vec<Case>, Vec<CaseResult>), (Vec<Case>, anyhow::Error)> {
    let Some(provider) = profile.provider else {
        return Ok((cases, Vec::new()));
    };
    let declared = match engine::provider_features(ctx, provider).await {
        Ok(declared) => declared,
        Err(e) => return Err((cases, e.context("reading GET /v1/providers"))),
    };
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for case in cases {
        let reason = match &declared {
            Err(reason) => Some(reason.clone()),
            Ok(features) => engine::needed_features(case.tags)
                .find(|f| !features.contains(*f))
                .map(|f| format!("provider {provider} does not declare {f}")),
        };
        match reason {
            Some(reason) => skipped.push(result(&case, Status::Skip, reason, 0)),
            None => run.push(case),
        }
    }
    Ok((run, skipped))
}

async fn connect(
    profile: &'static Profile,
    opts: &Options,
    runtimes: Option<&Path>,
) -> anyhow::Result<(Launched, Ctx)> {
    let contract = profile.contract;
    match (contract, opts.target.reach(contract)) {
        // Skipped before this point; kept as an error rather than a panic.
        (_, None) => bail!("no {contract} to test"),
        (Contract::Server, Some(Reach::BaseUrl(url))) => {
            let ctx = Ctx::new(url, None, opts.token.clone(), profile.name)?;
            Ok((
                Launched::Nothing,
                ctx.with_terminal_url(opts.terminal_url.clone()),
            ))
        }
        (Contract::Server, Some(Reach::Launch(cmd))) => {
            let server = launch::launch(cmd, profile, runtimes, opts.ready_timeout).await?;
            let dir = Some(server.dir().to_path_buf());
            let ctx = Ctx::new(&server.base_url, dir, opts.token.clone(), profile.name)?
                .with_terminal_url(server.terminal_url.clone());
            Ok((Launched::Server(server), ctx))
        }
        (Contract::Engine, Some(Reach::BaseUrl(url))) => {
            let target = providers::target_of(profile, &opts.engine_providers);
            if target.is_some_and(ProviderTarget::needs_upstream) {
                bail!(
                    "provider {} needs an upstream engine the runner launches; give --engine-cmd",
                    profile.provider.unwrap_or_default()
                );
            }
            // Cases write `/v1/...` themselves.
            let base = url.trim_end_matches('/').trim_end_matches("/v1");
            let ctx = Ctx::new(base, None, opts.engine_token.clone(), profile.name)?.for_engine(
                profile.provider,
                target.and_then(|t| t.connection_for(None)),
            );
            Ok((Launched::Nothing, ctx))
        }
        (Contract::Engine, Some(Reach::Launch(cmd))) => {
            let env: Vec<(String, String)> = opts
                .engine_plugins
                .iter()
                .map(|p| ("SVC_ENGINE_PLUGINS".to_owned(), p.clone()))
                .collect();
            let target = providers::target_of(profile, &opts.engine_providers);
            let upstream = match target.filter(|t| t.needs_upstream()) {
                Some(_) => Some(Box::new(
                    engine::launch(cmd, &ENGINE_UPSTREAM, &env, opts.ready_timeout)
                        .await
                        .map_err(|e| e.context("launching the upstream engine"))?,
                )),
                None => None,
            };
            let engine = engine::launch(cmd, profile, &env, opts.ready_timeout).await?;
            let connection = target.and_then(|t| {
                t.connection_for(
                    upstream
                        .as_ref()
                        .map(|u| (u.base_url.as_str(), u.token.as_str())),
                )
            });
            let dir = Some(engine.state_dir());
            let ctx = Ctx::new(
                &engine.base_url,
                dir,
                Some(engine.token.clone()),
                profile.name,
            )?
            .for_engine(profile.provider, connection);
            Ok((Launched::Engine { engine, upstream }, ctx))
        }
    }
}

async fn run_one(case: Case, ctx: Ctx, timeout: Duration) -> anyhow::Result<()> {
    let fut = with_panic_capture(|| catch_unwind(AssertUnwindSafe(|| (case.run)(ctx))));
    let fut = fut.map_err(|payload| anyhow!(take_panic(payload.as_ref())))?;
    match tokio::time::timeout(timeout, CatchPanic(fut)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(anyhow!("timed out after {}s", timeout.as_secs_f32())),
    }
}

fn result(case: &Case, status: Status, message: String, duration_ms: u64) -> CaseResult {
    CaseResult {
        id: case.id.to_string(),
        group: case.group().to_string(),
        profile: case.profile.name.to_string(),
        spec: case.spec.to_string(),
        status,
        message,
        duration_ms,
    }
}

fn notify(opts: &Options, r: &CaseResult) {
    if let Some(hook) = &opts.on_result {
        hook(r);
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

thread_local! {
    // Set while a case is being polled on this thread: its panics are
    // recorded for the report instead of printed.
    static IN_CASE: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CASE.with(Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let msg = format!("panicked{at}: {}", panic_message(info.payload()));
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(msg));
            } else {
                previous(info);
            }
        }));
    });
}

fn with_panic_capture<R>(f: impl FnOnce() -> R) -> R {
    let was = IN_CASE.with(|c| c.replace(true));
    let out = f();
    IN_CASE.with(|c| c.set(was));
    out
}

fn take_panic(payload: &(dyn Any + Send)) -> String {
    LAST_PANIC
        .with(|p| p.borrow_mut().take())
        .unwrap_or_else(|| format!("panicked: {}", panic_message(payload)))
}

/// Polls a case, turning a panic into an `Err` with its location.
struct CatchPanic(CaseFuture);

impl Future for CatchPanic {
    type Output = anyhow::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.get_mut().0;
        match with_panic_capture(|| catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx)))) {
            Ok(poll) => poll,
            Err(payload) => Poll::Ready(Err(anyhow!(take_panic(payload.as_ref())))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::{ANY, DEFAULT};
    use reqwest::Method;
    use serde_json::Value;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_server.py");

    static CONFIGURED: Profile = Profile {
        name: "test-configured",
        contract: Contract::Server,
        provider: None,
        env: &[("FIXTURE_MARK", "in {dir}"), ("SVC_FROM_PROFILE", "yes")],
        template: Some("root: {dir}/work\n"),
        args: &["--extra", "two words"],
        files: &[("sub/note.txt", "dir is {dir}")],
    };

    fn fixture_cmd() -> String {
        format!("python3 {FIXTURE} --port {{port}}")
    }

    fn opts(target: Target) -> Options {
        let mut o = Options::new(target);
        o.case_timeout = Duration::from_secs(3);
        o.ready_timeout = Duration::from_secs(20);
        o
    }

    async fn get_json(ctx: &Ctx, path: &str) -> anyhow::Result<Value> {
        let resp = ctx.send(ctx.get(path)).await?;
        resp.expect_status(200)?;
        resp.json()
    }

    fn mixed_cases() -> Vec<Case> {
        vec![
            crate::case! {
                id: "t/ok/001", spec: "health is ok", profile: &DEFAULT,
                tags: [], endpoints: ["health"], codes: [],
                run: |ctx| async move {
                    let body = get_json(&ctx, "/health").await?;
                    anyhow::ensure!(body["status"] == "ok", "got {body}");
                    Ok(())
                },
            },
            crate::case! {
                id: "t/panic/001", spec: "panics", profile: &DEFAULT,
                tags: [], endpoints: [], codes: [],
                run: |ctx| async move {
                    let resp = ctx.send(ctx.get("/health")).await?;
                    assert_eq!(resp.status, 418, "teapot expected");
                    Ok(())
                },
            },
            crate::case! {
                id: "t/slow/001", spec: "sleeps past the timeout", profile: &DEFAULT,
                tags: [], endpoints: [], codes: [],
                run: |_ctx| async move {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok(())
                },
            },
            crate::case! {
                id: "t/sse/001", spec: "event stream frames", profile: &DEFAULT,
                tags: [], endpoints: [], codes: [],
                run: |ctx| async move {
                    let mut events = ctx.sse(ctx.get("/events")).await?;
                    let first = events.next_frame().await?.expect("a comment frame");
                    assert_eq!(first.comments, vec!["hello".to_string()]);
                    let tick = events.next_event().await?.expect("an event");
                    assert_eq!((tick.id.as_deref(), tick.event.as_deref()), (Some("1"), Some("tick")));
                    assert_eq!(tick.json()?["n"], 1);
                    let multi = events.next_event().await?.expect("a data event");
                    assert_eq!(multi.data.as_deref(), Some("a\nb"));
                    assert!(events.next_frame().await?.is_none());
                    Ok(())
                },
            },
            crate::case! {
                id: "t/err/001", spec: "typed 404", profile: &DEFAULT,
                tags: [], endpoints: [], codes: ["not_found"],
                run: |ctx| async move {
                    ctx.send(ctx.get("/nope")).await?.expect_error(404, "not_found")?;
                    ctx.send(ctx.get("/v1/nope")).await?.expect_error(404, "not_found")?;
                    ctx.send(ctx.get("/nope")).await?.expect_error(404, "wrong_code")?;
                    Ok(())
                },
            },
        ]
    }

    #[test]
    fn launched_server_runs_cases_and_reports_failures() {
        let report = run_suite(
            mixed_cases(),
            &opts(Target::server(Reach::Launch(fixture_cmd()))),
        );
        let status = |id: &str| report.get(id).map(|r| (r.status, r.message.clone()));
        assert_eq!(status("t/ok/001"), Some((Status::Pass, String::new())));
        assert_eq!(status("t/sse/001"), Some((Status::Pass, String::new())));
        let (s, msg) = status("t/panic/001").unwrap();
        assert_eq!(s, Status::Fail);
        assert!(
            msg.contains("panicked at") && msg.contains("teapot expected"),
            "{msg}"
        );
        let (s, msg) = status("t/slow/001").unwrap();
        assert_eq!(s, Status::Fail);
        assert!(msg.contains("timed out after 3s"), "{msg}");
        let (s, msg) = status("t/err/001").unwrap();
        assert_eq!(s, Status::Fail);
        assert!(msg.contains("expected error code \"wrong_code\""), "{msg}");
        assert_eq!(report.final_line(), "2 passed, 3 failed, 0 skipped");
    }

    #[test]
    fn profile_reaches_the_server() {
        let cases = vec![crate::case! {
            id: "t/profile/001", spec: "profile env, template, files, args", profile: &CONFIGURED,
            tags: [], endpoints: [], codes: [],
            run: |ctx| async move {
                let dir = ctx.dir().expect("launched servers have a dir").to_path_buf();
                let d = dir.to_string_lossy().into_owned();
                let env = get_json(&ctx, "/env").await?;
                assert_eq!(env["FIXTURE_MARK"], format!("in {d}"));
                assert_eq!(env["SVC_FROM_PROFILE"], "yes");
                assert_eq!(env["SVC_CONFIG"], format!("{d}/template.yaml"));
                let leaked: Vec<&String> = env.as_object().unwrap().keys()
                    .filter(|k| k.starts_with("SVC_"))
                    .filter(|k| !["SVC_CONFIG", "SVC_FROM_PROFILE"].contains(&k.as_str()))
                    .collect();
                assert!(leaked.is_empty(), "runner SVC_* leaked: {leaked:?}");
                // Wrappers like pyenv shims may put their own dirs in front.
                let path: Vec<&str> = env["PATH"].as_str().unwrap_or_default().split(':').collect();
                let ours = std::env::var("PATH").unwrap_or_default();
                let first = ours.split(':').next().unwrap_or_default();
                let at = |d: &str| path.iter().position(|p| *p == d);
                assert!(at("/nonexistent-runtimes") < at(first), "{path:?}");
                assert_eq!(std::fs::read_to_string(dir.join("template.yaml"))?, format!("root: {d}/work\n"));
                assert_eq!(std::fs::read_to_string(dir.join("sub/note.txt"))?, format!("dir is {d}"));
                let argv = get_json(&ctx, "/argv").await?;
                assert_eq!(argv, serde_json::json!(["--port", "0", "--config", format!("{d}/template.yaml"), "--extra", "two words"]));
                Ok(())
            },
        }];
        let mut o = opts(Target::server(Reach::Launch(format!(
            "{} --config {{config}}",
            fixture_cmd()
        ))));
        o.runtimes_dir = Some(PathBuf::from("/nonexistent-runtimes"));
        let report = run_suite(cases, &o);
        let r = &report.cases[0];
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    #[test]
    fn server_that_exits_fails_every_case_with_its_stderr() {
        let cases = mixed_cases();
        let n = cases.len();
        let report = run_suite(
            cases,
            &opts(Target::server(Reach::Launch(
                "echo first >&2; echo boom {port} >&2; exit 3".into(),
            ))),
        );
        assert_eq!(report.totals.fail, n);
        let msg = &report.cases[0].message;
        assert!(msg.contains("exited") && msg.contains("| boom 0"), "{msg}");
    }

    #[test]
    fn base_url_runs_only_any_cases_and_tags_skip() {
        let cases = vec![
            crate::case! {
                id: "t/any/001", spec: "any", profile: &ANY,
                tags: [], endpoints: [], codes: [],
                run: |ctx| async move {
                    let headers = get_json(&ctx, "/headers").await?;
                    anyhow::ensure!(headers["authorization"] == "Bearer sekrit", "got {headers}");
                    let anon = ctx.send(ctx.anonymous(Method::GET, "/headers")).await?.json()?;
                    anyhow::ensure!(anon.get("authorization").is_none(), "got {anon}");
                    Ok(())
                },
            },
            crate::case! {
                id: "t/any/002", spec: "tagged", profile: &ANY,
                tags: ["needs:slow"], endpoints: [], codes: [],
                run: |_ctx| async move { Ok(()) },
            },
            crate::case! {
                id: "t/default/001", spec: "default", profile: &DEFAULT,
                tags: [], endpoints: [], codes: [],
                run: |_ctx| async move { Ok(()) },
            },
        ];
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt
            .block_on(launch::launch(
                &fixture_cmd(),
                &DEFAULT,
                None,
                Duration::from_secs(20),
            ))
            .unwrap();
        let mut o = opts(Target::server(Reach::BaseUrl(server.base_url.clone())));
        o.token = Some("sekrit".into());
        o.skip_tags = vec!["needs:slow".into()];
        let report = run_suite(cases, &o);
        rt.block_on(server.stop());
        let get = |id: &str| report.get(id).unwrap();
        assert_eq!(
            get("t/any/001").status,
            Status::Pass,
            "{}",
            get("t/any/001").message
        );
        assert_eq!(get("t/any/002").message, "tag needs:slow skipped");
        assert_eq!(
            get("t/default/001").message,
            "needs profile default; launch the server with --server-cmd"
        );
    }

    #[test]
    fn fake_runtime_cases_skip_without_rt_one() {
        let cases = vec![crate::case! {
            id: "t/rt/001", spec: "needs runtimes", profile: &ANY,
            tags: ["needs:fake-runtimes"], endpoints: [], codes: [],
            run: |_ctx| async move { Ok(()) },
        }];
        let empty = tempfile::tempdir().unwrap();
        let mut o = opts(Target::server(Reach::BaseUrl("http://127.0.0.1:9".into())));
        o.runtimes_dir = Some(empty.path().to_path_buf());
        if !launch::has_fake_runtimes(None) {
            let report = run_suite(cases.clone(), &o);
            assert_eq!(report.cases[0].status, Status::Skip);
        }
        std::fs::write(empty.path().join("rt-one"), "").unwrap();
        let report = run_suite(cases, &o);
        assert_eq!(report.cases[0].status, Status::Pass);
    }

    #[test]
    fn terminal_cases_skip_unless_the_terminal_port_is_known() {
        let cases = vec![crate::case! {
            id: "t/terminal/001", spec: "needs the terminal port", profile: &ANY,
            tags: ["needs:terminal-port"], endpoints: [], codes: [],
            run: |ctx| async move {
                anyhow::ensure!(ctx.terminal_url()? == "http://127.0.0.1:9", "got {:?}", ctx.terminal_url());
                Ok(())
            },
        }];
        let mut o = opts(Target::server(Reach::BaseUrl("http://127.0.0.1:9".into())));
        let report = run_suite(cases.clone(), &o);
        assert_eq!(report.cases[0].status, Status::Skip);
        assert!(
            report.cases[0]
                .message
                .contains("--terminal-port {terminal_port}")
        );
        o.terminal_url = Some("http://127.0.0.1:9/".into());
        let report = run_suite(cases, &o);
        let r = &report.cases[0];
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    #[test]
    fn cases_of_a_contract_the_target_does_not_reach_are_skipped() {
        let cases = vec![crate::case! {
            id: "t/unreached/001", spec: "never launched", profile: &DEFAULT,
            tags: [], endpoints: [], codes: [],
            run: |_ctx| async move { anyhow::bail!("must not run") },
        }];
        let report = run_suite(cases, &opts(Target::new()));
        let r = &report.cases[0];
        assert_eq!(r.status, Status::Skip, "{}", r.message);
        assert_eq!(
            r.message,
            "no server to test; give --server-cmd CMD or --base-url URL"
        );
    }

    #[test]
    fn case_list_is_checked() {
        let ok = crate::case! {
            id: "t/a/001", spec: "", profile: &ANY, tags: [], endpoints: [], codes: [],
            run: |_ctx| async move { Ok(()) },
        };
        let mut bad_id = ok;
        bad_id.id = "t/a";
        let err = check_cases(&[ok, ok, bad_id]).unwrap_err().to_string();
        assert!(err.contains("t/a/001: duplicate case id"), "{err}");
        assert!(err.contains("t/a: id must look like"), "{err}");
        assert!(check_cases(&crate::cases::all()).is_ok());
    }
}
