//! The file service: every file operation the server's file_ops group (and the engine's
//! `/sandboxes/:id/files/*` routes, on another root) performs, on paths the path guard has
//! judged and the kernel opens beneath an allowed directory without following a link it
//! was not allowed to follow (see `walk.rs`). It knows nothing of HTTP: operations answer
//! typed values and [`FileError`].
//!
//! Every operation is synchronous and does blocking I/O; an async caller runs it in
//! `tokio::task::spawn_blocking` (except [`FileService::write_pieces`], which is async).
//!
//! Paths are absolute, or relative to the service's base directory; they are normalized
//! lexically (`.` dropped, `..` pops, never above `/`; nothing is decoded: `%2e%2e` is a
//! name), judged by the guard ([`FileService::decide`], the one decision every operation
//! and `POST /capabilities/check` share), then opened.

mod entry;
mod error;
pub mod metadata;
mod search;
mod walk;
pub mod watch;
mod write;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;

pub use entry::{Entry, EntryKind, rfc3339};
pub use error::FileError;
pub use metadata::Metadata;
pub use search::{
    DEFAULT_MAX_RESULTS, MAX_RESULTS, SearchBudget, SearchMatch, SearchQuery, SearchResult,
};
pub use walk::MAX_LINK_HOPS;
pub use write::{PendingWrite, Piece, WriteOptions};

pub use crate::services::paths::Op;
use crate::services::paths::{PathGuard, RefusalKind, normalize};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, RenameFlags, openat, renameat2};
use nix::sys::stat::{FileStat, Mode, fstat, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use walk::{DIR, Last, Located, Walker, entry_at, errno_error};

/// Deepest `list` (`depth` is 1..=10).
pub const MAX_LIST_DEPTH: u32 = 10;
/// Entries one `list` answers at most (then `truncated`).
pub const MAX_LIST_ENTRIES: usize = 100_000;

/// The file service over one guard and one base directory. Cheap to clone.
#[derive(Debug, Clone)]
pub struct FileService {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    guard: PathGuard,
    base: PathBuf,
    max_file_bytes: u64,
    walk_only: bool,
    /// Entries carry the files' metadata (`metadata.rs`): the engine's sandboxes, where a
    /// write may keep some; the server keeps none and reads none.
    metadata: bool,
}

/// The decision on a path: where it leads (normalized, links the policy follows resolved)
/// and whether something is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub path: PathBuf,
    pub exists: bool,
}

/// A byte range of a read, as `Range: bytes=...` states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `bytes=start-end` (`end` inclusive) or `bytes=start-`.
    From { start: u64, end: Option<u64> },
    /// `bytes=-n`: the last `n` bytes.
    Suffix(u64),
}

impl From<(u64, Option<u64>)> for ByteRange {
    fn from((start, end): (u64, Option<u64>)) -> ByteRange {
        ByteRange::From { start, end }
    }
}

/// A file open for reading, positioned at `start`; read `len` bytes from it (e.g.
/// `tokio::fs::File::from_std(file).take(len)`, or `sendfile` from `start`).
#[derive(Debug)]
pub struct ReadFile {
    pub file: File,
    /// Normalized, links the policy follows resolved.
    pub path: PathBuf,
    /// The file's name (for `Content-Disposition`).
    pub name: String,
    pub start: u64,
    pub len: u64,
    /// The whole file's size (for `Content-Range: bytes start-end/size`).
    pub size: u64,
    /// A range was asked for (answer 206).
    pub partial: bool,
    pub modified_at: std::time::SystemTime,
}

impl ReadFile {
    /// The inclusive last byte of the range (meaningless when `len` is 0).
    pub fn end(&self) -> u64 {
        (self.start + self.len).saturating_sub(1)
    }

    /// The `len` bytes from `start`, read by a blocking thread [`READ_AHEAD`] chunks of
    /// [`READ_CHUNK`] bytes ahead of the consumer. A file that shrinks under the reader ends
    /// the stream with an error (a cut answer, never a short one passed off as whole).
    pub fn into_stream(self) -> futures::stream::BoxStream<'static, std::io::Result<bytes::Bytes>> {
        use futures::StreamExt;
        if self.len == 0 {
            return futures::stream::empty().boxed();
        }
        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(READ_AHEAD);
        tokio::task::spawn_blocking(move || {
            let mut reader = self.file;
            let mut left = self.len;
            while left > 0 {
                let want = READ_CHUNK.min(left);
                let mut buf = Vec::with_capacity(want as usize);
                let chunk = match (&mut reader).take(want).read_to_end(&mut buf) {
                    Ok(0) => Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the file shrank while it was read",
                    )),
                    Ok(n) => {
                        left -= n as u64;
                        Ok(bytes::Bytes::from(buf))
                    }
                    Err(e) => Err(e),
                };
                let failed = chunk.is_err();
                if tx.blocking_send(chunk).is_err() || failed {
                    return; // the consumer went away, or the read failed
                }
            }
        });
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) })
            .boxed()
    }
}

/// Bytes one chunk of [`ReadFile::into_stream`] holds.
pub const READ_CHUNK: u64 = 512 * 1024;
/// Chunks [`ReadFile::into_stream`] reads ahead of its consumer.
pub const READ_AHEAD: usize = 4;
/// The most placed bytes ([`Piece::Placed`]) a streamed write adds up before it tells its
/// writer (which checks the size limit with each run): one wake of the writer's thread
/// per 16 MiB instead of one per chunk.
const PLACED_RUN: u64 = 16 * 1024 * 1024;

/// A directory's entries, depth first in name order (a directory before its content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
    /// More than [`MAX_LIST_ENTRIES`] were there.
    pub truncated: bool,
}

impl FileService {
    /// The service over `guard`'s rules (its `max_file_bytes` included), relative paths
    /// taken from `base`.
    pub fn new(guard: PathGuard, base: impl Into<PathBuf>) -> FileService {
        let max_file_bytes = guard.max_file_bytes();
        FileService {
            inner: Arc::new(Inner {
                guard,
                base: normalize(&base.into()),
                max_file_bytes,
                walk_only: false,
                metadata: false,
            }),
        }
    }

    /// Overrides the per-file size limit.
    pub fn with_max_file_bytes(self, limit: u64) -> FileService {
        self.rebuild(|inner| inner.max_file_bytes = limit)
    }

    /// Never asks the kernel for `openat2` (always the `O_NOFOLLOW` walk).
    pub fn walk_only(self) -> FileService {
        self.rebuild(|inner| inner.walk_only = true)
    }

    /// Entries read with their metadata, which a write may keep ([`WriteOptions::metadata`]).
    pub fn keeping_metadata(self) -> FileService {
        self.rebuild(|inner| inner.metadata = true)
    }

    fn rebuild(self, change: impl FnOnce(&mut Inner)) -> FileService {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            guard: shared.guard.clone(),
            base: shared.base.clone(),
            max_file_bytes: shared.max_file_bytes,
            walk_only: shared.walk_only,
            metadata: shared.metadata,
        });
        change(&mut inner);
        FileService {
            inner: Arc::new(inner),
        }
    }

    pub fn guard(&self) -> &PathGuard {
        &self.inner.guard
    }

    pub fn base(&self) -> &Path {
        &self.inner.base
    }

    pub fn max_file_bytes(&self) -> u64 {
        self.inner.max_file_bytes
    }

    fn walker(&self) -> Walker<'_> {
        Walker {
            guard: &self.inner.guard,
            walk_only: self.inner.walk_only,
        }
    }

    /// `raw` validated (1 to 4096 bytes, no NUL), made absolute from the base and
    /// normalized lexically, without touching the filesystem.
    pub fn lexical(&self, raw: &str) -> Result<PathBuf, FileError> {
        PathGuard::validate(raw)?;
        Ok(normalize(&self.inner.base.join(raw)))
    }

    /// Judges and opens `raw` for `op`, links resolved by the policy.
    fn locate(
        &self,
        raw: &str,
        op: Op,
        last: Last,
        create_parents: bool,
    ) -> Result<Located, FileError> {
        let path = self.lexical(raw)?;
        let located = self.locate_path(path, op, last, create_parents)?;
        // `a.txt/` names a directory, as the kernel reads it (ENOTDIR), never `a.txt`:
        // decided here, so every operation that locates a path answers the same.
        if names_directory(raw) && !located.is_directory(last) {
            return Err(FileError::NotDirectory(located.path));
        }
        Ok(located)
    }

    fn locate_path(
        &self,
        path: PathBuf,
        op: Op,
        last: Last,
        create_parents: bool,
    ) -> Result<Located, FileError> {
        self.inner.guard.judge(&path, op)?;
        self.walker().locate(path, op, last, create_parents)
    }

    /// The decision on `raw` for `op`, from the same code every operation runs: the rules
    /// on the normalized path, then on the filesystem the links on the way (and a link in
    /// the last place, followed) under `paths.symlinks`. A path that does not exist (or
    /// whose parent does not) is decided all the same: `exists: false`.
    pub fn decide(&self, raw: &str, op: Op) -> Result<Resolved, FileError> {
        match self.locate(raw, op, Last::Follow, false) {
            Ok(located) => {
                let exists = located.lstat().is_ok();
                Ok(Resolved {
                    path: located.path,
                    exists,
                })
            }
            Err(FileError::NotFound(at) | FileError::NotDirectory(at)) => {
                // Nothing below a missing component (or a file) can be a link.
                let lexical = self.lexical(raw)?;
                let path = if lexical.starts_with(&at) {
                    lexical
                } else {
                    at
                };
                Ok(Resolved {
                    path,
                    exists: false,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Opens the regular file `raw` for reading, positioned and limited to `range`.
    pub fn read(&self, raw: &str, range: Option<ByteRange>) -> Result<ReadFile, FileError> {
        let located = self.locate(raw, Op::Read, Last::Follow, false)?;
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK;
        let fd = located.open(flags).map_err(|e| located.error(e))?;
        let stat = fstat(&fd).map_err(|e| located.error(e))?;
        match kind_of(&stat) {
            EntryKind::File => self.inner.guard.check_links(&located.path, &stat)?,
            EntryKind::Dir => return Err(FileError::IsDirectory(located.path)),
            _ => return Err(FileError::NotRegular(located.path)),
        }
        // Back to blocking reads (no effect on regular files, but tidy for whoever reads).
        let fd = clear_nonblock(fd);
        let mut file = File::from(fd);
        let size = stat.st_size.max(0) as u64;
        let (start, len) = match range {
            None => (0, size),
            Some(range) => satisfy(range, size)?,
        };
        if start > 0 {
            file.seek(SeekFrom::Start(start))
                .map_err(|e| FileError::io(&located.path, e))?;
        }
        let entry = entry_at(&located.dir, located.name.as_deref(), &located.path, &stat);
        Ok(ReadFile {
            file,
            name: entry.name,
            path: located.path,
            start,
            len,
            size,
            partial: range.is_some(),
            modified_at: entry.modified_at,
        })
    }

    /// The normalized path of a file to write: `x.txt/` names a directory, so a file is
    /// never written there (as the kernel answers EISDIR), whatever normalizing drops.
    fn file_target(&self, raw: &str) -> Result<PathBuf, FileError> {
        let path = self.lexical(raw)?;
        if names_directory(raw) {
            return Err(FileError::IsDirectory(path));
        }
        Ok(path)
    }

    /// Starts an atomic write of `raw` (see [`PendingWrite`]).
    pub fn begin_write(&self, raw: &str, options: WriteOptions) -> Result<PendingWrite, FileError> {
        let path = self.file_target(raw)?;
        self.begin_write_path(path, options)
    }

    fn begin_write_path(
        &self,
        path: PathBuf,
        options: WriteOptions,
    ) -> Result<PendingWrite, FileError> {
        let located = self.locate_path(path, Op::Write, Last::Follow, options.parents)?;
        // A write replaces the name, never the other names' bytes; it is refused all the
        // same, so that no route treats a file of several names differently.
        if let Ok(stat) = located.lstat() {
            self.inner.guard.check_links(&located.path, &stat)?;
        }
        let Some(name) = located.name else {
            return Err(root_refused(&located.path));
        };
        PendingWrite::create(
            located.path,
            located.dir,
            name,
            self.inner.max_file_bytes,
            options,
        )
    }

    /// Writes `bytes` to `raw` atomically: the whole write in one call, for the tests (the
    /// routes stream their bodies through [`FileService::write_pieces`]).
    #[cfg(test)]
    pub fn write(
        &self,
        raw: &str,
        bytes: &[u8],
        options: WriteOptions,
    ) -> Result<Entry, FileError> {
        let mut pending = self.begin_write(raw, options)?;
        pending.write(bytes)?;
        pending.commit()
    }

    /// Writes a body stream to `raw` atomically; the file I/O runs on the blocking pool.
    /// A failed stream ends the write with [`FileError::Body`], leaving nothing behind. The
    /// tests' entry point (the routes call [`FileService::write_pieces`]).
    #[cfg(test)]
    pub async fn write_stream<S, B, E>(
        &self,
        raw: &str,
        body: S,
        options: WriteOptions,
    ) -> Result<Entry, FileError>
    where
        S: futures::Stream<Item = Result<B, E>> + Send,
        B: AsRef<[u8]> + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        use futures::StreamExt;
        let pieces = body.map(|chunk| chunk.map(Piece::Bytes));
        self.write_pieces(raw, pieces, options, |_| {}).await
    }

    /// A streamed write for a caller that can also put bytes into the temp file
    /// itself: `on_open` gets the temp file once it exists (on the writer's thread), and
    /// [`Piece::Placed`] counts what the caller put there.
    pub async fn write_pieces<S, B, E, F>(
        &self,
        raw: &str,
        body: S,
        options: WriteOptions,
        on_open: F,
    ) -> Result<Entry, FileError>
    where
        S: futures::Stream<Item = Result<Piece<B>, E>> + Send,
        B: AsRef<[u8]> + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
        F: FnOnce(&std::fs::File) + Send + 'static,
    {
        let path = self.file_target(raw)?;
        let pending = self.stage_pieces_path(path, body, options, on_open).await?;
        tokio::task::spawn_blocking(move || pending.commit())
            .await
            .map_err(|e| FileError::io(self.base(), std::io::Error::other(e)))?
    }

    /// The streamed write of `path`, all its bytes in the temp file but not yet renamed
    /// over the target: the caller commits it (or drops it, leaving nothing behind).
    async fn stage_pieces_path<S, B, E, F>(
        &self,
        path: PathBuf,
        body: S,
        options: WriteOptions,
        on_open: F,
    ) -> Result<PendingWrite, FileError>
    where
        S: futures::Stream<Item = Result<Piece<B>, E>> + Send,
        B: AsRef<[u8]> + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
        F: FnOnce(&std::fs::File) + Send + 'static,
    {
        let service = self.clone();
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Piece<B>>(8);
        let (opened_tx, opened) = tokio::sync::oneshot::channel::<()>();
        let writer = tokio::task::spawn_blocking(move || {
            let mut pending = service.begin_write_path(path, options)?;
            if let Some(file) = pending.temp_file() {
                on_open(file);
            }
            let _ = opened_tx.send(());
            while let Some(piece) = rx.blocking_recv() {
                match piece {
                    Piece::Bytes(chunk) => pending.write(chunk.as_ref())?,
                    Piece::Placed(len) => pending.placed(len)?,
                    Piece::Failed(cause) => return Err(pending.fail(cause)),
                }
            }
            pending.finish()?;
            Ok::<_, FileError>(pending)
        });
        // The body is read once the temp file exists (a refused path reads none of it): a
        // caller that places bytes itself, armed by `on_open`, then places all of them but
        // what had come before the call.
        let failed = match opened.await {
            Ok(()) => write::forward_pieces(body, &tx).await,
            Err(_) => None,
        };
        drop(tx);
        let pending = writer
            .await
            .map_err(|e| FileError::io(self.base(), std::io::Error::other(e)))??;
        if let Some(e) = failed {
            pending.abort();
            return Err(e);
        }
        Ok(pending)
    }

    /// The directory `raw`'s entries, `depth` levels down (1..=10), links described and
    /// never followed, denied entries left out.
    pub fn list(&self, raw: &str, depth: u32) -> Result<Listing, FileError> {
        if !(1..=MAX_LIST_DEPTH).contains(&depth) {
            return Err(FileError::InvalidArgument {
                param: "depth",
                message: format!("depth must be 1 to {MAX_LIST_DEPTH}"),
            });
        }
        let located = self.locate(raw, Op::List, Last::Follow, false)?;
        let fd = located
            .open(OFlag::O_RDONLY | OFlag::O_DIRECTORY)
            .map_err(|e| located.error(e))?;
        let mut listing = Listing {
            path: located.path.clone(),
            entries: Vec::new(),
            truncated: false,
        };
        self.list_into(fd, &located.path, depth, &mut listing);
        Ok(listing)
    }

    fn list_into(&self, fd: OwnedFd, dir_path: &Path, depth: u32, out: &mut Listing) {
        let Ok((dir, names)) = read_names(fd) else {
            return;
        };
        for name in names {
            if out.entries.len() >= MAX_LIST_ENTRIES {
                out.truncated = true;
                return;
            }
            let path = dir_path.join(&name);
            if self.inner.guard.matches_deny(&path) {
                continue;
            }
            let Ok(stat) = fstatat(&dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) else {
                continue;
            };
            let mut entry = entry_at(&dir, Some(&name), &path, &stat);
            if self.inner.metadata {
                entry = walk::with_metadata(entry, &dir, Some(&name));
            }
            let is_dir = entry.kind == EntryKind::Dir;
            out.entries.push(entry);
            if is_dir
                && depth > 1
                && let Ok(child) = openat(&dir, name.as_os_str(), DIR, Mode::empty())
            {
                self.list_into(child, &path, depth - 1, out);
            }
        }
    }

    /// The info of `raw` itself (a link is described, not followed, but refused where the
    /// policy would refuse following it).
    pub fn info(&self, raw: &str) -> Result<Entry, FileError> {
        self.entry_of(&self.locate(raw, Op::Read, Last::Judge, false)?)
    }

    /// The located entry's info, with its metadata where this service keeps metadata.
    fn entry_of(&self, located: &Located) -> Result<Entry, FileError> {
        let entry = located.entry()?;
        Ok(match self.inner.metadata {
            true => walk::with_metadata(entry, &located.dir, located.name.as_deref()),
            false => entry,
        })
    }

    /// Whether something is at `raw`. A refusal is the refusal, never `false`.
    pub fn exists(&self, raw: &str) -> Result<bool, FileError> {
        match self.locate(raw, Op::Read, Last::Judge, false) {
            Ok(located) => match located.lstat() {
                Ok(_) => Ok(true),
                Err(Errno::ENOENT) => Ok(false),
                Err(e) => Err(located.error(e)),
            },
            Err(FileError::NotFound(_) | FileError::NotDirectory(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Makes the directory `raw` (and its missing parents when `parents`; then an
    /// existing directory is fine, as with `mkdir -p`).
    pub fn mkdir(&self, raw: &str, parents: bool) -> Result<Entry, FileError> {
        let located = self.locate(raw, Op::Write, Last::Follow, parents)?;
        let Some(name) = &located.name else {
            return if parents {
                self.entry_of(&located)
            } else {
                Err(FileError::Exists(located.path))
            };
        };
        match mkdirat(
            &located.dir,
            name.as_os_str(),
            Mode::from_bits_truncate(0o755),
        ) {
            Ok(()) => {}
            Err(Errno::EEXIST) if parents => {
                let entry = self.entry_of(&located)?;
                if entry.kind != EntryKind::Dir {
                    return Err(FileError::Exists(located.path));
                }
                return Ok(entry);
            }
            Err(e) => return Err(located.error(e)),
        }
        self.entry_of(&located)
    }

    /// Moves `from` to `to` by one rename on one filesystem (`from` judged as a delete,
    /// `to` as a write; a link is moved as the link). Answers the info of `to`.
    pub fn rename(&self, from: &str, to: &str, overwrite: bool) -> Result<Entry, FileError> {
        let source = self.locate(from, Op::Delete, Last::Keep, false)?;
        let Some(source_name) = &source.name else {
            return Err(root_refused(&source.path));
        };
        let target = self.locate(to, Op::Write, Last::Keep, false)?;
        let Some(target_name) = &target.name else {
            return Err(root_refused(&target.path));
        };
        let stat = source.lstat().map_err(|e| source.error(e))?;
        if target.path.starts_with(&source.path) && target.path != source.path {
            return Err(FileError::InvalidArgument {
                param: "to",
                message: format!(
                    "`{}` cannot be moved into itself (`{}`)",
                    source.path.display(),
                    target.path.display()
                ),
            });
        }
        if kind_of(&stat) == EntryKind::Dir {
            // Nothing denied or read-only may change its path along with the directory.
            self.check_subtree(&source, Op::Delete)?;
            self.check_moved_subtree(&source, &target.path)?;
        }
        // Over an existing target: the guard judged that path as a write; a directory
        // being replaced must hold nothing the guard protects either.
        if overwrite
            && let Ok(existing) = target.lstat()
            && kind_of(&existing) == EntryKind::Dir
        {
            self.check_subtree(&target, Op::Delete)?;
        }
        let flags = if overwrite {
            RenameFlags::empty()
        } else {
            RenameFlags::RENAME_NOREPLACE
        };
        match renameat2(
            &source.dir,
            source_name.as_os_str(),
            &target.dir,
            target_name.as_os_str(),
            flags,
        ) {
            Ok(()) => {}
            Err(Errno::EXDEV) => {
                return Err(FileError::CrossDevice {
                    from: source.path,
                    to: target.path,
                });
            }
            Err(Errno::ENOENT) => return Err(FileError::NotFound(source.path)),
            Err(Errno::EEXIST) if !overwrite => return Err(FileError::Exists(target.path)),
            Err(Errno::EEXIST | Errno::ENOTEMPTY) => return Err(FileError::NotEmpty(target.path)),
            Err(Errno::EINVAL) => {
                return Err(FileError::InvalidArgument {
                    param: "to",
                    message: format!(
                        "`{}` cannot be moved to `{}`",
                        source.path.display(),
                        target.path.display()
                    ),
                });
            }
            Err(e) => return Err(target.error(e)),
        }
        self.entry_of(&target)
    }

    /// Deletes `raw` (a link is removed as the link). A non-empty directory needs
    /// `recursive`; then nothing below it may be denied or read-only, and links inside are
    /// removed, never followed. Answers the deleted path.
    pub fn delete(&self, raw: &str, recursive: bool) -> Result<PathBuf, FileError> {
        let located = self.locate(raw, Op::Delete, Last::Keep, false)?;
        let Some(name) = &located.name else {
            return Err(root_refused(&located.path));
        };
        let stat = located.lstat().map_err(|e| located.error(e))?;
        if kind_of(&stat) != EntryKind::Dir {
            unlinkat(&located.dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir)
                .map_err(|e| located.error(e))?;
            return Ok(located.path);
        }
        match unlinkat(&located.dir, name.as_os_str(), UnlinkatFlags::RemoveDir) {
            Ok(()) => return Ok(located.path),
            Err(Errno::ENOTEMPTY | Errno::EEXIST) if recursive => {}
            Err(e) => return Err(located.error(e)),
        }
        self.check_subtree(&located, Op::Delete)?;
        let fd = located
            .open(OFlag::O_RDONLY | OFlag::O_DIRECTORY)
            .map_err(|e| located.error(e))?;
        self.remove_tree(fd, &located.path)?;
        unlinkat(&located.dir, name.as_os_str(), UnlinkatFlags::RemoveDir)
            .map_err(|e| located.error(e))?;
        Ok(located.path)
    }

    /// Refuses when anything under the directory `located` is denied, or read-only for `op`.
    fn check_subtree(&self, located: &Located, op: Op) -> Result<(), FileError> {
        let guard = &self.inner.guard;
        if op.modifies()
            && let Some(ro) = guard.read_only_below(&located.path)
        {
            return Err(FileError::refused(
                RefusalKind::ReadOnly,
                format!(
                    "`{}` holds the read-only directory `{}`",
                    located.path.display(),
                    ro.display()
                ),
            ));
        }
        let fd = located
            .open(OFlag::O_RDONLY | OFlag::O_DIRECTORY)
            .map_err(|e| located.error(e))?;
        self.find_denied(fd, &located.path, &|_| None)
    }

    /// Refuses when a directory moved from `source` to `to` would bring something to a
    /// denied or read-only path.
    fn check_moved_subtree(&self, source: &Located, to: &Path) -> Result<(), FileError> {
        let guard = &self.inner.guard;
        if let Some(ro) = guard.read_only_below(to) {
            return Err(FileError::refused(
                RefusalKind::ReadOnly,
                format!(
                    "moving to `{}` would write in the read-only directory `{}`",
                    to.display(),
                    ro.display()
                ),
            ));
        }
        let fd = source
            .open(OFlag::O_RDONLY | OFlag::O_DIRECTORY)
            .map_err(|e| source.error(e))?;
        let moved = |path: &Path| -> Option<PathBuf> {
            path.strip_prefix(&source.path)
                .ok()
                .map(|rest| to.join(rest))
        };
        self.find_denied(fd, &source.path, &moved)
    }

    /// Walks the directory `fd` (at `path`) without following links; refuses the first
    /// entry whose path (or, through `also`, its path after a move) is denied.
    fn find_denied(
        &self,
        fd: OwnedFd,
        path: &Path,
        also: &dyn Fn(&Path) -> Option<PathBuf>,
    ) -> Result<(), FileError> {
        let guard = &self.inner.guard;
        let (dir, names) = read_names(fd).map_err(|e| errno_error(path, e))?;
        for name in names {
            let child = path.join(&name);
            let denied = std::iter::once(child.clone())
                .chain(also(&child))
                .find(|p| guard.matches_deny(p));
            if let Some(p) = denied {
                return Err(FileError::refused(
                    RefusalKind::Denied,
                    format!(
                        "`{}` holds `{}`, which matches a deny pattern",
                        path.display(),
                        p.display()
                    ),
                ));
            }
            if let Ok(fd) = openat(&dir, name.as_os_str(), DIR, Mode::empty()) {
                self.find_denied(fd, &child, also)?;
            }
        }
        Ok(())
    }

    /// Empties the directory `fd` (at `path`), removing links as links.
    fn remove_tree(&self, fd: OwnedFd, path: &Path) -> Result<(), FileError> {
        let guard = &self.inner.guard;
        let (dir, names) = read_names(fd).map_err(|e| errno_error(path, e))?;
        for name in names {
            let child = path.join(&name);
            // Checked before, and again here for what appeared since.
            if guard.matches_deny(&child) {
                return Err(FileError::refused(
                    RefusalKind::Denied,
                    format!("`{}` matches a deny pattern", child.display()),
                ));
            }
            match unlinkat(&dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir) {
                Ok(()) | Err(Errno::ENOENT) => continue,
                Err(Errno::EISDIR | Errno::EPERM) => {}
                Err(e) => return Err(errno_error(&child, e)),
            }
            let sub = openat(&dir, name.as_os_str(), DIR, Mode::empty())
                .map_err(|e| errno_error(&child, e))?;
            self.remove_tree(sub, &child)?;
            match unlinkat(&dir, name.as_os_str(), UnlinkatFlags::RemoveDir) {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => return Err(errno_error(&child, e)),
            }
        }
        Ok(())
    }

    /// Searches under `raw` (a directory, or one file) by name and content.
    pub fn search(&self, raw: &str, query: &SearchQuery) -> Result<SearchResult, FileError> {
        let compiled = search::Compiled::new(query)?;
        let located = self.locate(raw, Op::List, Last::Follow, false)?;
        let stat = located.lstat().map_err(|e| located.error(e))?;
        Ok(match kind_of(&stat) {
            EntryKind::Dir => {
                let fd = located
                    .open(OFlag::O_RDONLY | OFlag::O_DIRECTORY)
                    .map_err(|e| located.error(e))?;
                search::run(&self.inner.guard, &compiled, &located.path, fd, None)
            }
            _ => {
                let name = located.name.clone();
                search::run(
                    &self.inner.guard,
                    &compiled,
                    &located.path,
                    located.dir,
                    name,
                )
            }
        })
    }

    /// Refuses an upload's file name: not one plain name (`/`, `.`, `..`, NUL, empty, over
    /// 255 bytes) is `invalid_path`; an extension `paths.upload_extensions` refuses is
    /// [`FileError::ExtensionNotAllowed`].
    pub fn check_upload_name(&self, name: &str) -> Result<(), FileError> {
        let plain = !name.is_empty()
            && name.len() <= 255
            && name != "."
            && name != ".."
            && !name.contains(['/', '\0']);
        if !plain {
            return Err(FileError::refused(
                RefusalKind::Invalid,
                format!("`{name}` is not a file name (one name, 1 to 255 bytes, no `/`)"),
            ));
        }
        if !self.inner.guard.upload_extensions().admits(name) {
            return Err(FileError::ExtensionNotAllowed { name: name.into() });
        }
        Ok(())
    }

    /// Starts the atomic write of an uploaded file `name` into the directory `dir_raw`.
    pub fn begin_upload(
        &self,
        dir_raw: &str,
        name: &str,
        options: WriteOptions,
    ) -> Result<PendingWrite, FileError> {
        self.check_upload_name(name)?;
        let dir = self.lexical(dir_raw)?;
        self.begin_write_path(dir.join(name), options)
    }

    /// Stages `bytes` as `name` in the directory `dir_raw`: written to its temp file, to be
    /// committed with the upload's other files (see [`FileService::stage_upload_stream`]).
    pub fn stage_upload(
        &self,
        dir_raw: &str,
        name: &str,
        bytes: &[u8],
        options: WriteOptions,
    ) -> Result<PendingWrite, FileError> {
        let mut pending = self.begin_upload(dir_raw, name, options)?;
        pending.write(bytes)?;
        pending.finish()?;
        Ok(pending)
    }

    /// Stages a body stream as `name` in the directory `dir_raw` (see
    /// [`FileService::write_pieces`]): an upload renames its files into place only once
    /// every part has been read and judged, so a refused upload leaves nothing written.
    pub async fn stage_upload_stream<S, B, E>(
        &self,
        dir_raw: &str,
        name: &str,
        body: S,
        options: WriteOptions,
    ) -> Result<PendingWrite, FileError>
    where
        S: futures::Stream<Item = Result<B, E>> + Send,
        B: AsRef<[u8]> + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.check_upload_name(name)?;
        let dir = self.lexical(dir_raw)?;
        let pieces = futures::StreamExt::map(body, |chunk| chunk.map(Piece::Bytes));
        self.stage_pieces_path(dir.join(name), pieces, options, |_| {})
            .await
    }

    /// Uploads `bytes` as `name` into the directory `dir_raw` at once: the tests' entry
    /// point (the route stages every part, then commits them together).
    #[cfg(test)]
    pub fn upload(
        &self,
        dir_raw: &str,
        name: &str,
        bytes: &[u8],
        options: WriteOptions,
    ) -> Result<Entry, FileError> {
        self.stage_upload(dir_raw, name, bytes, options)?.commit()
    }

    /// `paths.max_upload_files`: the most file parts one upload may hold.
    pub fn max_upload_files(&self) -> usize {
        self.inner.guard.max_upload_files()
    }
}

fn satisfy(range: ByteRange, size: u64) -> Result<(u64, u64), FileError> {
    let unsatisfiable = FileError::RangeNotSatisfiable { size };
    match range {
        ByteRange::From { start, end } => {
            if start >= size || end.is_some_and(|end| end < start) {
                return Err(unsatisfiable);
            }
            let end = end.unwrap_or(u64::MAX).min(size - 1);
            Ok((start, end - start + 1))
        }
        ByteRange::Suffix(n) => {
            if n == 0 || size == 0 {
                return Err(unsatisfiable);
            }
            let len = n.min(size);
            Ok((size - len, len))
        }
    }
}

fn kind_of(stat: &FileStat) -> EntryKind {
    EntryKind::of_mode(stat.st_mode)
}

fn root_refused(path: &Path) -> FileError {
    FileError::refused(
        RefusalKind::NotAllowed,
        format!(
            "`{}` is an allowed directory itself; it cannot be replaced, moved or deleted",
            path.display()
        ),
    )
}

/// The names in a directory (without `.` and `..`), sorted, and the directory kept open
/// for `*at` calls on them.
fn read_names(fd: OwnedFd) -> nix::Result<(nix::dir::Dir, Vec<OsString>)> {
    let mut dir = nix::dir::Dir::from_fd(fd)?;
    let mut names: Vec<OsString> = dir
        .iter()
        .filter_map(Result::ok)
        .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
        .filter(|n| n != "." && n != "..")
        .collect();
    names.sort();
    Ok((dir, names))
}

fn clear_nonblock(fd: OwnedFd) -> OwnedFd {
    use nix::fcntl::{FcntlArg, fcntl};
    if let Ok(bits) = fcntl(&fd, FcntlArg::F_GETFL) {
        let flags = OFlag::from_bits_truncate(bits) - OFlag::O_NONBLOCK;
        let _ = fcntl(&fd, FcntlArg::F_SETFL(flags));
    }
    fd
}

/// Whether `raw` ends in a `/` (or `/.`) after a name: it names a directory, whatever the
/// normalized path drops (the memory provider asks it too).
pub fn names_directory(raw: &str) -> bool {
    let trimmed = raw.trim_end_matches("/.");
    (trimmed.ends_with('/') || trimmed.len() < raw.len()) && !trimmed.trim_matches('/').is_empty()
}
