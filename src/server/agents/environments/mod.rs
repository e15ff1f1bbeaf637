//! Environments (agents spec 2.7, 4.6): a workspace directory and variables for the runtimes
//! of the sessions that use it, with files written into it at creation. No container is
//! provisioned; a hosted request without configuration is converted and says so.

pub mod config;
pub mod files;
pub mod fs;
pub mod paths;
pub mod templates;
pub mod wire;

use crate::error::ApiError;
use crate::server::agents::Agents;
use crate::server::agents::environments::config::FileSpec;
use crate::server::agents::environments::wire::{
    EnvironmentConfig, EnvironmentObject, LocalCompute, PlacedFile,
};
use crate::server::agents::input::{invalid, not_found};
use crate::services::ids;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Clone)]
pub struct Environment {
    pub id: String,
    pub owner: String,
    pub created_at: i64,
    pub workspace: PathBuf,
    /// Given to every runtime started in this environment; never returned.
    pub env: BTreeMap<String, String>,
    pub files: Vec<FileRecord>,
    pub differences: Vec<String>,
    pub template_id: Option<String>,
}

/// What is shown of a file placed through the API: never its content.
#[derive(Debug, Clone)]
pub struct FileRecord {
    pub id: String,
    pub path: PathBuf,
    pub size: usize,
    pub file_id: Option<String>,
}

impl Environment {
    pub fn object(&self) -> EnvironmentObject {
        EnvironmentObject {
            id: self.id.clone(),
            object: "agent.environment",
            kind: "self_hosted",
            status: "ready",
            workspace_directory: self.workspace.clone(),
            created_at: self.created_at,
            environment_template_id: self.template_id.clone(),
            files: self
                .files
                .iter()
                .map(|f| PlacedFile {
                    id: f.id.clone(),
                    kind: if f.file_id.is_some() {
                        "file_id"
                    } else {
                        "inline"
                    },
                    path: paths::shown(&self.workspace, &f.path),
                    size_bytes: f.size,
                    file_id: f.file_id.clone(),
                })
                .collect(),
            plugins: [],
            skills: [],
            x_svc: LocalCompute {
                compute: "local_state",
                differences: self.differences.clone(),
            },
        }
    }
}

/// A checked configuration: where a runtime works, with what variables, and the files to
/// place there first.
#[derive(Debug, Default)]
pub struct Resolved {
    pub workspace: Option<PathBuf>,
    /// The template's variables, which the configuration's own (`env`) override.
    pub template_env: BTreeMap<String, String>,
    pub env: BTreeMap<String, String>,
    pub files: Vec<FileSpec>,
    pub differences: Vec<String>,
    pub template_id: Option<String>,
}

#[derive(Default)]
pub struct Environments {
    list: Mutex<Vec<Environment>>,
    pub templates: templates::Templates,
}

impl Environments {
    fn lock(&self) -> MutexGuard<'_, Vec<Environment>> {
        self.list.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The caller's environment; another owner's answers like a missing one.
    pub fn get(&self, owner: &str, id: &str) -> Result<Environment, ApiError> {
        self.lock()
            .iter()
            .find(|e| e.id == id && e.owner == owner)
            .cloned()
            .ok_or_else(|| not_found("environment", "environment_id", id))
    }

    fn add_file(&self, id: &str, record: FileRecord) {
        if let Some(env) = self.lock().iter_mut().find(|e| e.id == id) {
            env.files.retain(|f| f.path != record.path);
            env.files.push(record);
        }
    }
}

impl Agents {
    /// POST /v1/agents/environments: the SDK's `{environment: {...}}` or the flat form.
    pub fn environment_create(
        &self,
        owner: &str,
        body: EnvironmentConfig,
    ) -> Result<EnvironmentObject, ApiError> {
        let (config, prefix) = body.into_create()?;
        let resolved = self.resolve_environment(owner, &config, prefix, false)?;
        let workspace = resolved
            .workspace
            .clone()
            .unwrap_or_else(|| self.settings.workspace.clone());
        let written = place_files(&workspace, &resolved.files)?;
        let mut variables = resolved.template_env;
        variables.extend(resolved.env);
        let env = Environment {
            id: ids::new("env"),
            owner: owner.to_owned(),
            created_at: ids::now(),
            workspace,
            env: variables,
            files: written,
            differences: resolved.differences,
            template_id: resolved.template_id,
        };
        let object = env.object();
        self.environments.lock().push(env);
        Ok(object)
    }

    pub fn environment_list(&self, owner: &str) -> Vec<EnvironmentObject> {
        self.environments
            .lock()
            .iter()
            .filter(|e| e.owner == owner)
            .map(Environment::object)
            .collect()
    }

    pub fn environment_get(&self, owner: &str, id: &str) -> Result<EnvironmentObject, ApiError> {
        Ok(self.environments.get(owner, id)?.object())
    }

    /// Checks a configuration object (an environment body, or a session's `environment`).
    /// `session` allows `type: none` and a reference to a created environment.
    pub fn resolve_environment(
        &self,
        owner: &str,
        config: &EnvironmentConfig,
        prefix: &str,
        session: bool,
    ) -> Result<Resolved, ApiError> {
        let p = |name: &str| config::join(prefix, name);
        let mut resolved = Resolved::default();
        match config.kind.as_deref() {
            None | Some("self_hosted") => {}
            Some("none") if session => {}
            Some(hosted @ ("hosted" | "openai_hosted")) => {
                if let Some(key) = config.configured().first() {
                    return Err(invalid(
                        p("type"),
                        format!(
                            "a `{hosted}` environment with configuration (`{key}`) cannot run locally; send `type: self_hosted`"
                        ),
                    ));
                }
                resolved.differences.push(format!(
                    "`type: {hosted}` was converted to `self_hosted`: no hosted container is provisioned, the runtime runs as a local process"
                ));
            }
            Some(other) => {
                return Err(invalid(
                    p("type"),
                    format!(
                        "environment type `{other}` is not available locally; use `self_hosted`"
                    ),
                ));
            }
        }
        config::refuse_hosted_keys(config.hosted(), prefix)?;
        if !session {
            let reference = [
                ("id", &config.id),
                ("environment_id", &config.environment_id),
            ];
            if let Some((key, _)) = reference.iter().find(|(_, v)| v.is_some()) {
                return Err(wire::unknown(&p(key)));
            }
        }
        if let Some(raw) = config.workspace_directory.as_deref() {
            let dir = config::workspace_directory(raw, &p("workspace_directory"))?;
            self.may_write(&dir, &p("workspace_directory"))?;
            // Judged on the path the kernel will open: a link anywhere on the way is refused
            // now, and the directory is created later by the same link-free walk.
            fs::open_dir_nofollow(&dir, false)
                .map_err(|e| e.with_param(p("workspace_directory")))?;
            resolved.workspace = Some(dir);
        }
        let workspace = resolved
            .workspace
            .clone()
            .unwrap_or_else(|| self.settings.workspace.clone());
        if let Some(id) = config.environment_template_id.as_deref() {
            let template = self
                .environments
                .templates
                .get(owner, id)
                .map_err(|e| e.with_param(p("environment_template_id")))?;
            resolved.template_env = template.env;
            resolved.files = template.files;
            resolved.template_id = Some(template.id);
        }
        resolved.env = config::env(config.env.as_ref(), &p("env"))?;
        let inline = config::files(
            config.files.as_deref(),
            &p("files"),
            owner,
            &self.files,
            &workspace,
            self.settings.max_file_bytes,
        )?;
        // Inline files are applied after the template's, so the same path takes the inline one.
        resolved
            .files
            .retain(|t| !inline.iter().any(|f| f.path == t.path));
        resolved.files.extend(inline);
        for (i, file) in resolved.files.iter().enumerate() {
            self.may_write(
                &workspace.join(&file.path),
                &format!("{}[{i}].path", p("files")),
            )?;
        }
        Ok(resolved)
    }

    /// The operator's path policy on a write (allow roots, deny patterns, read-only roots).
    pub fn may_write(&self, path: &Path, param: &str) -> Result<(), ApiError> {
        self.paths
            .check(
                &path.to_string_lossy(),
                crate::services::paths::Op::Write,
                Path::new("/"),
            )
            .map(|_| ())
            .map_err(|refusal| ApiError::from_domain(&refusal).with_param(param))
    }
}

/// Writes every file, or none: the ones this call created are removed again when a later
/// one is refused, so a failed request leaves the workspace as it was.
pub fn place_files(workspace: &Path, files: &[FileSpec]) -> Result<Vec<FileRecord>, ApiError> {
    fs::open_dir_nofollow(workspace, true).map_err(|e| e.with_param("workspace_directory"))?;
    let mut created: Vec<PathBuf> = Vec::new();
    let mut records = Vec::new();
    for file in files {
        match fs::write_beneath(workspace, &file.path, &file.bytes) {
            Ok(written) => {
                if written == fs::Written::Created {
                    created.push(workspace.join(&file.path));
                }
                records.push(record(file));
            }
            Err(e) => {
                for path in &created {
                    let _ = std::fs::remove_file(path);
                }
                return Err(e);
            }
        }
    }
    Ok(records)
}

pub fn record(file: &FileSpec) -> FileRecord {
    FileRecord {
        id: ids::new("envfile"),
        path: file.path.clone(),
        size: file.bytes.len(),
        file_id: file.file_id.clone(),
    }
}
