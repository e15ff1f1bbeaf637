//! Writing, reading and listing files beneath a directory without ever following a symbolic
//! link. Where the kernel has it (Linux 5.6+), a path is resolved by one
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, which refuses every link on the way
//! and any escape from the starting directory; otherwise, and to name what failed, each
//! directory is opened relative to its parent's descriptor with `O_NOFOLLOW`. Either way a
//! link swapped in while a request runs makes the call fail instead of landing outside.

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{Mode, mkdirat};
use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a link-safe open or write failed. The path is the one the caller would recognise
/// (the directory and the part walked so far).
#[derive(Debug)]
pub enum BeneathError {
    /// A symbolic link on the way; links are never followed.
    Link(PathBuf),
    /// A component that has to be a directory is something else.
    NotDirectory(PathBuf),
    /// The file exists with other content.
    Exists(PathBuf),
    /// What the filesystem said otherwise.
    Io(PathBuf, std::io::Error),
}

impl fmt::Display for BeneathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BeneathError::Link(path) => write!(
                f,
                "`{}` is a symbolic link; links are never followed in a workspace",
                path.display()
            ),
            BeneathError::NotDirectory(path) => {
                write!(f, "`{}` is not a directory", path.display())
            }
            BeneathError::Exists(path) => write!(
                f,
                "`{}` already exists with different content",
                path.display()
            ),
            BeneathError::Io(path, e) => write!(f, "cannot write `{}`: {e}", path.display()),
        }
    }
}

impl std::error::Error for BeneathError {}

#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    Created,
    /// The file was already there with exactly these bytes.
    Unchanged,
}

/// How a path is resolved: by the kernel when it can (falling back to the walk), or always
/// by the walk (tests run both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolve {
    Kernel,
    Walk,
}

/// Cleared the first time the kernel answers `ENOSYS`, so later calls walk at once.
static OPENAT2: AtomicBool = AtomicBool::new(true);

const DIR: OFlag = OFlag::O_DIRECTORY
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_RDONLY)
    .union(OFlag::O_CLOEXEC);
const READ: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC)
    .union(OFlag::O_NONBLOCK);

/// `rel` opened beneath `dir` by one `openat2` that refuses every link and any way out;
/// `None` when the kernel lacks it or refuses, leaving the decision (and the naming of what
/// failed) to the walk.
fn by_kernel(resolve: Resolve, dir: &OwnedFd, rel: &Path, flags: OFlag) -> Option<OwnedFd> {
    if resolve == Resolve::Walk || !OPENAT2.load(Ordering::Relaxed) || rel.as_os_str().is_empty() {
        return None;
    }
    let how = OpenHow::new()
        .flags(flags)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
    match openat2(dir, rel, how) {
        Ok(fd) => Some(fd),
        Err(Errno::ENOSYS) => {
            OPENAT2.store(false, Ordering::Relaxed);
            None
        }
        Err(_) => None,
    }
}

/// `rel` opened beneath `dir` by one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`:
/// `None` when the kernel lacks it or refuses (a link, a missing component, a way out), and
/// the caller then walks one component at a time to decide and name what failed.
pub fn kernel_open(dir: &OwnedFd, rel: &Path, flags: OFlag) -> Option<OwnedFd> {
    by_kernel(Resolve::Kernel, dir, rel, flags)
}

/// The normal components of `path`; `None` when it has any other (`..`, a root).
fn normal_parts(path: &Path) -> Option<Vec<&OsStr>> {
    path.components()
        .map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect()
}

/// Opens the absolute directory `path` one component at a time from `/`, never following a
/// link, and creating the components that are missing when `create` (so a link swapped in
/// while this runs makes it fail instead of creating or landing anywhere else). Without
/// `create`, a missing component ends the walk with `None`: nothing below it can be a link.
pub fn open_dir_nofollow(path: &Path, create: bool) -> Result<Option<OwnedFd>, BeneathError> {
    open_dir(Resolve::Kernel, path, create)
}

fn open_dir(resolve: Resolve, path: &Path, create: bool) -> Result<Option<OwnedFd>, BeneathError> {
    let mut dir: OwnedFd = File::open("/")
        .map_err(|e| BeneathError::Io(path.to_path_buf(), e))?
        .into();
    let parts: Vec<&OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    let rel: PathBuf = parts.iter().collect();
    if let Some(fd) = by_kernel(resolve, &dir, &rel, DIR) {
        return Ok(Some(fd));
    }
    let mut walked = PathBuf::from("/");
    for part in parts {
        walked.push(part);
        if create {
            match mkdirat(&dir, part, Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(BeneathError::Io(walked, e.into())),
            }
        }
        dir = match openat(&dir, part, DIR, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) if !create => return Ok(None),
            Err(e) => return Err(link_or_io(&walked, Path::new(""), e)),
        };
    }
    Ok(Some(dir))
}

/// `path` with the links of its existing part resolved (the part that does not exist yet is
/// kept as written): how an operator's configured directory is made walkable by
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

/// Writes `bytes` to `dir/rel` (`rel` relative, without `..`), creating directories as
/// needed. An existing file with the same bytes is left as it is; with other bytes it is
/// [`BeneathError::Exists`]. Neither `dir`'s own path nor anything below it is ever
/// followed through a link.
pub fn write_beneath(dir: &Path, rel: &Path, bytes: &[u8]) -> Result<Written, BeneathError> {
    write(Resolve::Kernel, dir, rel, bytes)
}

fn write(
    resolve: Resolve,
    workspace: &Path,
    rel: &Path,
    bytes: &[u8],
) -> Result<Written, BeneathError> {
    let mut dir = open_dir(resolve, workspace, true)?.expect("created when missing");
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let (name, parents) = parts.split_last().expect("a relative path is never empty");
    let parent: PathBuf = parents.iter().collect();
    match by_kernel(resolve, &dir, &parent, DIR) {
        Some(fd) => dir = fd,
        None => {
            let mut walked = PathBuf::new();
            for part in parents {
                walked.push(part);
                match mkdirat(&dir, *part, Mode::from_bits_truncate(0o755)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(BeneathError::Io(workspace.join(&walked), e.into())),
                }
                dir = openat(&dir, *part, DIR, Mode::empty())
                    .map_err(|e| link_or_io(workspace, &walked, e))?;
            }
        }
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
                return Err(BeneathError::Io(workspace.join(rel), e));
            }
            Ok(Written::Created)
        }
        // O_EXCL also fails on a link, which the read-only open below then names.
        Err(Errno::EEXIST) => {
            let fd = openat(&dir, *name, READ, Mode::empty())
                .map_err(|e| link_or_io(workspace, rel, e))?;
            let mut file = File::from(fd);
            let meta = file
                .metadata()
                .map_err(|e| BeneathError::Io(workspace.join(rel), e))?;
            let exists = || BeneathError::Exists(workspace.join(rel));
            if !meta.is_file() || meta.len() != bytes.len() as u64 {
                return Err(exists());
            }
            let mut current = Vec::with_capacity(bytes.len());
            file.read_to_end(&mut current)
                .map_err(|e| BeneathError::Io(workspace.join(rel), e))?;
            if current == bytes {
                Ok(Written::Unchanged)
            } else {
                Err(exists())
            }
        }
        Err(e) => Err(link_or_io(workspace, rel, e)),
    }
}

/// The bytes of the regular file `dir/rel` when it is at most `cap` long, opened like
/// [`write_beneath`] without following any link; `None` for anything else.
pub fn read_beneath(dir: &Path, rel: &Path, cap: u64) -> Option<Vec<u8>> {
    read(Resolve::Kernel, dir, rel, cap)
}

fn read(resolve: Resolve, workspace: &Path, rel: &Path, cap: u64) -> Option<Vec<u8>> {
    let mut dir: OwnedFd = File::open(workspace).ok()?.into();
    let parts = normal_parts(rel)?;
    let (name, parents) = parts.split_last()?;
    let fd = match by_kernel(resolve, &dir, rel, READ) {
        Some(fd) => fd,
        None => {
            for part in parents {
                dir = openat(&dir, *part, DIR, Mode::empty()).ok()?;
            }
            openat(&dir, *name, READ, Mode::empty()).ok()?
        }
    };
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
fn link_or_io(dir: &Path, rel: &Path, e: Errno) -> BeneathError {
    // An empty `rel` names `dir` itself: joining it would add a trailing slash, through
    // which `symlink_metadata` follows the link and misses it.
    let full = if rel.as_os_str().is_empty() {
        dir.to_path_buf()
    } else {
        dir.join(rel)
    };
    let is_link = std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink());
    if is_link || e == Errno::ELOOP {
        BeneathError::Link(full)
    } else if e == Errno::ENOTDIR {
        BeneathError::NotDirectory(full)
    } else {
        BeneathError::Io(full, e.into())
    }
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

    fn writes_are_idempotent_and_never_follow_links(resolve: Resolve) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let rel = Path::new("a/b/c.txt");
        let write = |rel: &Path, bytes: &[u8]| write(resolve, &ws, rel, bytes);
        let read = |rel: &str, cap| read(resolve, &ws, Path::new(rel), cap);
        assert_eq!(write(rel, b"one").unwrap(), Written::Created);
        assert_eq!(write(rel, b"one").unwrap(), Written::Unchanged);
        let err = write(rel, b"two").unwrap_err();
        assert!(matches!(err, BeneathError::Exists(_)), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` already exists with different content",
                ws.join(rel).display()
            )
        );

        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
        let err = write(Path::new("link/x.txt"), b"x").unwrap_err();
        assert!(
            matches!(&err, BeneathError::Link(p) if p == &ws.join("link")),
            "{err}"
        );
        assert!(!outside.join("x.txt").exists());
        let err = write(Path::new("link/deeper/x.txt"), b"x").unwrap_err();
        assert!(
            matches!(&err, BeneathError::Link(p) if p == &ws.join("link")),
            "{err}"
        );
        assert!(!outside.join("deeper").exists());

        std::os::unix::fs::symlink(outside.join("target"), ws.join("dangling")).unwrap();
        let err = write(Path::new("dangling"), b"x").unwrap_err();
        assert!(matches!(err, BeneathError::Link(_)), "{err}");
        assert!(!outside.join("target").exists());

        std::fs::write(ws.join("plain"), b"").unwrap();
        let err = write(Path::new("plain/x.txt"), b"x").unwrap_err();
        assert!(matches!(err, BeneathError::NotDirectory(_)), "{err}");

        assert_eq!(read("a/b/c.txt", 10).as_deref(), Some(&b"one"[..]));
        assert_eq!(read("a/b/c.txt", 2), None, "over the cap");
        std::fs::write(outside.join("secret"), b"outside").unwrap();
        assert_eq!(read("link/secret", 100), None, "never through a link");
        assert_eq!(read("../outside/secret", 100), None);
        std::fs::remove_file(outside.join("secret")).unwrap();

        let mut files = regular_files(&ws);
        files.sort();
        assert_eq!(
            files,
            vec![(PathBuf::from("a/b/c.txt"), 3), (PathBuf::from("plain"), 0)]
        );
    }

    #[test]
    fn by_the_kernel() {
        writes_are_idempotent_and_never_follow_links(Resolve::Kernel);
    }

    #[test]
    fn by_the_walk() {
        writes_are_idempotent_and_never_follow_links(Resolve::Walk);
    }

    #[test]
    fn directories_are_opened_without_links() {
        for resolve in [Resolve::Kernel, Resolve::Walk] {
            let tmp = tempfile::tempdir().unwrap();
            let root = without_links(tmp.path());
            let real = root.join("real");
            assert!(
                open_dir(resolve, &real, false).unwrap().is_none(),
                "missing"
            );
            assert!(
                open_dir(resolve, &real.join("x/y"), true)
                    .unwrap()
                    .is_some()
            );
            assert!(real.join("x/y").is_dir(), "created");
            assert!(
                open_dir(resolve, &real.join("x/y"), false)
                    .unwrap()
                    .is_some()
            );
            std::os::unix::fs::symlink(&real, root.join("via")).unwrap();
            // Refused either way; the walk names a link to a directory "not a directory"
            // (its no-follow open says ENOTDIR), as it always has.
            let err = open_dir(resolve, &root.join("via/x"), false).unwrap_err();
            assert!(
                matches!(&err, BeneathError::Link(_) | BeneathError::NotDirectory(_)),
                "{resolve:?}: {err}"
            );
            let err = open_dir(resolve, &root.join("via/new"), true).unwrap_err();
            assert!(
                matches!(&err, BeneathError::Link(_) | BeneathError::NotDirectory(_)),
                "{resolve:?}: {err}"
            );
            assert!(
                !real.join("new").exists(),
                "nothing created through the link"
            );
        }
    }
}
