//! Writing and listing files beneath a workspace without ever following a symbolic link.
//! Each directory is opened relative to its parent's descriptor with `O_NOFOLLOW`, so a link
//! swapped in while a request runs makes the write fail instead of landing outside.

use crate::error::{ApiError, Code};
use crate::server::agents::environments::paths::{refused, shown};
use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, mkdirat};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    Created,
    /// The file was already there with exactly these bytes.
    Unchanged,
}

/// Opens the absolute directory `path` one component at a time from `/`, never following a
/// link, and creating the components that are missing when `create` (so a link swapped in
/// while this runs makes it fail instead of creating or landing anywhere else). Without
/// `create`, a missing component ends the walk with `None`: nothing below it can be a link.
pub fn open_dir_nofollow(path: &Path, create: bool) -> Result<Option<OwnedFd>, ApiError> {
    let mut dir: OwnedFd = File::open("/").map_err(|e| io_error(path, e))?.into();
    let mut walked = PathBuf::from("/");
    for component in path.components() {
        let Component::Normal(part) = component else {
            continue;
        };
        walked.push(part);
        if create {
            match mkdirat(&dir, part, Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(io_error(&walked, e.into())),
            }
        }
        dir = match openat(
            &dir,
            part,
            OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) if !create => return Ok(None),
            Err(e) => return Err(link_or_io(&walked, Path::new(""), e)),
        };
    }
    Ok(Some(dir))
}

/// `path` with the links of its existing part resolved (the part that does not exist yet is
/// kept as written): how the operator's configured workspace is made walkable by
/// [`open_dir_nofollow`].
pub fn without_links(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Writes `bytes` to `workspace/rel`, creating directories as needed. An existing file with
/// the same bytes is left as it is; with other bytes it is `agents.file_exists`. Neither the
/// workspace's own path nor anything below it is ever followed through a link.
pub fn write_beneath(workspace: &Path, rel: &Path, bytes: &[u8]) -> Result<Written, ApiError> {
    let mut dir = open_dir_nofollow(workspace, true)?.expect("created when missing");
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let (name, parents) = parts.split_last().expect("a relative path is never empty");
    let mut walked = PathBuf::new();
    for part in parents {
        walked.push(part);
        match mkdirat(&dir, *part, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(io_error(&workspace.join(&walked), e.into())),
        }
        dir = openat(
            &dir,
            *part,
            OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| link_or_io(workspace, &walked, e))?;
    }
    let created = openat(
        &dir,
        *name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o644),
    );
    match created {
        Ok(fd) => {
            let mut file = File::from(fd);
            if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_data()) {
                let _ = nix::unistd::unlinkat(&dir, *name, nix::unistd::UnlinkatFlags::NoRemoveDir);
                return Err(io_error(&workspace.join(rel), e));
            }
            Ok(Written::Created)
        }
        // O_EXCL also fails on a link, which the read-only open below then names.
        Err(Errno::EEXIST) => {
            let fd = openat(
                &dir,
                *name,
                OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
                Mode::empty(),
            )
            .map_err(|e| link_or_io(workspace, rel, e))?;
            let mut file = File::from(fd);
            let meta = file
                .metadata()
                .map_err(|e| io_error(&workspace.join(rel), e))?;
            let exists = || {
                ApiError::new(
                    Code::AgentsFileExists,
                    format!(
                        "`{}` already exists with different content",
                        shown(workspace, rel)
                    ),
                )
                .with_param("path")
            };
            if !meta.is_file() || meta.len() != bytes.len() as u64 {
                return Err(exists());
            }
            let mut current = Vec::with_capacity(bytes.len());
            file.read_to_end(&mut current)
                .map_err(|e| io_error(&workspace.join(rel), e))?;
            if current == bytes {
                Ok(Written::Unchanged)
            } else {
                Err(exists())
            }
        }
        Err(e) => Err(link_or_io(workspace, rel, e)),
    }
}

/// The bytes of the regular file `workspace/rel` when it is at most `cap` long, opened
/// like `write_beneath` without following any link; `None` for anything else.
pub fn read_beneath(workspace: &Path, rel: &Path, cap: u64) -> Option<Vec<u8>> {
    let mut dir: OwnedFd = File::open(workspace).ok()?.into();
    let parts: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let (name, parents) = parts.split_last()?;
    for part in parents {
        dir = openat(
            &dir,
            *part,
            OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
    }
    let fd = openat(
        &dir,
        *name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
        Mode::empty(),
    )
    .ok()?;
    let file = File::from(fd);
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > cap {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= cap).then_some(bytes)
}

/// A failed no-follow open: a link (ELOOP, or ENOTDIR for a link to a file) is refused by
/// name; anything else is an I/O error.
fn link_or_io(workspace: &Path, rel: &Path, e: Errno) -> ApiError {
    let full = workspace.join(rel);
    let is_link = std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink());
    if is_link || e == Errno::ELOOP {
        refused(
            Code::PathRefused,
            format!(
                "`{}` is a symbolic link; links are never followed in a workspace",
                full.display()
            ),
        )
    } else if e == Errno::ENOTDIR {
        refused(
            Code::PathRefused,
            format!("`{}` is not a directory", full.display()),
        )
    } else {
        io_error(&full, e.into())
    }
}

pub fn io_error(path: &Path, e: std::io::Error) -> ApiError {
    ApiError::new(
        Code::InvalidRequest,
        format!("cannot write `{}`: {e}", path.display()),
    )
    .with_param("path")
}

/// Every regular file under `dir` (links and special files are skipped, never followed), as
/// paths relative to `dir` with their sizes.
pub fn regular_files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let child = rel.join(entry.file_name());
            if kind.is_dir() {
                pending.push(child);
            } else if kind.is_file()
                && let Ok(meta) = entry.metadata()
            {
                out.push((child, meta.len()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_idempotent_and_never_follow_links() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let rel = Path::new("a/b/c.txt");
        assert_eq!(write_beneath(&ws, rel, b"one").unwrap(), Written::Created);
        assert_eq!(write_beneath(&ws, rel, b"one").unwrap(), Written::Unchanged);
        assert_eq!(
            write_beneath(&ws, rel, b"two").unwrap_err().code,
            Code::AgentsFileExists
        );

        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
        let err = write_beneath(&ws, Path::new("link/x.txt"), b"x").unwrap_err();
        assert_eq!(err.code, Code::PathRefused, "{}", err.message);
        assert!(!outside.join("x.txt").exists());

        std::os::unix::fs::symlink(outside.join("target"), ws.join("dangling")).unwrap();
        let err = write_beneath(&ws, Path::new("dangling"), b"x").unwrap_err();
        assert_eq!(err.code, Code::PathRefused, "{}", err.message);
        assert!(!outside.join("target").exists());

        assert_eq!(
            read_beneath(&ws, Path::new("a/b/c.txt"), 10).as_deref(),
            Some(&b"one"[..])
        );
        assert_eq!(
            read_beneath(&ws, Path::new("a/b/c.txt"), 2),
            None,
            "over the cap"
        );
        std::fs::write(outside.join("secret"), b"outside").unwrap();
        assert_eq!(
            read_beneath(&ws, Path::new("link/secret"), 100),
            None,
            "never through a link"
        );
        assert_eq!(read_beneath(&ws, Path::new("../outside/secret"), 100), None);
        std::fs::remove_file(outside.join("secret")).unwrap();

        let files = regular_files(&ws);
        assert_eq!(files, vec![(PathBuf::from("a/b/c.txt"), 3)]);
    }
}
