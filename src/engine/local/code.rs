//! Code in a sandbox: a snippet run once by its interpreter, or in a code context (an
//! interpreter that keeps its state between runs), through the code-run service, in the
//! sandbox's folder and environment, inside its cgroup where it has one.

use super::super::provider::check_env;
use super::super::provider::{CodeOutcome, Event, EventStream, ProviderResult, code_events};
use super::commands::{limit, output_event, run_registered};
use super::env;
use super::inside::{self, Place};
use super::sandbox::Core;
use crate::error::engine::{Code, EngineError};
use crate::services::code_run::contexts::ContextInfo;
use crate::services::code_run::{self, Confine, Language, Launch, RunOutcome};
use crate::services::supervisor::{Chunk, GroupEnd, Label, Stream};
use crate::services::utf8_carry::Utf8Carry;
use crate::wire::{CodeRunBody, CommandEvent, ContextRecord, CreateContext, Exited};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The language of a body that names none.
const DEFAULT_LANGUAGE: &str = "python3";
/// A run's time limit unless the body gives one (seconds).
const DEFAULT_TIMEOUT_S: u64 = 60;
/// Bytes kept of each of stdout and stderr.
const OUTPUT_BYTES: usize = 8 * 1024 * 1024;

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::new(Code::InvalidArgument, message)
}

fn language(name: Option<&str>) -> ProviderResult<&'static Language> {
    let name = name.unwrap_or(DEFAULT_LANGUAGE);
    code_run::language(name).ok_or_else(|| {
        invalid(format!(
            "unknown language `{name}`: {} are known",
            code_run::names().collect::<Vec<_>>().join(", ")
        ))
    })
}

/// What runs `lang` in the sandbox: its interpreter on the sandbox's `PATH`.
fn launch(
    core: &Core,
    lang: &Language,
    cwd: &Place,
    envs: &BTreeMap<String, String>,
    timeout: Duration,
) -> ProviderResult<Launch> {
    let env = env::with(&core.env, envs, &core.id);
    let program = inside::program(core, &env, lang.program, cwd).map_err(|_| {
        invalid(format!(
            "`{}` is not installed in sandbox `{}` (no `{}` on its PATH); the languages are {}",
            lang.name,
            core.id,
            lang.program,
            code_run::names().collect::<Vec<_>>().join(", ")
        ))
    })?;
    let confiner = inside::confiner(core);
    let place = cwd.clone();
    Ok(Launch {
        program: program.into(),
        cwd: cwd.shown.clone().into(),
        env,
        timeout,
        output_bytes: OUTPUT_BYTES,
        confine: Some(Confine(Arc::new(move |program, args| {
            confiner.apply(None, &place, program, args)
        }))),
    })
}

fn outcome(run: RunOutcome) -> CodeOutcome {
    CodeOutcome {
        stdout: run.stdout,
        stderr: run.stderr,
        exit_code: run.exit_code,
        timed_out: run.timed_out,
        duration_ms: u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
    }
}

fn context_not_found(core: &Core, id: &str) -> EngineError {
    EngineError::new(
        Code::ContextNotFound,
        format!("no code context `{id}` in sandbox `{}`", core.id),
    )
}

/// A run in a context, checked: its context's id, its variables and its time limit.
struct InContext {
    id: String,
    envs: BTreeMap<String, String>,
    timeout: Duration,
}

/// The time limit of a run, and the context it names, checked (it exists and runs the
/// language asked for, if one is).
fn checked(core: &Core, body: &CodeRunBody) -> ProviderResult<(Duration, Option<InContext>)> {
    core.running()?;
    let timeout = limit(body.timeout, DEFAULT_TIMEOUT_S)?
        .ok_or_else(|| invalid("`timeout` is in seconds, at least 1"))?;
    let Some(id) = &body.context_id else {
        return Ok((timeout, None));
    };
    // With a context, `envs` are that run's only: set before the code, undone after.
    let envs = body.envs.clone().unwrap_or_default();
    check_env("envs", &envs)?;
    let context = core
        .contexts
        .list(&core.id)
        .into_iter()
        .find(|c| c.id == *id)
        .ok_or_else(|| context_not_found(core, id))?;
    if let Some(asked) = body.language.as_deref().filter(|l| *l != context.language) {
        return Err(invalid(format!(
            "context `{id}` runs {}, not {asked}",
            context.language
        )));
    }
    let context = InContext {
        id: id.clone(),
        envs,
        timeout,
    };
    Ok((timeout, Some(context)))
}

pub async fn run(core: &Core, body: CodeRunBody) -> ProviderResult<CodeOutcome> {
    let (timeout, in_context) = checked(core, &body)?;
    if let Some(c) = in_context {
        let ran = core
            .contexts
            .run_in_with(&core.id, &c.id, &body.code, &c.envs, c.timeout)
            .await
            .map_err(|e| EngineError::from_domain(&e))?;
        let Some((_, run)) = ran else {
            return Err(context_not_found(core, &c.id));
        };
        return Ok(outcome(run));
    }
    let lang = language(body.language.as_deref())?;
    let envs = body.envs.unwrap_or_default();
    check_env("envs", &envs)?;
    let launch = launch(core, lang, &inside::home(core), &envs, timeout)?;
    // A run is a process of the sandbox like a command's: registered (so it can be
    // signalled), in the cgroup, its background children left running.
    let mut spec = code_run::once_spec(lang, &launch, &body.code);
    spec.limits.group_end = GroupEnd::Leave;
    let label = Label {
        tag: "code".into(),
        cmd: lang.program.into(),
        args: Some(lang.stdin_args.iter().map(|a| a.to_string()).collect()),
    };
    let started = Instant::now();
    let ran = run_registered(core, &spec, label).await?;
    Ok(CodeOutcome {
        exit_code: ran.exit.code().filter(|_| !ran.exit.timed_out),
        timed_out: ran.exit.timed_out,
        stdout: ran.stdout,
        stderr: ran.stderr,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// A run in a context followed as it happens (the events of `code_run_stream`); a run
/// without a context answers at its end. The run goes on in a task of its own, so a
/// client that goes away leaves it to end as a whole run would (its context stays usable).
pub async fn run_stream(core: &Arc<Core>, body: CodeRunBody) -> ProviderResult<EventStream> {
    let (_, in_context) = checked(core, &body)?;
    let Some(c) = in_context else {
        return Ok(code_events(run(core, body).await?));
    };
    let (tx, chunks) = mpsc::channel(FOLLOW_CHUNKS);
    let core = core.clone();
    let ran = tokio::spawn(async move {
        let ran = core
            .contexts
            .run_in_followed(&core.id, &c.id, &body.code, &c.envs, c.timeout, tx)
            .await
            .map_err(|e| EngineError::from_domain(&e))?;
        match ran {
            Some((_, run)) => Ok(run),
            None => Err(context_not_found(&core, &c.id)),
        }
    });
    let follow = Followed {
        chunks,
        ran: Some(ran),
        stdout: Utf8Carry::default(),
        stderr: Utf8Carry::default(),
        queue: VecDeque::new(),
    };
    Ok(Box::pin(futures::stream::unfold(
        follow,
        |mut follow| async move { follow.next().await.map(|event| (event, follow)) },
    )))
}

/// Chunks a followed run may have read ahead of its client.
const FOLLOW_CHUNKS: usize = 64;

/// A followed run's events: its output as read (each stream's text kept whole across
/// reads), then `exit`, or the error that ended it.
struct Followed {
    chunks: mpsc::Receiver<Chunk>,
    /// `None` once the run's end is told.
    ran: Option<tokio::task::JoinHandle<ProviderResult<RunOutcome>>>,
    stdout: Utf8Carry,
    stderr: Utf8Carry,
    queue: VecDeque<Event>,
}

impl Followed {
    async fn next(&mut self) -> Option<Result<Event, EngineError>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(Ok(event));
            }
            let ran = self.ran.as_mut()?;
            if let Some(chunk) = self.chunks.recv().await {
                let (carry, stream) = match chunk.stream {
                    Stream::Stdout => (&mut self.stdout, Stream::Stdout),
                    Stream::Stderr => (&mut self.stderr, Stream::Stderr),
                };
                let bytes = carry.push(&chunk.bytes);
                if !bytes.is_empty() {
                    self.queue.push_back(output_event(stream, &bytes));
                }
                continue;
            }
            // The run dropped its sender: it has ended.
            let ended = ran.await;
            self.ran = None;
            for (stream, rest) in [
                (Stream::Stdout, self.stdout.finish()),
                (Stream::Stderr, self.stderr.finish()),
            ] {
                if !rest.is_empty() {
                    self.queue.push_back(output_event(stream, &rest));
                }
            }
            match ended {
                Ok(Ok(run)) => self.queue.push_back(
                    CommandEvent::Exit(Exited {
                        exit_code: run.exit_code,
                        timed_out: run.timed_out,
                    })
                    .into(),
                ),
                Ok(Err(e)) => return Some(Err(e)),
                Err(e) => {
                    return Some(Err(EngineError::new(
                        Code::Internal,
                        format!("the code run failed: {e}"),
                    )));
                }
            }
        }
    }
}

fn record(info: ContextInfo) -> ContextRecord {
    ContextRecord {
        context_id: info.id,
        language: info.language.to_owned(),
        cwd: info.cwd.display().to_string(),
        created_at: crate::services::files::rfc3339(info.created_at),
    }
}

pub async fn create_context(core: &Core, body: CreateContext) -> ProviderResult<ContextRecord> {
    let lang = language(body.language.as_deref())?;
    let cwd = inside::working_dir(core, body.cwd.as_deref())?;
    let launch = launch(
        core,
        lang,
        &cwd,
        &BTreeMap::new(),
        Duration::from_secs(DEFAULT_TIMEOUT_S),
    )?;
    let _pass = core.admit().await?;
    let info = core
        .contexts
        .create(&core.id, lang, &launch)
        .map_err(|e| EngineError::from_domain(&e))?;
    Ok(record(info))
}

pub fn list_contexts(core: &Core) -> ProviderResult<Vec<ContextRecord>> {
    core.life.alive()?;
    Ok(core
        .contexts
        .list(&core.id)
        .into_iter()
        .map(record)
        .collect())
}

pub async fn restart_context(core: &Core, id: &str) -> ProviderResult<ContextRecord> {
    let _pass = core.admit().await?;
    core.contexts
        .restart(&core.id, id)
        .map_err(|e| EngineError::from_domain(&e))?
        .map(record)
        .ok_or_else(|| context_not_found(core, id))
}

pub fn delete_context(core: &Core, id: &str) -> ProviderResult<()> {
    core.life.alive()?;
    if core.contexts.delete(&core.id, id) {
        Ok(())
    } else {
        Err(context_not_found(core, id))
    }
}
