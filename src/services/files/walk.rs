//! Resolution on the path the kernel will open. A normalized path is opened beneath the
//! most specific allowed directory that holds it, one component at a time and never
//! through a link (one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` for the parents
//! where the kernel has it, else `O_NOFOLLOW` opens from descriptor to descriptor). A link
//! met on the way is handled here, by the policy: refused (`deny`), or read and its target
//! judged by the guard again before the walk restarts from that target's allowed directory
//! (`within`: every rule; `allow`: the deny and read-only rules). The operation then acts
//! on the last component relative to its parent's descriptor with `*at` calls that do not
//! follow links either, so a link swapped in at any moment never leads anywhere else.

use super::entry::{Entry, EntryKind};
use super::error::FileError;
use crate::services::beneath;
use crate::services::paths::{Op, PathGuard, RefusalKind, SymlinkPolicy, normalize};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat, mkdirat};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// Links followed for one path before it is refused (the kernel's own limit).
pub const MAX_LINK_HOPS: usize = 40;

pub(crate) const DIR: OFlag = OFlag::O_DIRECTORY
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_RDONLY)
    .union(OFlag::O_CLOEXEC);

/// What happens to a link in the last component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Last {
    /// Follow it, judging its target like the path itself (read, write, list, search).
    Follow,
    /// Describe the link itself, but refuse it where following it would be refused (info,
    /// exists, and the capabilities check).
    Judge,
    /// Act on the link itself (delete, the source of a move); refused only by `deny`.
    Keep,
}

/// A located path: its parent directory open, and the name in it (`None`: the allowed
/// directory itself, `dir` being that directory).
#[derive(Debug)]
pub(crate) struct Located {
    /// Normalized and absolute, links on the way resolved.
    pub path: PathBuf,
    pub dir: OwnedFd,
    pub name: Option<OsString>,
}

impl Located {
    pub fn name_or_dot(&self) -> &OsStr {
        self.name.as_deref().unwrap_or(OsStr::new("."))
    }

    /// `lstat` of the entry.
    pub fn lstat(&self) -> nix::Result<FileStat> {
        match &self.name {
            Some(name) => fstatat(&self.dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW),
            None => fstat(&self.dir),
        }
    }

    /// Whether the entry is a directory, or not there (a path that names a directory may
    /// be one still to make). A link counts by its target, as the kernel resolves `link/`,
    /// only where the walk followed it (`last` is not [`Last::Keep`]): a kept link's target
    /// was never judged, and may be outside, where even its type is none of the caller's
    /// business; such a link is no directory.
    pub fn is_directory(&self, last: Last) -> bool {
        let Some(name) = &self.name else {
            return true;
        };
        let of = |stat: FileStat| EntryKind::of_mode(stat.st_mode);
        match self.lstat().map(of) {
            Err(_) | Ok(EntryKind::Dir) => true,
            Ok(EntryKind::Symlink) if last != Last::Keep => {
                fstatat(&self.dir, name.as_os_str(), AtFlags::empty())
                    .is_ok_and(|target| of(target) == EntryKind::Dir)
            }
            Ok(_) => false,
        }
    }

    /// Opens the entry without following a link (`O_NOFOLLOW | O_CLOEXEC` added).
    pub fn open(&self, flags: OFlag) -> nix::Result<OwnedFd> {
        openat(
            &self.dir,
            self.name_or_dot(),
            flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
    }

    /// The entry's info, `lstat` style; `NotFound` when it is not there.
    pub fn entry(&self) -> Result<Entry, FileError> {
        let stat = self.lstat().map_err(|e| self.error(e))?;
        Ok(entry_at(&self.dir, self.name.as_deref(), &self.path, &stat))
    }

    /// An errno about this entry as the service's error.
    pub fn error(&self, e: Errno) -> FileError {
        errno_error(&self.path, e)
    }
}

/// The info of `name` in `dir` (the directory itself for `None`) from its `lstat`, without
/// its metadata ([`with_metadata`] adds it where the service keeps metadata).
pub(crate) fn entry_at(
    dir: &impl std::os::fd::AsFd,
    name: Option<&OsStr>,
    path: &Path,
    stat: &FileStat,
) -> Entry {
    let is_link = stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits();
    let target = match name {
        Some(name) if is_link => readlinkat(dir, name).ok().map(PathBuf::from),
        _ => None,
    };
    Entry::from_stat(path, stat, target, Default::default())
}

/// `entry` (of `name` in `dir`) with its metadata read, when it is a file or a directory
/// (the only kinds that may have user xattrs). A few system calls more per entry: only a
/// service that keeps metadata ([`super::FileService::keeping_metadata`]) asks.
pub(crate) fn with_metadata(
    mut entry: Entry,
    dir: &impl std::os::fd::AsFd,
    name: Option<&OsStr>,
) -> Entry {
    if matches!(entry.kind, EntryKind::File | EntryKind::Dir) {
        entry.metadata = super::metadata::read(dir, name);
    }
    entry
}

/// The common errnos as the service's errors.
pub(crate) fn errno_error(path: &Path, e: Errno) -> FileError {
    match e {
        Errno::ENOENT => FileError::NotFound(path.to_path_buf()),
        Errno::EISDIR => FileError::IsDirectory(path.to_path_buf()),
        Errno::ENOTDIR => FileError::NotDirectory(path.to_path_buf()),
        Errno::ENOTEMPTY => FileError::NotEmpty(path.to_path_buf()),
        Errno::EEXIST => FileError::Exists(path.to_path_buf()),
        Errno::ENAMETOOLONG => FileError::refused(
            RefusalKind::Invalid,
            format!(
                "`{}` has a name longer than the filesystem allows",
                path.display()
            ),
        ),
        Errno::ELOOP => FileError::refused(
            RefusalKind::Symlink,
            format!(
                "`{}` became a symbolic link while the request ran",
                path.display()
            ),
        ),
        e => FileError::io(path, e),
    }
}

/// How the walk goes on after meeting something on the way.
enum Step {
    Done(Located),
    Restart(PathBuf),
}

pub(crate) struct Walker<'a> {
    pub guard: &'a PathGuard,
    /// Never ask the kernel for `openat2`, always walk (tests run both).
    pub walk_only: bool,
}

impl Walker<'_> {
    /// Locates the normalized absolute `path` (already judged for `op`), creating missing
    /// parent directories when `create_parents`.
    pub fn locate(
        &self,
        path: PathBuf,
        op: Op,
        last: Last,
        create_parents: bool,
    ) -> Result<Located, FileError> {
        self.locate_from(path, op, last, create_parents, 0)
    }

    fn locate_from(
        &self,
        mut path: PathBuf,
        op: Op,
        last: Last,
        create_parents: bool,
        mut hops: usize,
    ) -> Result<Located, FileError> {
        loop {
            match self.step(&path, op, last, create_parents, hops)? {
                Step::Done(located) => return Ok(located),
                Step::Restart(next) => {
                    hops += 1;
                    path = next;
                }
            }
        }
    }

    fn step(
        &self,
        path: &Path,
        op: Op,
        last: Last,
        create_parents: bool,
        hops: usize,
    ) -> Result<Step, FileError> {
        // Only `symlinks: allow` can lead outside every allowed directory; it walks from `/`.
        let root = self
            .guard
            .root_of(path)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        let parts: Vec<&OsStr> = path
            .strip_prefix(&root)
            .unwrap_or(Path::new(""))
            .components()
            .filter_map(|c| match c {
                Component::Normal(p) => Some(p),
                _ => None,
            })
            .collect();
        // The operator's directory itself may lie behind links (resolved by the kernel).
        let root_fd: OwnedFd = match File::open(&root) {
            Ok(f) => f.into(),
            Err(e) => {
                return Err(errno_error(
                    &root,
                    Errno::from_raw(e.raw_os_error().unwrap_or(0)),
                ));
            }
        };
        let Some((name, parents)) = parts.split_last() else {
            let is_dir = fstat(&root_fd)
                .map(|s| s.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits())
                .unwrap_or(false);
            if is_dir {
                return Ok(Step::Done(Located {
                    path: path.to_path_buf(),
                    dir: root_fd,
                    name: None,
                }));
            }
            // An allowed path that is a file: its parent, and its name there.
            let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
                return Err(FileError::NotDirectory(root));
            };
            let dir: OwnedFd = File::open(parent)
                .map_err(|e| FileError::io(parent, e))?
                .into();
            return Ok(Step::Done(Located {
                path: path.to_path_buf(),
                dir,
                name: Some(name.to_owned()),
            }));
        };
        let mut dir = root_fd;
        let mut walked = root.clone();
        let by_kernel = if create_parents || self.walk_only || parents.is_empty() {
            None
        } else {
            beneath::kernel_open(&dir, &parents.iter().collect::<PathBuf>(), DIR)
        };
        match by_kernel {
            Some(fd) => {
                dir = fd;
                walked.extend(parents);
            }
            None => {
                for (i, part) in parents.iter().enumerate() {
                    walked.push(part);
                    let mut created = false;
                    loop {
                        match openat(&dir, *part, DIR, Mode::empty()) {
                            Ok(fd) => {
                                dir = fd;
                                break;
                            }
                            Err(Errno::ENOENT) if create_parents && !created => {
                                match mkdirat(&dir, *part, Mode::from_bits_truncate(0o755)) {
                                    Ok(()) | Err(Errno::EEXIST) => created = true,
                                    Err(e) => return Err(errno_error(&walked, e)),
                                }
                            }
                            Err(Errno::ENOENT) => {
                                return Err(FileError::NotFound(walked));
                            }
                            Err(e @ (Errno::ELOOP | Errno::ENOTDIR | Errno::EMLINK)) => {
                                if is_link(&dir, part) {
                                    let rest = &parts[i + 1..];
                                    return self
                                        .follow(&dir, part, &walked, rest, op, hops)
                                        .map(Step::Restart);
                                }
                                return Err(errno_error(&walked, e));
                            }
                            Err(e) => return Err(errno_error(&walked, e)),
                        }
                    }
                }
            }
        }
        walked.push(name);
        let stat = match fstatat(&dir, *name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => Some(stat),
            Err(Errno::ENOENT) => None,
            Err(e) => return Err(errno_error(&walked, e)),
        };
        let link = stat.is_some_and(|s| s.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits());
        if link {
            match last {
                Last::Follow => {
                    return self
                        .follow(&dir, name, &walked, &[], op, hops)
                        .map(Step::Restart);
                }
                Last::Judge => {
                    let target = self.follow(&dir, name, &walked, &[], op, hops)?;
                    // Judge where the chain of links ends; a dangling one is fine to describe.
                    if let Err(e @ FileError::Refused(_)) =
                        self.locate_from(target, op, Last::Follow, false, hops + 1)
                    {
                        return Err(e);
                    }
                }
                Last::Keep => {
                    if self.guard.symlinks() == SymlinkPolicy::Deny {
                        return Err(self.link_refused(&walked));
                    }
                }
            }
        }
        Ok(Step::Done(Located {
            path: walked,
            dir,
            name: Some(name.to_os_string()),
        }))
    }

    fn link_refused(&self, at: &Path) -> FileError {
        FileError::refused(
            RefusalKind::Symlink,
            format!(
                "`{}` is a symbolic link and links are refused",
                at.display()
            ),
        )
    }

    /// The path to walk next after the link `name` in `dir` (at `at`), with `rest` below it,
    /// judged by the policy.
    fn follow(
        &self,
        dir: &OwnedFd,
        name: &OsStr,
        at: &Path,
        rest: &[&OsStr],
        op: Op,
        hops: usize,
    ) -> Result<PathBuf, FileError> {
        let policy = self.guard.symlinks();
        if policy == SymlinkPolicy::Deny {
            return Err(self.link_refused(at));
        }
        if hops >= MAX_LINK_HOPS {
            return Err(FileError::refused(
                RefusalKind::Symlink,
                format!(
                    "`{}`: more than {MAX_LINK_HOPS} symbolic links on the way",
                    at.display()
                ),
            ));
        }
        let mut next = match readlinkat(dir, name) {
            Ok(target) => at.parent().unwrap_or(Path::new("/")).join(target),
            // No longer a link (swapped back meanwhile): walk the same path again.
            Err(Errno::EINVAL | Errno::ENOENT) => at.to_path_buf(),
            Err(e) => return Err(errno_error(at, e)),
        };
        next.extend(rest);
        let next = normalize(&next);
        let refusal = match policy {
            SymlinkPolicy::Within => self.guard.judge(&next, op).err().map(|r| r.message),
            _ if self.guard.is_denied(&next) => {
                Some(format!("`{}` matches a deny pattern", next.display()))
            }
            _ if self.guard.is_read_only(&next, op) => {
                Some(format!("`{}` is in a read-only directory", next.display()))
            }
            _ => None,
        };
        match refusal {
            None => Ok(next),
            Some(r) => Err(FileError::refused(
                RefusalKind::Symlink,
                format!(
                    "`{}` is a symbolic link to `{}`, which is refused: {}",
                    at.display(),
                    next.display(),
                    r
                ),
            )),
        }
    }
}

fn is_link(dir: &OwnedFd, name: &OsStr) -> bool {
    fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|s| s.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits())
}
