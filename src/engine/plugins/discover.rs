//! Where plugins are found: the executable files of `<state_dir>/plugins/` (trust `user`),
//! then the paths of `SVC_ENGINE_PLUGINS`, colon-separated, each a file or a folder of
//! executables (trust `environment`). A folder's files come in name order; one path found
//! twice is started once. A path the variable names that cannot be started is still a
//! source, with its problem, so the provider list says what is wrong with it.

use super::host::Source;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub const PLUGINS_VAR: &str = "SVC_ENGINE_PLUGINS";

/// Every plugin source, in order (the first to claim an id keeps it).
pub fn sources(state_dir: &Path, variable: Option<&OsStr>) -> Vec<Source> {
    let mut found = Vec::new();
    let folder = state_dir.join("plugins");
    if folder.is_dir() {
        found.extend(folder_sources(&folder, "user"));
    }
    for raw in variable.map(std::env::split_paths).into_iter().flatten() {
        if raw.as_os_str().is_empty() {
            continue;
        }
        if raw.is_dir() {
            found.extend(folder_sources(&raw, "environment"));
        } else {
            let problem =
                problem(&raw).map(|p| format!("{PLUGINS_VAR} names {}: {p}", raw.display()));
            found.push(source(raw, "environment", problem));
        }
    }
    // The same file twice: its folder may be named two ways, but a link under another
    // name is another plugin (the broken plugin's faults are links to one binary).
    let mut seen: Vec<PathBuf> = Vec::new();
    found.retain(|s| {
        let folder = s.path.parent().and_then(|p| p.canonicalize().ok());
        let key = match (folder, s.path.file_name()) {
            (Some(folder), Some(name)) => folder.join(name),
            _ => s.path.clone(),
        };
        let first = !seen.contains(&key);
        seen.push(key);
        first
    });
    found
}

/// The executable files of a folder, by name; hidden files and anything else are skipped
/// (a README beside the plugins is no plugin).
fn folder_sources(folder: &Path, trust: &'static str) -> Vec<Source> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        tracing::warn!(folder = %folder.display(), "the plugins folder cannot be read");
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .filter(|p| problem(p).is_none())
        .collect();
    paths.sort();
    paths.into_iter().map(|p| source(p, trust, None)).collect()
}

fn source(path: PathBuf, trust: &'static str, problem: Option<String>) -> Source {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Source {
        path,
        name,
        trust,
        problem,
    }
}

/// Why `path` cannot be started as a plugin, if it cannot (links are followed).
fn problem(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("it does not exist".into()),
        Err(e) => Some(format!("it cannot be read: {e}")),
        Ok(meta) if !meta.is_file() => Some("it is not a file".into()),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Some("it is not executable".into()),
        Ok(_) => None,
    }
}
