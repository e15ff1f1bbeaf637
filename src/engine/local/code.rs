//! Code in a sandbox: a snippet run once by its interpreter, or in a code context (an
//! interpreter that keeps its state between runs), through the code-run service, in the
//! sandbox's folder and environment, inside its cgroup where it has one.

use super::super::provider::check_env;
use super::super::provider::{CodeOutcome, ProviderResult};
use super::commands::{limit, run_registered};
use super::env;
use super::inside::{self, Place};
use super::sandbox::Core;
use crate::error::engine::{Code, EngineError};
use crate::services::code_run::contexts::ContextInfo;
use crate::services::code_run::{self, Confine, Language, Launch, RunOutcome};
use crate::services::supervisor::{GroupEnd, Label};
use crate::wire::{CodeRunBody, ContextRecord, CreateContext};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

pub async fn run(core: &Core, body: CodeRunBody) -> ProviderResult<CodeOutcome> {
    core.running()?;
    let timeout = limit(body.timeout, DEFAULT_TIMEOUT_S)?
        .ok_or_else(|| invalid("`timeout` is in seconds, at least 1"))?;
    if let Some(id) = &body.context_id {
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
        let ran = core
            .contexts
            .run_in_with(&core.id, id, &body.code, &envs, timeout)
            .await
            .map_err(|e| EngineError::from_domain(&e))?;
        let Some((_, run)) = ran else {
            return Err(context_not_found(core, id));
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
