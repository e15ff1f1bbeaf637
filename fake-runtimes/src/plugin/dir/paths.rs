//! Paths of a sandbox: relative ones start at its home, absolute ones must be inside it,
//! and no link on the way may lead out. Entry info is the engine's shape: `{name, path,
//! type, size, mode, modified_at, symlink_target?}`.
//!
//! The checks look at the file system before the operation: a process of the sandbox
//! swapping a folder for a link in between could still race them (the builtin `local`
//! opens every component beneath the home instead; an example keeps it short).

use super::store::rfc3339;
use crate::plugin::Fault;
use serde_json::{Value, json};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

pub fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// `raw` as an absolute path inside `home` (canonical), or `E4005` / `E4001`; `E4006` when
/// it ends in `/` and names something that is not a directory.
pub fn resolve(home: &Path, raw: &str) -> Result<PathBuf, Fault> {
    if raw.is_empty() || raw.contains('\0') {
        return Err(Fault::new(
            "E4001",
            "a path must be non-empty, without NUL bytes",
        ));
    }
    let mut normal = PathBuf::from("/");
    for part in home.join(raw).components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::Normal(name) => normal.push(name),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    let outside = || {
        Fault::new(
            "E4005",
            format!("`{}` is outside the sandbox", shown(&normal)),
        )
        .suggest("use a path inside the sandbox (relative paths start at its folder)")
    };
    if !normal.starts_with(home) {
        return Err(outside());
    }
    if normal == home {
        return Ok(normal);
    }
    // The deepest folder on the way that exists, with its links followed, must be inside.
    let mut existing = normal.parent().unwrap_or(home).to_path_buf();
    while std::fs::symlink_metadata(&existing).is_err() {
        existing.pop();
    }
    if !existing
        .canonicalize()
        .is_ok_and(|real| real.starts_with(home))
    {
        return Err(outside());
    }
    // `a.txt/` names a directory, as the kernel reads it (ENOTDIR), never the file `a.txt`.
    // Asked only once the path is known to be inside: the answer says what is there.
    let trimmed = raw.trim_end_matches("/.");
    let names_directory = trimmed.ends_with('/') || trimmed.len() < raw.len();
    if names_directory {
        // A link there is followed to say what it names only when it stays inside.
        follow(home, &normal)?;
    }
    if names_directory && std::fs::metadata(&normal).is_ok_and(|m| !m.is_dir()) {
        return Err(Fault::new(
            "E4006",
            format!("`{}` is not a directory", shown(&normal)),
        ));
    }
    Ok(normal)
}

/// For what reads or writes through the last component: a link there must stay inside.
pub fn follow(home: &Path, path: &Path) -> Result<(), Fault> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(());
    }
    match path.canonicalize() {
        Ok(real) if real.starts_with(home) => Ok(()),
        _ => Err(Fault::new(
            "E4005",
            format!("`{}` is a link that leads out of the sandbox", shown(path)),
        )),
    }
}

pub fn missing(path: &Path) -> Fault {
    Fault::new("E2004", format!("`{}` does not exist", shown(path)))
}

/// An I/O error as a row of the table.
pub fn io_fault(path: &Path, e: &std::io::Error) -> Fault {
    use std::io::ErrorKind::*;
    let p = shown(path);
    match e.kind() {
        NotFound => missing(path),
        AlreadyExists => Fault::new("E4004", format!("`{p}` already exists")),
        IsADirectory => Fault::new("E4006", format!("`{p}` is a directory")),
        NotADirectory => Fault::new("E4006", format!("a part of `{p}` is not a directory")),
        DirectoryNotEmpty => Fault::new("E4006", format!("`{p}` is a directory that is not empty"))
            .suggest("pass `recursive=true` to remove it whole"),
        _ => Fault::new("E9001", format!("`{p}`: {e}")),
    }
}

/// Entry info of `path`, as `lstat` sees it (a link is described, not followed).
pub fn entry(path: &Path) -> Result<Value, Fault> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| io_fault(path, &e))?;
    let kind = if meta.is_symlink() {
        "symlink"
    } else if meta.is_dir() {
        "dir"
    } else if meta.is_file() {
        "file"
    } else {
        "other"
    };
    let mut entry = json!({
        "name": path.file_name().map_or("/".into(), |n| n.to_string_lossy().into_owned()),
        "path": shown(path),
        "type": kind,
        "size": meta.len(),
        "mode": format!("{:04o}", meta.permissions().mode() & 0o7777),
        "modified_at": rfc3339(meta.mtime().max(0) as u64 * 1000),
    });
    if meta.is_symlink() {
        let target = std::fs::read_link(path).map_err(|e| io_fault(path, &e))?;
        entry["symlink_target"] = json!(shown(&target));
    }
    Ok(entry)
}
