//! Which languages a caller may use (`dev_tools.languages`, default every installed one)
//! and where their interpreters are: found on the `PATH` of the environment a child gets
//! (the child base with `POST /system/env`'s changes), in the server's working directory.

use crate::error::ApiError;
use crate::server::AppState;
use crate::server::launch;
use crate::services::code_run::{LANGUAGES, Language};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a child of `app` starting now would find `lang`'s interpreter.
pub fn interpreter(app: &AppState, lang: &Language) -> Result<Option<PathBuf>, ApiError> {
    let env = launch::child_env(app, &BTreeMap::new())?;
    Ok(launch::program_path(lang.program, &env, &app.base_dir))
}

/// The languages `/capabilities` lists under `params.languages`: the configured ones, or
/// every installed one when none are configured.
pub fn offered(app: &AppState) -> Vec<&'static str> {
    LANGUAGES
        .iter()
        .filter(|l| match &app.settings.dev_tools.languages {
            Some(list) => list.contains(&l.name),
            None => matches!(interpreter(app, l), Ok(Some(_))),
        })
        .map(|l| l.name)
        .collect()
}
