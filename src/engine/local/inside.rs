//! Where, as whom and through what a sandbox's process starts. In an isolated sandbox
//! every path a caller gives is a path of its machine (absolute, or relative to
//! `/home/user`), the program is looked for on the machine's `PATH`, and the process
//! enters the machine (`nsenter`) as `user` or `root`; without isolation a path is one of
//! the host inside the sandbox's folder and everything runs as the engine's user.
//! Either way the process joins the sandbox's cgroup first, where it has one.

use super::super::provider::ProviderResult;
use super::env;
use super::sandbox::Core;
use crate::error::engine::{Code, EngineError};
use crate::services::cgroup::Cgroup;
use crate::services::files::Op;
use crate::services::namespaces::{Identity, Machine, Tools, View};
use crate::services::supervisor::Spec;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::new(Code::InvalidArgument, message)
}

/// A directory of the sandbox, as the engine reaches it and as its processes name it.
#[derive(Debug, Clone)]
pub struct Place {
    pub host: PathBuf,
    pub shown: String,
}

/// The sandbox's home.
pub fn home(core: &Core) -> Place {
    Place {
        host: core.home.clone(),
        shown: shown_home(core),
    }
}

/// What the sandbox's processes call its home.
pub fn shown_home(core: &Core) -> String {
    match &core.isolated {
        Some(_) => crate::services::namespaces::HOME.to_owned(),
        None => core.home.display().to_string(),
    }
}

/// The host path of a path a caller gave, judged as the sandbox's file routes judge it:
/// in an isolated sandbox the machine's path mapped to its folders (`E4005` outside
/// them), else the path itself.
pub fn host_path(core: &Core, raw: &str) -> ProviderResult<String> {
    match &core.isolated {
        Some(isolated) => isolated
            .view
            .to_host(raw)
            .map(|p| {
                // The view normalizes: a trailing `/` (or `/.`) is kept, since `a.txt/`
                // names a directory, never `a.txt`.
                let mut host = p.display().to_string();
                if crate::services::files::names_directory(raw) && !host.ends_with('/') {
                    host.push('/');
                }
                host
            })
            .map_err(|e| EngineError::new(Code::PathNotAllowed, e.to_string())),
        None => Ok(raw.to_owned()),
    }
}

/// `cwd` of a body: the home when absent; an existing directory of the sandbox.
pub fn working_dir(core: &Core, cwd: Option<&str>) -> ProviderResult<Place> {
    let Some(raw) = cwd else {
        return Ok(home(core));
    };
    let resolved = core
        .files
        .decide(&host_path(core, raw)?, Op::List)
        .map_err(|e| redacted(core, EngineError::from_domain(&e)))?;
    if !resolved.path.is_dir() {
        return Err(EngineError::new(
            if resolved.exists {
                Code::WrongFileType
            } else {
                Code::FileNotFound
            },
            format!("`cwd` {raw} is not a directory of the sandbox"),
        ));
    }
    let shown = match &core.isolated {
        Some(isolated) => isolated
            .view
            .to_inside(&resolved.path)
            .unwrap_or_else(|| View::inside(raw))
            .display()
            .to_string(),
        None => resolved.path.display().to_string(),
    };
    Ok(Place {
        host: resolved.path,
        shown,
    })
}

/// `user`: in an isolated sandbox `user` (the default) or `root`; without isolation the
/// engine's own user, the only one there is.
pub fn identity(core: &Core, user: Option<&str>) -> ProviderResult<Option<Identity>> {
    let Some(isolated) = &core.isolated else {
        let me = env::user_name();
        return match user {
            Some(user) if user != me => Err(invalid(format!(
                "sandbox `{}` has no isolation and runs as {me}: `user` must be `{me}` or left out, not `{user}`",
                core.id
            ))),
            _ => Ok(None),
        };
    };
    let who = match user {
        None => Identity::User,
        Some(name) => Identity::parse(name).ok_or_else(|| {
            invalid(format!(
                "`user` must be `user` (the default) or `root`, not `{name}`"
            ))
        })?,
    };
    if isolated.tools.ids.host(who).is_none() {
        return Err(invalid(
            "`user` root is not available: the engine runs as an ordinary user, so its \
             sandboxes have only `user` (run the engine as root for a root inside)",
        ));
    }
    Ok(Some(who))
}

/// `env` for a process running as `who` (root's own name and home variables).
pub fn env_for(mut env: Vec<(String, String)>, who: Option<Identity>) -> Vec<(String, String)> {
    if who == Some(Identity::Root) {
        let mark = env.pop();
        env.extend([
            ("USER".to_owned(), "root".to_owned()),
            ("LOGNAME".to_owned(), "root".to_owned()),
        ]);
        env.extend(mark);
    }
    env
}

/// The program `name` on the sandbox's `PATH` (or as a path from `cwd`), as the process
/// names it.
pub fn program(
    core: &Core,
    env: &[(String, String)],
    name: &str,
    cwd: &Place,
) -> ProviderResult<String> {
    let search = env::get(env, "PATH").unwrap_or_default();
    let missing = || {
        invalid(format!(
            "no program `{name}` in sandbox `{}` (not on its PATH, or not executable)",
            core.id
        ))
    };
    let Some(isolated) = &core.isolated else {
        return crate::services::search_path::resolve(name, search, &cwd.host)
            .map(|p| p.display().to_string())
            .ok_or_else(missing);
    };
    let candidates: Vec<PathBuf> = if name.contains('/') {
        vec![Path::new(&cwd.shown).join(name)]
    } else {
        search
            .split(':')
            .filter(|dir| !dir.is_empty())
            .map(|dir| Path::new(&cwd.shown).join(dir).join(name))
            .collect()
    };
    candidates
        .into_iter()
        .map(|inside| View::inside(&inside.display().to_string()))
        .find(|inside| {
            let host = isolated
                .view
                .to_host(&inside.display().to_string())
                .ok()
                .or_else(|| {
                    crate::services::namespaces::launch::SYSTEM
                        .iter()
                        .any(|dir| inside.starts_with(dir))
                        .then(|| inside.clone())
                });
            host.is_some_and(|h| executable(&h))
        })
        .map(|p| p.display().to_string())
        .ok_or_else(missing)
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How a process of the sandbox is started inside it: through its machine when it has
/// one, after joining its cgroup when it has one. Cloned into what starts processes later
/// (a code context's interpreter).
#[derive(Clone)]
pub struct Confiner {
    machine: Option<(Arc<Tools>, Machine)>,
    cgroup: Option<Cgroup>,
}

pub fn confiner(core: &Core) -> Confiner {
    Confiner {
        machine: core
            .isolated
            .as_ref()
            .map(|i| (i.tools.clone(), i.machine.clone())),
        cgroup: core.cgroup.clone(),
    }
}

impl Confiner {
    /// `program args` made to start as `who` (checked by [`identity`]) in `cwd`: a spec
    /// with the program, its arguments, the folder to spawn it in (none when the machine
    /// sets it) and the cgroup the child joins before it runs; the caller fills in the
    /// rest. Never the host instead.
    pub fn apply(
        &self,
        who: Option<Identity>,
        cwd: &Place,
        program: String,
        args: Vec<String>,
    ) -> Spec {
        let (program, args, cwd, enter) = match &self.machine {
            Some((tools, machine)) => {
                let who = who.unwrap_or(Identity::User);
                let (program, args, entry) = machine.way_in(tools, who, &cwd.shown, program, args);
                (program, args, None, entry)
            }
            None => (program, args, Some(cwd.host.clone()), None),
        };
        Spec {
            program,
            args,
            cwd,
            enter,
            join_cgroup: self
                .cgroup
                .as_ref()
                .map(Cgroup::join_files)
                .unwrap_or_default(),
            ..Spec::default()
        }
    }
}

/// `error` with the sandbox's host folders named as its processes name them.
pub fn redacted(core: &Core, error: EngineError) -> EngineError {
    match &core.isolated {
        Some(isolated) => EngineError {
            message: isolated.view.redact(&error.message),
            ..error
        },
        None => error,
    }
}

/// The host uid (and gid) of the sandbox's user when what the engine makes must be given
/// to it: a root engine's isolated sandbox (an ordinary engine's files are the user's
/// already, and without isolation there is no other user).
pub fn user_to_give(core: &Core) -> Option<u32> {
    core.isolated
        .as_ref()
        .filter(|isolated| isolated.tools.ids.root.is_some())
        .map(|isolated| isolated.tools.ids.user)
}

/// Gives a file the API is making to the sandbox's user, by its descriptor
/// ([`user_to_give`]; nothing to do otherwise).
pub fn give(user: Option<u32>, file: &std::fs::File) {
    if let Some(user) = user {
        let _ = std::os::unix::fs::fchown(file, Some(user), Some(user));
    }
}

/// Gives what the engine just made at `host` (a file or folder, and the folders made on
/// the way) to the sandbox's user, as if the user had made it: a root engine's own files
/// would be nobody's inside, and read-only to the user. `host` itself may be the user's
/// already (a written file is given before it is renamed into place); the folders above
/// it are given up to the first that is not the engine's.
pub fn own(core: &Core, host: &Path) {
    use std::os::unix::fs::MetadataExt;
    let (Some(user), Some(isolated)) = (user_to_give(core), &core.isolated) else {
        return;
    };
    let folders = [isolated.view.home(), isolated.view.tmp()];
    let mut at = Some(host);
    while let Some(path) = at {
        if folders.contains(&path) || !folders.iter().any(|f| path.starts_with(f)) {
            break;
        }
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.uid() == 0 => {
                let _ = std::os::unix::fs::lchown(path, Some(user), Some(user));
            }
            Ok(_) if path == host => {}
            _ => break,
        }
        at = path.parent();
    }
}

/// `path` (a host path in an answer) as the sandbox's processes name it.
pub fn shown_path(core: &Core, path: &str) -> String {
    match &core.isolated {
        Some(isolated) => isolated.view.redact(path),
        None => path.to_owned(),
    }
}

/// `value` (an answer) with the sandbox's host folders named as its processes name them.
pub fn shown(core: &Core, value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let Some(isolated) = &core.isolated else {
        return value;
    };
    fn walk(view: &View, value: Value) -> Value {
        match value {
            Value::String(text) => Value::String(view.redact(&text)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| walk(view, v)).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, walk(view, v))).collect())
            }
            other => other,
        }
    }
    walk(&isolated.view, value)
}
