//! Atomic writes: the bytes go to a temporary file created `O_EXCL` beside the target (same
//! directory, opened beneath the allowed directory), are synced, and the temporary file is
//! renamed over the target, so a reader sees the old file or the new one, never half of
//! one. Past the size limit, on a failed body, or when the write is dropped unfinished, the
//! temporary file is removed.

use super::entry::Entry;
use super::error::FileError;
use super::metadata::{self, Metadata, WriteFailure};
use super::walk::{entry_at, errno_error};
use nix::errno::Errno;
use nix::fcntl::{FallocateFlags, OFlag, RenameFlags, fallocate, openat, renameat2};
use nix::sys::stat::{FileStat, Mode, fchmod, fstat};
use nix::unistd::{UnlinkatFlags, fsync, unlinkat};
use std::ffi::OsString;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;

/// The name of the temp file beside a file being written (`.svc-write-<hex>.tmp`): a
/// watcher hides it, so a write shows as the file it makes, not as our scaffolding.
const TEMP_PREFIX: &str = ".svc-write-";
const TEMP_SUFFIX: &str = ".tmp";

/// Whether `path` names a temp file of an atomic write under way.
pub fn is_write_temp(path: &std::path::Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(TEMP_PREFIX) && n.ends_with(TEMP_SUFFIX))
}

/// How a write treats what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// Replace an existing file (else [`FileError::Exists`]).
    pub overwrite: bool,
    /// Create missing parent directories (else [`FileError::NotFound`] naming the first).
    pub parents: bool,
    /// Flush the data and the rename to the disk before answering, so the file survives a
    /// power cut. Without it the write is atomic for every reader (the rename) but may be
    /// lost with the machine; the flush makes a large write markedly slower.
    pub sync: bool,
    /// How many bytes the caller expects to write, when it knows (a declared
    /// `Content-Length`): the temp file's blocks are then reserved in one step. A hint
    /// only: the file holds exactly what was written, whatever the hint said.
    pub expected_len: Option<u64>,
    /// Metadata the file is made with (set on the temp file, so the file appears with it;
    /// a file written without any has none, whatever the file it replaced had, as envd
    /// answers an upload without metadata).
    pub metadata: Option<Metadata>,
}

impl Default for WriteOptions {
    /// Overwrite, and create parents: what `PUT /files/content` does without parameters.
    fn default() -> WriteOptions {
        WriteOptions {
            overwrite: true,
            parents: true,
            sync: false,
            expected_len: None,
            metadata: None,
        }
    }
}

/// One piece of a streamed write ([`super::FileService::write_pieces`]).
#[derive(Debug)]
pub enum Piece<B> {
    /// Bytes to append.
    Bytes(B),
    /// Bytes the caller has put into the temp file itself (with the descriptor the write's
    /// `on_open` gave it), right after every piece before them.
    Placed(u64),
    /// The caller could not place its bytes: the write fails as a failed write of its own
    /// would, with this cause.
    Failed(std::io::Error),
}

/// A write under way: feed it with [`PendingWrite::write`], finish it with
/// [`PendingWrite::commit`]. Dropped before the commit, it leaves nothing behind.
#[derive(Debug)]
pub struct PendingWrite {
    /// The target, normalized and absolute.
    path: PathBuf,
    dir: OwnedFd,
    name: OsString,
    temp: OsString,
    file: Option<File>,
    /// The temporary file's `fstat` once [`PendingWrite::finish`] closed it.
    finished: Option<FileStat>,
    written: u64,
    /// Bytes whose blocks were reserved up front ([`WriteOptions::expected_len`]).
    reserved: u64,
    limit: u64,
    overwrite: bool,
    sync: bool,
    /// What the file is made with: its metadata, known without reading it back.
    metadata: Metadata,
}

impl PendingWrite {
    /// Creates the temporary file beside `name` in `dir`.
    pub(crate) fn create(
        path: PathBuf,
        dir: OwnedFd,
        name: OsString,
        limit: u64,
        options: WriteOptions,
    ) -> Result<PendingWrite, FileError> {
        let WriteOptions {
            overwrite,
            sync,
            expected_len,
            metadata,
            ..
        } = options;
        // An existing file keeps its permission bits.
        let mode = match nix::sys::stat::fstatat(
            &dir,
            name.as_os_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) if stat.st_mode & libc_s_ifmt() == libc_s_ifdir() => {
                return Err(FileError::IsDirectory(path));
            }
            Ok(_) if !overwrite => return Err(FileError::Exists(path)),
            Ok(stat) if stat.st_mode & libc_s_ifmt() == libc_s_ifreg() => {
                Some(Mode::from_bits_truncate(stat.st_mode & 0o7777))
            }
            Ok(_) | Err(Errno::ENOENT) => None,
            Err(e) => return Err(errno_error(&path, e)),
        };
        let (temp, fd) = loop {
            let temp = OsString::from(format!("{TEMP_PREFIX}{}{TEMP_SUFFIX}", random_hex()));
            match openat(
                &dir,
                temp.as_os_str(),
                OFlag::O_WRONLY
                    | OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o644),
            ) {
                Ok(fd) => break (temp, fd),
                Err(Errno::EEXIST) => continue,
                Err(e) => return Err(errno_error(&path, e)),
            }
        };
        let file = File::from(fd);
        let reserved = expected_len
            .filter(|&len| len <= limit && reserve(&file, len))
            .unwrap_or(0);
        let pending = PendingWrite {
            path,
            dir,
            name,
            temp,
            file: Some(file),
            finished: None,
            written: 0,
            reserved,
            limit,
            overwrite,
            sync,
            metadata: metadata.unwrap_or_default(),
        };
        if let (Some(mode), Some(file)) = (mode, &pending.file) {
            fchmod(file, mode).map_err(|e| errno_error(&pending.path, e))?;
        }
        if let Some(file) = &pending.file
            && !pending.metadata.is_empty()
        {
            metadata::write(file, &pending.metadata)
                .map_err(|e| metadata_failed(&pending.path, e))?;
        }
        Ok(pending)
    }

    /// The target, normalized and absolute.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Appends `bytes`; past the limit the temporary file is removed and the write is over.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), FileError> {
        let Some(file) = self.file.as_mut() else {
            return Err(self.too_large());
        };
        if self.written + bytes.len() as u64 > self.limit {
            self.discard();
            return Err(self.too_large());
        }
        if let Err(e) = file.write_all(bytes) {
            self.discard();
            return Err(FileError::io(&self.path, e));
        }
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Counts `len` bytes the caller put into the temporary file right after the bytes
    /// written so far (see [`Piece::Placed`]); past the limit the write is over.
    pub fn placed(&mut self, len: u64) -> Result<(), FileError> {
        let Some(file) = self.file.as_mut() else {
            return Err(self.too_large());
        };
        if self.written + len > self.limit {
            self.discard();
            return Err(self.too_large());
        }
        self.written += len;
        // Bytes appended after placed ones go after them.
        if let Err(e) = file.seek(SeekFrom::Start(self.written)) {
            self.discard();
            return Err(FileError::io(&self.path, e));
        }
        Ok(())
    }

    /// The temporary file, for a caller that places bytes in it itself.
    pub fn temp_file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    /// Ends the write with an error the caller met while placing bytes.
    pub fn fail(mut self, cause: std::io::Error) -> FileError {
        self.discard();
        FileError::io(&self.path, cause)
    }

    /// Ends the writing: the unused reservation is given back, the bytes are synced when
    /// asked, and the temporary file is closed, so a write staged to be committed later
    /// (an upload's parts) holds one descriptor, its directory's, not two.
    pub fn finish(&mut self) -> Result<(), FileError> {
        let Some(file) = self.file.take() else {
            return match self.finished {
                Some(_) => Ok(()),
                None => Err(self.too_large()),
            };
        };
        if self.written < self.reserved {
            // Fewer bytes than expected: the blocks past the end go back to the disk (a
            // truncation to the size the file has frees them).
            let _ = file.set_len(self.written);
        }
        if self.sync
            && let Err(e) = file.sync_data()
        {
            self.unlink_temp();
            return Err(FileError::io(&self.path, e));
        }
        match fstat(&file) {
            Ok(stat) => {
                self.finished = Some(stat);
                Ok(())
            }
            Err(e) => {
                self.unlink_temp();
                Err(errno_error(&self.path, e))
            }
        }
    }

    /// Finishes the write ([`PendingWrite::finish`]) and renames it over the target
    /// (refusing an existing target unless `overwrite`); answers the written file's info.
    pub fn commit(mut self) -> Result<Entry, FileError> {
        self.finish()?;
        let Some(stat) = self.finished else {
            return Err(self.too_large());
        };
        let flags = if self.overwrite {
            RenameFlags::empty()
        } else {
            RenameFlags::RENAME_NOREPLACE
        };
        if let Err(e) = renameat2(
            &self.dir,
            self.temp.as_os_str(),
            &self.dir,
            self.name.as_os_str(),
            flags,
        ) {
            self.unlink_temp();
            return Err(errno_error(&self.path, e));
        }
        self.temp.clear();
        if self.sync {
            // The rename itself lasts once the directory is synced.
            let _ = fsync(&self.dir);
        }
        let mut entry = entry_at(&self.dir, Some(self.name.as_os_str()), &self.path, &stat);
        entry.metadata = std::mem::take(&mut self.metadata).into_pairs();
        Ok(entry)
    }

    /// Ends the write without touching the target.
    pub fn abort(mut self) {
        self.discard();
    }

    fn too_large(&self) -> FileError {
        FileError::TooLarge {
            path: self.path.clone(),
            limit: self.limit,
        }
    }

    fn discard(&mut self) {
        self.file = None;
        self.unlink_temp();
    }

    fn unlink_temp(&mut self) {
        if !self.temp.is_empty() {
            let _ = unlinkat(&self.dir, self.temp.as_os_str(), UnlinkatFlags::NoRemoveDir);
            self.temp.clear();
        }
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        self.unlink_temp();
    }
}

/// Reserves the blocks of `len` bytes in `file` at once, its size kept at what is written
/// (`fallocate` with `FALLOC_FL_KEEP_SIZE`). ext4 otherwise reserves them page by page as the
/// bytes come: a 100 MiB write through the server took about 7 % longer without it
/// (`benches/files.rs`, the README's performance section). Best effort: a file system
/// without `fallocate`, or too full for the whole reservation, is left to the writes, which
/// meet the same condition with their own error. Whether the blocks were reserved.
fn reserve(file: &File, len: u64) -> bool {
    i64::try_from(len).is_ok_and(|len| {
        len > 0 && fallocate(file, FallocateFlags::FALLOC_FL_KEEP_SIZE, 0, len).is_ok()
    })
}

/// Why `path` could not be made with its metadata, as the service's error (the pending
/// write, dropped, removes its temp file).
fn metadata_failed(path: &std::path::Path, failure: WriteFailure) -> FileError {
    match failure {
        WriteFailure::Unsupported => FileError::MetadataUnsupported(path.to_path_buf()),
        WriteFailure::NoRoom => FileError::InvalidArgument {
            param: "metadata",
            message: format!(
                "the filesystem of `{}` has no room for this metadata; write less of it",
                path.display()
            ),
        },
        WriteFailure::Other(e) => errno_error(path, e),
    }
}

fn libc_s_ifmt() -> u32 {
    nix::sys::stat::SFlag::S_IFMT.bits()
}

fn libc_s_ifdir() -> u32 {
    nix::sys::stat::SFlag::S_IFDIR.bits()
}

fn libc_s_ifreg() -> u32 {
    nix::sys::stat::SFlag::S_IFREG.bits()
}

fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        bytes = (nanos as u64 ^ u64::from(std::process::id())).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Passes the body's pieces on to the writer thread; the body's own error, if it failed.
/// Placed bytes need nothing of the writer but a count: they are told in runs of up to
/// [`PLACED_RUN`](super::PLACED_RUN), not one wake of its thread per chunk.
pub(super) async fn forward_pieces<S, B, E>(
    body: S,
    tx: &tokio::sync::mpsc::Sender<Piece<B>>,
) -> Option<FileError>
where
    S: futures::Stream<Item = Result<Piece<B>, E>>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use futures::StreamExt;
    let mut body = std::pin::pin!(body);
    let mut placed_run = 0u64;
    while let Some(piece) = body.next().await {
        let piece = match piece {
            Ok(Piece::Placed(len)) => {
                placed_run += len;
                if placed_run < super::PLACED_RUN {
                    continue;
                }
                Piece::Placed(std::mem::take(&mut placed_run))
            }
            Ok(piece) => piece,
            Err(e) => return Some(FileError::Body(e.into())),
        };
        let run = std::mem::take(&mut placed_run);
        if run > 0 && tx.send(Piece::Placed(run)).await.is_err() {
            return None; // the writer stopped: its error says why
        }
        if tx.send(piece).await.is_err() {
            return None;
        }
    }
    if placed_run > 0 {
        let _ = tx.send(Piece::Placed(placed_run)).await;
    }
    None
}
