//! What every route that starts a child asks before it does (shells, processes, terminals,
//! code runs): the working directory under the path guard, the environment under the
//! variable rules, the program under the command and process guards. The guards are
//! services (`services::paths`, `services::exec_rules`); this file maps their refusals to
//! rows of the server table, once for every group.

use crate::error::{ApiError, Code, ErrorCode};
use crate::server::AppState;
use crate::server::auth::Identity;
use crate::services::exec_rules::{CommandLine, ExecRefusal};
use crate::services::paths::Op;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

impl ErrorCode for ExecRefusal {
    fn error_code(&self) -> Code {
        match self {
            ExecRefusal::CommandInvalid(_) => Code::CommandInvalid,
            ExecRefusal::ProcessInvalid(_) => Code::ProcessInvalid,
            ExecRefusal::NotAllowed { .. } => Code::CommandNotAllowed,
            ExecRefusal::ScopeRequired { .. } => Code::ScopeRequired,
            ExecRefusal::ProcessDenied { .. } => Code::ProcessDenied,
            ExecRefusal::EnvDenied { .. } => Code::EnvVarDenied,
            ExecRefusal::EnvNotAllowed { .. } => Code::EnvVarNotAllowed,
            ExecRefusal::EnvInvalid { .. } => Code::EnvInvalid,
        }
    }

    fn param(&self) -> Option<String> {
        match self {
            ExecRefusal::CommandInvalid(_)
            | ExecRefusal::ProcessInvalid(_)
            | ExecRefusal::NotAllowed { .. }
            | ExecRefusal::ScopeRequired { .. }
            | ExecRefusal::ProcessDenied { .. } => None,
            ExecRefusal::EnvDenied { .. }
            | ExecRefusal::EnvNotAllowed { .. }
            | ExecRefusal::EnvInvalid { .. } => Some("env".into()),
        }
    }
}

/// The child's working directory: `raw` (absolute, or relative to the server's working
/// directory) under the path guard, and an existing directory; the server's working
/// directory when absent (which the guard judges too).
pub fn working_dir(app: &AppState, raw: Option<&str>) -> Result<PathBuf, ApiError> {
    let shown = raw.unwrap_or(".");
    let dir = app
        .settings
        .paths
        .check(shown, Op::Exec, &app.base_dir)
        .map_err(|refusal| ApiError::from(refusal).with_param("cwd"))?;
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(ApiError::new(
            Code::NotADirectory,
            format!("`cwd` {} is not a directory", dir.display()),
        )
        .with_param("cwd")),
        Err(_) => Err(ApiError::new(
            Code::NotFound,
            format!("`cwd` {} does not exist", dir.display()),
        )
        .with_param("cwd")),
    }
}

/// The child's complete environment: the operator's base (`server.child_env`) with the
/// changes made through `POST /system/env` over it, then the caller's variables, each
/// judged first.
pub fn child_env(
    app: &AppState,
    extra: &BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, ApiError> {
    app.settings.exec.judge_env(extra)?;
    Ok(app.env_overlay.with(
        &app.settings.child_env,
        extra.iter().map(|(k, v)| (k.clone(), v.clone())),
    ))
}

/// The `PATH` a child with `env` searches (the login default when it has none).
fn search_path(env: &[(String, String)]) -> &str {
    env.iter()
        .find(|(k, _)| k == "PATH")
        .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str())
}

/// The file `program` names for a child with `env` in `cwd`, as a full path.
pub fn program_path(program: &str, env: &[(String, String)], cwd: &Path) -> Option<PathBuf> {
    crate::services::search_path::resolve(program, search_path(env), cwd)
}

/// Judges `command` for `identity`, run in `cwd` with `env` (whose `PATH` finds the
/// program).
pub fn admit_command(
    app: &AppState,
    identity: &Identity,
    command: &CommandLine,
    env: &[(String, String)],
    cwd: &Path,
) -> Result<(), ApiError> {
    let holds = |scope: &str| identity.has_scope(scope);
    app.settings
        .exec
        .judge(command, &holds, search_path(env), cwd)
        .map_err(ApiError::from)
}

/// Judges one program run without arguments (a terminal's shell).
pub fn admit_program(
    app: &AppState,
    identity: &Identity,
    program: &str,
    env: &[(String, String)],
    cwd: &Path,
) -> Result<(), ApiError> {
    let command = CommandLine::Direct {
        program: program.to_owned(),
        args: Vec::new(),
    };
    admit_command(app, identity, &command, env, cwd)
}
