//! Watching a directory tree (or one file) for changes, on inotify.
//!
//! Built on the `inotify` crate (the thin wrapper the `notify` crate's Linux backend uses
//! itself) rather than on `notify`, because `notify` adds its watches by path: the kernel
//! follows a link there, so a directory swapped for a link between its creation and its
//! watch would be watched outside the allowed root. Here:
//!
//! - **Links are never followed.** The watched root is opened once; every directory below
//!   it is opened one component at a time from that descriptor with `O_NOFOLLOW`, and its
//!   watch is added through the descriptor (`/proc/self/fd/N`), so the kernel watches
//!   exactly the directory that was opened. A link inside the tree is reported (kind
//!   [`Kind::Symlink`]), never descended, and a directory replaced by a link is simply not
//!   watched. Entry kinds are read with `fstatat(AT_SYMLINK_NOFOLLOW)` beneath the root.
//! - **Order.** One task reads the inotify descriptor and emits in the kernel's order. The
//!   two halves of a rename (`IN_MOVED_FROM`, `IN_MOVED_TO`, one cookie) become one
//!   [`WatchEvent::Rename`]; a half whose other half is outside the watch is a delete or a
//!   create.
//! - **New directories.** A directory created in (or moved into) a recursive watch is
//!   watched at once, and what it already holds by then is reported as created, so
//!   `mkdir -p a/b && touch a/b/f` loses nothing (an entry made between the watch and the
//!   scan may be reported twice; never not at all).
//! - **Nothing is dropped silently, memory is bounded.** Events go to the reader through a
//!   channel of `capacity` events. A reader that falls that far behind loses the events that
//!   do not fit, and gets one [`WatchEvent::Overflow`] as soon as there is room again; the
//!   task keeps draining the kernel meanwhile. The kernel's own queue overflowing
//!   (`IN_Q_OVERFLOW`) is reported the same way, after which the tree is walked again so
//!   that directories made meanwhile are watched. A directory the system's watch limit
//!   keeps unwatched is reported ([`WatchEvent::Unwatched`]).
//! - **Drop stops.** Dropping the [`Watch`] ends its task and closes the descriptor, which
//!   removes every watch.

use super::walk::Last;
use super::{Entry, EntryKind as Kind, FileError, FileService, Op};
use futures::StreamExt as _;
use inotify::{EventMask, EventStream, Inotify, WatchDescriptor, WatchMask, Watches};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, open, openat};
use nix::sys::stat::{Mode, fstat, fstatat};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::time::Instant;

/// Events held for a reader that is behind, per watch, unless the caller says otherwise.
pub const DEFAULT_CAPACITY: usize = 1024;

/// How long the first half of a rename waits for its second before it is a delete (the
/// kernel queues both halves together; this only covers a read that split them).
const PAIR_WAIT: Duration = Duration::from_millis(20);

/// How often the watched directory is checked for having been deleted: the watch holds it
/// open, and the kernel reports a deleted directory (`IN_DELETE_SELF`) only once the last
/// descriptor on it is closed.
const ROOT_CHECK: Duration = Duration::from_secs(1);

/// What is read from the kernel at once (a few hundred events).
const READ_BUFFER: usize = 64 * 1024;

const DIR: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// What every directory is watched for. No `IN_OPEN` / `IN_CLOSE_*`: reads are not changes,
/// and they would fill the kernel's queue.
const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::ONLYDIR)
    .union(WatchMask::EXCL_UNLINK);

/// What the kernel says of an entry that is gone: a directory or not.
fn gone_kind(is_dir: bool) -> Kind {
    if is_dir { Kind::Dir } else { Kind::File }
}

/// A change, in the order the kernel reported it. Paths are the watched path joined with
/// the entry's place below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// Created, moved in from outside the watch, or found in a directory that just appeared.
    Create { path: PathBuf, kind: Kind },
    /// Contents or attributes changed.
    Modify { path: PathBuf, kind: Kind },
    /// Deleted or moved out of the watch. `kind` is `Dir` or `File` (the kernel says only
    /// whether it was a directory).
    Delete { path: PathBuf, kind: Kind },
    /// Moved within the watch.
    Rename {
        from: PathBuf,
        to: PathBuf,
        kind: Kind,
    },
    /// Events were lost (the reader fell `capacity` behind, or the kernel's queue
    /// overflowed): what the reader knows of the tree may be stale.
    Overflow,
    /// A directory could not be watched (the system's watch limit): changes in it are not
    /// seen. The watch goes on for the rest.
    Unwatched { path: PathBuf, reason: String },
    /// The watched path is gone (deleted, moved away, unmounted): the last event.
    Gone { path: PathBuf },
    /// Reading the kernel's events failed: the last event.
    Failed { reason: String },
}

/// Whether a path may be reported (and, for a directory, descended): the caller's path
/// rules, so nothing a deny rule hides is ever named.
pub type Admit = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

#[derive(Clone)]
pub struct WatchOptions {
    /// Below the directory too, new directories included.
    pub recursive: bool,
    /// Events held for a reader that is behind; at least 1.
    pub capacity: usize,
    pub admit: Option<Admit>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            recursive: false,
            capacity: DEFAULT_CAPACITY,
            admit: None,
        }
    }
}

impl fmt::Debug for WatchOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchOptions")
            .field("recursive", &self.recursive)
            .field("capacity", &self.capacity)
            .field("admit", &self.admit.is_some())
            .finish()
    }
}

impl FileService {
    /// Watches `raw` (a directory, below it too when `recursive`; or a file), judged like a
    /// read and opened by the same walk, so the watch is on the very entry judged. Every
    /// path an event names is judged by the same rules: a path they refuse is never named,
    /// a directory they refuse never descended. `capacity`: events held for a reader that
    /// is behind. Call within a tokio runtime (from `spawn_blocking`: it walks the tree).
    pub fn watch(&self, raw: &str, recursive: bool, capacity: usize) -> Result<Watch, FileError> {
        let located = self.locate(raw, Op::Read, Last::Follow, false)?;
        let files = self.clone();
        let admit: Admit = Arc::new(move |path: &Path| files.guard().judge(path, Op::Read).is_ok());
        let options = WatchOptions {
            recursive,
            capacity,
            admit: Some(admit),
        };
        Ok(Watch::start_in(
            located.path,
            located.dir,
            located.name,
            options,
        )?)
    }

    /// The info of a path a watch event named, judged like [`FileService::info`]; `None`
    /// when it is gone or refused. Blocking, but a few system calls.
    pub fn watched_entry(&self, path: &Path) -> Option<Entry> {
        let located = self
            .locate_path(path.to_path_buf(), Op::Read, Last::Judge, false)
            .ok()?;
        self.entry_of(&located).ok()
    }
}

impl From<WatchError> for FileError {
    fn from(e: WatchError) -> FileError {
        match e {
            WatchError::NotFound(path) => FileError::NotFound(path),
            WatchError::Limit(reason) => {
                FileError::io("/proc/sys/fs/inotify", io::Error::other(reason))
            }
            WatchError::Io(path, source) => FileError::io(path, source),
        }
    }
}

/// Why a watch could not start.
#[derive(Debug)]
pub enum WatchError {
    /// Nothing at the path.
    NotFound(PathBuf),
    /// The system's inotify limits (instances or watches) are reached.
    Limit(String),
    /// What the filesystem said otherwise.
    Io(PathBuf, io::Error),
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchError::NotFound(path) => write!(f, "`{}` does not exist", path.display()),
            WatchError::Limit(reason) => f.write_str(reason),
            WatchError::Io(path, e) => write!(f, "cannot watch `{}`: {e}", path.display()),
        }
    }
}

impl std::error::Error for WatchError {}

/// A running watch; dropping it stops it.
pub struct Watch {
    path: PathBuf,
    events: mpsc::Receiver<WatchEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl Watch {
    /// Watches `path` (absolute): a directory, or a file (changes of that name in its
    /// directory; `recursive` does not apply). Links on the way to `path` are followed;
    /// `path` itself, when a link, is watched as a file, and nothing below it is followed. For a path the rules judged, use [`Watch::start_in`] with what the
    /// judging walk opened. Call within a tokio runtime; it walks the tree to watch it, so a
    /// large tree takes a while (call it from `spawn_blocking` there).
    pub fn start(path: &Path, options: WatchOptions) -> Result<Watch, WatchError> {
        let errno = |e: Errno| errno_error(path, e);
        let follow = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => {
                let dir = open(parent, follow, Mode::empty()).map_err(errno)?;
                Watch::start_in(path.to_path_buf(), dir, Some(name.to_owned()), options)
            }
            _ => {
                let dir = open(path, follow, Mode::empty()).map_err(errno)?;
                Watch::start_in(path.to_path_buf(), dir, None, options)
            }
        }
    }

    /// Watches `name` in the directory open as `dir` (`None`: `dir` itself), known to the
    /// caller as `path`: what a walk that judged the path opened, so the watch is on the
    /// very entry judged. `name` is never followed if it is a link (the walk resolved
    /// those); a directory is watched (below it too when `recursive`), anything else as a
    /// file.
    pub fn start_in(
        path: PathBuf,
        dir: OwnedFd,
        name: Option<OsString>,
        options: WatchOptions,
    ) -> Result<Watch, WatchError> {
        let errno = |e: Errno| errno_error(&path, e);
        let (root, root_fd, target) = match name {
            None => (path.clone(), dir, None),
            Some(name) => {
                let stat =
                    fstatat(&dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW).map_err(errno)?;
                if Kind::of_mode(stat.st_mode) == Kind::Dir {
                    let fd = openat(&dir, name.as_os_str(), DIR, Mode::empty()).map_err(errno)?;
                    (path.clone(), fd, None)
                } else {
                    let parent = path.parent().unwrap_or(Path::new("/")).to_path_buf();
                    (parent, dir, Some(name))
                }
            }
        };
        if !Path::new("/proc/self/fd").is_dir() {
            return Err(WatchError::Io(
                path,
                io::Error::other("watches are added through descriptors, which needs /proc"),
            ));
        }
        let inotify = Inotify::init().map_err(|e| limit_or_io(&path, e))?;
        let kernel = inotify
            .into_event_stream(vec![0u8; READ_BUFFER])
            .map_err(|e| WatchError::Io(path.clone(), e))?;
        let (tx, events) = mpsc::channel(options.capacity.max(1));
        let mut worker = Worker {
            watches: kernel.watches(),
            kernel,
            recursive: options.recursive && target.is_none(),
            admit: options.admit,
            root,
            root_fd,
            target,
            dirs: HashMap::new(),
            root_id: -1,
            tx,
            lost: false,
            closed: false,
            pending: None,
            end: None,
        };
        let fd = worker
            .root_fd
            .try_clone()
            .map_err(|e| limit_or_io(&path, e))?;
        let root = worker.root.clone();
        worker.root_id = worker.add(&fd, &root).map_err(|e| limit_or_io(&root, e))?;
        if worker.recursive
            && let Err((dir, e)) = worker.watch_below(fd, &root, false)
        {
            return Err(limit_or_io(&dir, e));
        }
        Ok(Watch {
            path,
            events,
            task: tokio::spawn(worker.run()),
        })
    }

    /// The next event; `None` once the watch has ended (after [`WatchEvent::Gone`] or
    /// [`WatchEvent::Failed`]).
    pub async fn next(&mut self) -> Option<WatchEvent> {
        self.events.recv().await
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<WatchEvent> {
        self.events.try_recv().ok()
    }

    /// The watched path, links on the way resolved.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch").field("path", &self.path).finish()
    }
}

fn errno_error(path: &Path, e: Errno) -> WatchError {
    match e {
        Errno::ENOENT | Errno::ENOTDIR => WatchError::NotFound(path.to_path_buf()),
        e => WatchError::Io(path.to_path_buf(), e.into()),
    }
}

fn limit_or_io(path: &Path, e: io::Error) -> WatchError {
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::ENOSPC) => WatchError::Limit(watch_limit()),
        Some(Errno::EMFILE) => WatchError::Limit(
            "the system's limit of inotify instances (fs.inotify.max_user_instances) or of \
             open files is reached"
                .into(),
        ),
        Some(Errno::ENOENT) => WatchError::NotFound(path.to_path_buf()),
        _ => WatchError::Io(path.to_path_buf(), e),
    }
}

fn watch_limit() -> String {
    "the system's limit of inotify watches (fs.inotify.max_user_watches) is reached".into()
}

/// One event as the kernel queued it.
#[derive(Debug, Clone)]
struct Raw {
    wd: i32,
    mask: EventMask,
    cookie: u32,
    name: Option<OsString>,
}

/// The first half of a rename, waiting for its second.
struct Moved {
    cookie: u32,
    path: PathBuf,
    is_dir: bool,
    at: Instant,
}

struct Watched {
    wd: WatchDescriptor,
    path: PathBuf,
}

struct Worker {
    /// The kernel's events, and its watches.
    kernel: EventStream<Vec<u8>>,
    watches: Watches,
    recursive: bool,
    admit: Option<Admit>,
    /// The watched directory (for a file: its directory) and its descriptor, from which
    /// everything below is opened.
    root: PathBuf,
    root_fd: OwnedFd,
    /// For a watched file: its name in `root`; nothing else is reported.
    target: Option<OsString>,
    /// Watched directories by descriptor number.
    dirs: HashMap<i32, Watched>,
    root_id: i32,
    tx: mpsc::Sender<WatchEvent>,
    /// Events were dropped since the reader last had room: an `Overflow` is owed.
    lost: bool,
    /// The reader is gone.
    closed: bool,
    pending: Option<Moved>,
    /// The last event, once the watch has ended.
    end: Option<WatchEvent>,
}

impl Worker {
    async fn run(mut self) {
        enum Wake {
            Closed,
            Sent,
            Timer,
            Check,
            Kernel(Option<io::Result<inotify::EventOwned>>),
        }
        let mut check = tokio::time::interval_at(Instant::now() + ROOT_CHECK, ROOT_CHECK);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !self.closed && self.end.is_none() {
            let deadline = self.pending.as_ref().map(|p| p.at + PAIR_WAIT);
            let wake = tokio::select! {
                _ = self.tx.closed() => Wake::Closed,
                permit = self.tx.reserve(), if self.lost => match permit {
                    Ok(permit) => {
                        permit.send(WatchEvent::Overflow);
                        Wake::Sent
                    }
                    Err(_) => Wake::Closed,
                },
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)),
                    if deadline.is_some() => Wake::Timer,
                _ = check.tick() => Wake::Check,
                event = self.kernel.next() => Wake::Kernel(event),
            };
            match wake {
                Wake::Closed => return,
                Wake::Sent => self.lost = false,
                Wake::Timer => self.flush_pending(),
                Wake::Check => self.check_root(),
                Wake::Kernel(Some(Ok(event))) => self.handle(Raw {
                    wd: event.wd.get_watch_descriptor_id(),
                    mask: event.mask,
                    cookie: event.cookie,
                    name: event.name,
                }),
                Wake::Kernel(Some(Err(e))) => {
                    self.end = Some(WatchEvent::Failed {
                        reason: format!("reading the kernel's events failed: {e}"),
                    });
                }
                Wake::Kernel(None) => {
                    self.end = Some(WatchEvent::Failed {
                        reason: "the kernel's events ended".into(),
                    });
                }
            }
        }
        // The last event waits for room: it is never dropped.
        if let Some(end) = self.end.take() {
            self.flush_pending();
            if self.lost {
                let _ = self.tx.send(WatchEvent::Overflow).await;
            }
            let _ = self.tx.send(end).await;
        }
    }

    /// Handles one kernel event.
    fn handle(&mut self, raw: Raw) {
        if raw.mask.contains(EventMask::Q_OVERFLOW) {
            self.flush_pending();
            self.emit(WatchEvent::Overflow);
            self.rescan();
            return;
        }
        let Some(dir) = self.dirs.get(&raw.wd).map(|w| w.path.clone()) else {
            return;
        };
        if raw.mask.contains(EventMask::IGNORED) {
            self.dirs.remove(&raw.wd);
            if raw.wd == self.root_id {
                self.gone();
            }
            return;
        }
        let path = match &raw.name {
            Some(name) => dir.join(name),
            None => dir,
        };
        let is_dir = raw.mask.contains(EventMask::ISDIR);
        if raw.mask.contains(EventMask::MOVED_TO) {
            match self.pending.take() {
                Some(from) if from.cookie == raw.cookie => {
                    self.renamed(from.path, path, is_dir);
                    return;
                }
                Some(other) => self.moved_away(other),
                None => {}
            }
            self.appeared(path, is_dir);
            return;
        }
        self.flush_pending();
        if raw.mask.contains(EventMask::MOVED_FROM) {
            self.pending = Some(Moved {
                cookie: raw.cookie,
                path,
                is_dir,
                at: Instant::now(),
            });
        } else if raw.mask.contains(EventMask::CREATE) {
            self.appeared(path, is_dir);
        } else if raw.mask.contains(EventMask::DELETE) {
            if self.in_scope(&path) {
                self.emit(WatchEvent::Delete {
                    path,
                    kind: gone_kind(is_dir),
                });
            }
        } else if raw.mask.intersects(EventMask::MODIFY | EventMask::ATTRIB) {
            if self.in_scope(&path) {
                let kind = self.kind_of(&path).unwrap_or(gone_kind(is_dir));
                self.emit(WatchEvent::Modify { path, kind });
            }
        } else if raw
            .mask
            .intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF | EventMask::UNMOUNT)
            && raw.wd == self.root_id
        {
            if raw.mask.contains(EventMask::DELETE_SELF) && self.target.is_none() {
                self.emit(WatchEvent::Delete {
                    path: self.root.clone(),
                    kind: Kind::Dir,
                });
            }
            self.gone();
        }
    }

    /// The watched directory (for a file: its directory) deleted while held open.
    fn check_root(&mut self) {
        if fstat(&self.root_fd).is_ok_and(|stat| stat.st_nlink == 0) {
            self.flush_pending();
            if self.target.is_none() {
                self.emit(WatchEvent::Delete {
                    path: self.root.clone(),
                    kind: Kind::Dir,
                });
            }
            self.gone();
        }
    }

    fn gone(&mut self) {
        let path = match &self.target {
            Some(name) => self.root.join(name),
            None => self.root.clone(),
        };
        self.end = Some(WatchEvent::Gone { path });
    }

    /// Whether a path is reported: the watched file only, when a file is watched; what the
    /// caller's rules admit.
    fn in_scope(&self, path: &Path) -> bool {
        if let Some(target) = &self.target
            && (path.parent() != Some(&self.root) || path.file_name() != Some(target.as_os_str()))
        {
            return false;
        }
        self.admit.as_ref().is_none_or(|admit| admit(path))
    }

    /// Sends an event, or counts it lost when the reader is `capacity` behind.
    fn emit(&mut self, event: WatchEvent) {
        // An atomic write's temp file is scaffolding: its rename into place is the write.
        use super::write::is_write_temp;
        let event = match event {
            WatchEvent::Create { path, .. }
            | WatchEvent::Modify { path, .. }
            | WatchEvent::Delete { path, .. }
                if is_write_temp(&path) =>
            {
                return;
            }
            WatchEvent::Rename { from, to, kind } if is_write_temp(&from) => {
                WatchEvent::Create { path: to, kind }
            }
            other => other,
        };
        if self.lost {
            match self.tx.try_send(WatchEvent::Overflow) {
                Ok(()) => self.lost = false,
                Err(TrySendError::Full(_)) => return,
                Err(TrySendError::Closed(_)) => {
                    self.closed = true;
                    return;
                }
            }
        }
        match self.tx.try_send(event) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.lost = true,
            Err(TrySendError::Closed(_)) => self.closed = true,
        }
    }

    /// A first half of a rename that found no second: moved out of the watch.
    fn flush_pending(&mut self) {
        if let Some(moved) = self.pending.take() {
            self.moved_away(moved);
        }
    }

    fn moved_away(&mut self, moved: Moved) {
        if moved.is_dir {
            self.unwatch_below(&moved.path);
        }
        if self.in_scope(&moved.path) {
            self.emit(WatchEvent::Delete {
                path: moved.path,
                kind: gone_kind(moved.is_dir),
            });
        }
    }

    fn renamed(&mut self, from: PathBuf, to: PathBuf, is_dir: bool) {
        let (was, is) = (self.in_scope(&from), self.in_scope(&to));
        let kind = if is_dir {
            Kind::Dir
        } else {
            self.kind_of(&to).unwrap_or(Kind::File)
        };
        match (was, is) {
            (true, true) => {
                if is_dir {
                    // The watches below follow the directory; only their names change.
                    self.repath(&from, &to);
                }
                self.emit(WatchEvent::Rename { from, to, kind });
            }
            (true, false) => self.moved_away(Moved {
                cookie: 0,
                path: from,
                is_dir,
                at: Instant::now(),
            }),
            (false, true) => {
                if is_dir {
                    self.unwatch_below(&from);
                }
                self.appeared(to, is_dir);
            }
            (false, false) => {
                if is_dir {
                    self.unwatch_below(&from);
                }
            }
        }
    }

    /// Created or moved in: reported, and a directory of a recursive watch watched with
    /// what it holds already.
    fn appeared(&mut self, path: PathBuf, is_dir: bool) {
        if !self.in_scope(&path) {
            return;
        }
        let kind = if is_dir {
            Kind::Dir
        } else {
            self.kind_of(&path).unwrap_or(Kind::File)
        };
        self.emit(WatchEvent::Create {
            path: path.clone(),
            kind,
        });
        if is_dir
            && self.recursive
            && let Some(fd) = self.open_beneath(&path)
        {
            match self.add(&fd, &path) {
                Ok(_) => {
                    if let Err((dir, e)) = self.watch_below(fd, &path, true) {
                        self.unwatched(dir, e);
                    }
                }
                Err(e) => self.unwatched(path, e),
            }
        }
    }

    fn unwatched(&mut self, path: PathBuf, e: io::Error) {
        let reason = match e.raw_os_error() {
            Some(code) if code == Errno::ENOSPC as i32 => watch_limit(),
            // Gone, or replaced by something that is not a directory: nothing to watch.
            _ => return,
        };
        self.emit(WatchEvent::Unwatched { path, reason });
    }

    /// After the kernel's queue overflowed: watches the directories made meanwhile.
    fn rescan(&mut self) {
        if !self.recursive {
            return;
        }
        let Ok(fd) = self.root_fd.try_clone() else {
            return;
        };
        let root = self.root.clone();
        if let Err((dir, e)) = self.watch_below(fd, &root, false) {
            self.unwatched(dir, e);
        }
    }

    /// Watches the directories below `dir` (opened as `fd`, watched already), reporting
    /// what is there as created when `report`. Stops at the first directory the watch limit
    /// refuses, naming it.
    fn watch_below(
        &mut self,
        fd: OwnedFd,
        dir: &Path,
        report: bool,
    ) -> Result<(), (PathBuf, io::Error)> {
        let mut stack = vec![(fd, dir.to_path_buf())];
        while let Some((fd, dir)) = stack.pop() {
            let Ok(names) = entries(&fd) else {
                continue;
            };
            let mut below = Vec::new();
            for name in names {
                let path = dir.join(&name);
                if !self.in_scope(&path) {
                    continue;
                }
                let Ok(stat) = fstatat(&fd, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) else {
                    continue;
                };
                let kind = Kind::of_mode(stat.st_mode);
                if report {
                    self.emit(WatchEvent::Create {
                        path: path.clone(),
                        kind,
                    });
                }
                if kind != Kind::Dir {
                    continue;
                }
                let Ok(child) = openat(&fd, name.as_os_str(), DIR, Mode::empty()) else {
                    continue;
                };
                match self.add(&child, &path) {
                    Ok(_) => below.push((child, path)),
                    Err(e) if e.raw_os_error() == Some(Errno::ENOSPC as i32) => {
                        return Err((path, e));
                    }
                    Err(_) => {}
                }
            }
            // Depth first, in the order the directory listed them.
            stack.extend(below.into_iter().rev());
        }
        Ok(())
    }

    /// Adds the watch of a directory through its descriptor, so the kernel watches exactly
    /// that directory whatever its path has become.
    fn add(&mut self, fd: &OwnedFd, path: &Path) -> io::Result<i32> {
        let wd = self
            .watches
            .add(format!("/proc/self/fd/{}", fd.as_raw_fd()), MASK)?;
        let id = wd.get_watch_descriptor_id();
        self.dirs.insert(
            id,
            Watched {
                wd,
                path: path.to_path_buf(),
            },
        );
        Ok(id)
    }

    /// Stops watching `path` and everything below it (moved out of the watch).
    fn unwatch_below(&mut self, path: &Path) {
        let ids: Vec<i32> = self
            .dirs
            .iter()
            .filter(|(id, w)| **id != self.root_id && w.path.starts_with(path))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(watched) = self.dirs.remove(&id) {
                let _ = self.watches.remove(watched.wd);
            }
        }
    }

    /// The watches at and below `from` are now at and below `to`.
    fn repath(&mut self, from: &Path, to: &Path) {
        for watched in self.dirs.values_mut() {
            if let Ok(rest) = watched.path.strip_prefix(from) {
                watched.path = if rest.as_os_str().is_empty() {
                    to.to_path_buf()
                } else {
                    to.join(rest)
                };
            }
        }
    }

    /// The directory at `path` (at or below the root), opened one component at a time from
    /// the root's descriptor without following a link.
    fn open_beneath(&self, path: &Path) -> Option<OwnedFd> {
        let rest = path.strip_prefix(&self.root).ok()?;
        let mut fd = self.root_fd.try_clone().ok()?;
        for part in rest.components() {
            let Component::Normal(name) = part else {
                return None;
            };
            fd = openat(&fd, name, DIR, Mode::empty()).ok()?;
        }
        Some(fd)
    }

    /// What `path` is now, read beneath the root without following a link.
    fn kind_of(&self, path: &Path) -> Option<Kind> {
        if path == self.root {
            return Some(Kind::Dir);
        }
        let name = path.file_name()?;
        let parent = self.open_beneath(path.parent()?)?;
        let stat = fstatat(&parent, name, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        Some(Kind::of_mode(stat.st_mode))
    }
}

/// The names in a directory, read through its descriptor.
fn entries(fd: &OwnedFd) -> io::Result<Vec<OsString>> {
    std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd()))?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const WAIT: Duration = Duration::from_secs(5);

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    fn recursive() -> WatchOptions {
        WatchOptions {
            recursive: true,
            ..WatchOptions::default()
        }
    }

    async fn next(watch: &mut Watch) -> WatchEvent {
        tokio::time::timeout(WAIT, watch.next())
            .await
            .expect("an event within 5 s")
            .expect("the watch goes on")
    }

    /// Events until `stop` matches one (included), consecutive repeats folded into one.
    async fn until(watch: &mut Watch, stop: impl Fn(&WatchEvent) -> bool) -> Vec<WatchEvent> {
        let mut seen: Vec<WatchEvent> = Vec::new();
        loop {
            let event = next(watch).await;
            let done = stop(&event);
            if seen.last() != Some(&event) {
                seen.push(event);
            }
            if done {
                return seen;
            }
        }
    }

    /// Nothing more arrives within a moment.
    async fn quiet(watch: &mut Watch) {
        let more = tokio::time::timeout(Duration::from_millis(300), watch.next()).await;
        assert!(more.is_err(), "no further event: {more:?}");
    }

    fn create(path: PathBuf, kind: Kind) -> WatchEvent {
        WatchEvent::Create { path, kind }
    }

    #[tokio::test]
    async fn create_modify_rename_delete_are_seen_below_in_order() {
        let (_dir, root) = tree();
        fs::create_dir_all(root.join("a/b")).unwrap();
        let mut watch = Watch::start(&root, recursive()).unwrap();

        let f = root.join("a/b/f.txt");
        let g = root.join("a/b/g.txt");
        let top = root.join("g.txt");
        fs::write(&f, "one").unwrap();
        fs::write(&f, "two").unwrap();
        fs::rename(&f, &g).unwrap();
        fs::rename(&g, &top).unwrap();
        fs::remove_file(&top).unwrap();

        let seen = until(&mut watch, |e| matches!(e, WatchEvent::Delete { .. })).await;
        assert_eq!(
            seen,
            vec![
                create(f.clone(), Kind::File),
                WatchEvent::Modify {
                    path: f.clone(),
                    kind: Kind::File
                },
                WatchEvent::Rename {
                    from: f,
                    to: g.clone(),
                    kind: Kind::File
                },
                WatchEvent::Rename {
                    from: g,
                    to: top.clone(),
                    kind: Kind::File
                },
                WatchEvent::Delete {
                    path: top,
                    kind: Kind::File
                },
            ]
        );
        quiet(&mut watch).await;
    }

    #[tokio::test]
    async fn a_new_directory_is_watched_with_what_it_already_holds() {
        let (_dir, root) = tree();
        let mut watch = Watch::start(&root, recursive()).unwrap();

        // Made faster than the watch can follow: the scan of the new directory reports it.
        fs::create_dir_all(root.join("x/y")).unwrap();
        fs::write(root.join("x/y/early.txt"), "").unwrap();
        let early = root.join("x/y/early.txt");
        let seen = until(&mut watch, |e| *e == create(early.clone(), Kind::File)).await;
        assert_eq!(seen[0], create(root.join("x"), Kind::Dir));
        assert!(
            seen.contains(&create(root.join("x/y"), Kind::Dir)),
            "{seen:?}"
        );

        // Later changes in it are seen as they happen.
        let late = root.join("x/y/late.txt");
        fs::write(&late, "").unwrap();
        let seen = until(&mut watch, |e| *e == create(late.clone(), Kind::File)).await;
        assert!(
            seen.iter().all(|e| *e == create(early.clone(), Kind::File)
                || *e == create(late.clone(), Kind::File)),
            "{seen:?}"
        );

        // A directory renamed within the tree keeps being watched under its new name.
        fs::rename(root.join("x"), root.join("z")).unwrap();
        fs::write(root.join("z/y/after.txt"), "").unwrap();
        let after = root.join("z/y/after.txt");
        let seen = until(&mut watch, |e| *e == create(after.clone(), Kind::File)).await;
        assert_eq!(
            seen[0],
            WatchEvent::Rename {
                from: root.join("x"),
                to: root.join("z"),
                kind: Kind::Dir
            }
        );
    }

    #[tokio::test]
    async fn not_recursive_sees_only_the_directory_itself() {
        let (_dir, root) = tree();
        fs::create_dir(root.join("sub")).unwrap();
        let mut watch = Watch::start(&root, WatchOptions::default()).unwrap();
        fs::write(root.join("sub/hidden.txt"), "").unwrap();
        fs::write(root.join("top.txt"), "").unwrap();
        assert_eq!(
            next(&mut watch).await,
            create(root.join("top.txt"), Kind::File)
        );
        fs::create_dir(root.join("new")).unwrap();
        fs::write(root.join("new/inside.txt"), "").unwrap();
        assert_eq!(next(&mut watch).await, create(root.join("new"), Kind::Dir));
        quiet(&mut watch).await;
    }

    #[tokio::test]
    async fn a_link_inside_is_reported_and_never_descended() {
        let (_dir, root) = tree();
        let (_other, outside) = tree();
        fs::create_dir(root.join("in")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("in/out")).unwrap();
        let mut watch = Watch::start(&root, recursive()).unwrap();

        // Through the link that was there at the start.
        fs::write(outside.join("secret.txt"), "").unwrap();
        // A link made later, to a directory and to a file.
        let link = root.join("in/later");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert_eq!(next(&mut watch).await, create(link, Kind::Symlink));
        fs::write(outside.join("second.txt"), "").unwrap();
        fs::write(root.join("marker"), "").unwrap();
        assert_eq!(
            next(&mut watch).await,
            create(root.join("marker"), Kind::File)
        );
        quiet(&mut watch).await;
    }

    #[tokio::test]
    async fn a_directory_swapped_for_a_link_is_not_watched_through_it() {
        let (_dir, root) = tree();
        let (_other, outside) = tree();
        let mut watch = Watch::start(&root, recursive()).unwrap();
        // The directory the event names is a link by the time it is opened: the walk
        // refuses it, so nothing outside is watched.
        fs::create_dir(root.join("d")).unwrap();
        fs::remove_dir(root.join("d")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
        let seen = until(&mut watch, |e| {
            matches!(
                e,
                WatchEvent::Create {
                    kind: Kind::Symlink,
                    ..
                }
            )
        })
        .await;
        assert_eq!(seen[0], create(root.join("d"), Kind::Dir));
        fs::write(outside.join("secret.txt"), "").unwrap();
        quiet(&mut watch).await;
    }

    #[tokio::test]
    async fn a_reader_that_falls_behind_gets_overflow_then_the_rest() {
        let (_dir, root) = tree();
        let options = WatchOptions {
            capacity: 4,
            ..WatchOptions::default()
        };
        let mut watch = Watch::start(&root, options).unwrap();
        for n in 0..50 {
            fs::write(root.join(format!("f{n:02}")), "").unwrap();
        }
        // Let the watch read them all while nothing is read here.
        tokio::time::sleep(Duration::from_millis(300)).await;
        for n in 0..4 {
            assert_eq!(
                next(&mut watch).await,
                create(root.join(format!("f{n:02}")), Kind::File)
            );
        }
        assert_eq!(next(&mut watch).await, WatchEvent::Overflow);
        fs::write(root.join("after"), "").unwrap();
        assert_eq!(
            next(&mut watch).await,
            create(root.join("after"), Kind::File)
        );
        quiet(&mut watch).await;
    }

    /// The kernel's queue overflowing (`IN_Q_OVERFLOW`) is reported: on this test's
    /// single-threaded runtime the watch cannot read while the burst is made, so a burst
    /// longer than `fs.inotify.max_queued_events` overflows it.
    #[tokio::test(flavor = "current_thread")]
    async fn the_kernel_queue_overflowing_is_reported() {
        let limit: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(16384);
        if limit > 200_000 {
            eprintln!("skipped: max_queued_events is {limit}");
            return;
        }
        let (_dir, root) = tree();
        let options = WatchOptions {
            capacity: limit * 2,
            ..WatchOptions::default()
        };
        let mut watch = Watch::start(&root, options).unwrap();
        for n in 0..limit + 100 {
            fs::File::create(root.join(n.to_string())).unwrap();
        }
        let mut creates = 0;
        loop {
            match next(&mut watch).await {
                WatchEvent::Create { .. } => creates += 1,
                WatchEvent::Overflow => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(creates <= limit, "{creates} creates before the overflow");
        // The watch goes on.
        fs::write(root.join("after"), "").unwrap();
        let seen = until(&mut watch, |e| *e == create(root.join("after"), Kind::File)).await;
        assert!(!seen.is_empty());
    }

    #[tokio::test]
    async fn a_watched_file_reports_its_own_changes_only() {
        let (_dir, root) = tree();
        let file = root.join("watched.txt");
        fs::write(&file, "one").unwrap();
        let mut watch = Watch::start(&file, recursive()).unwrap();
        fs::write(root.join("other.txt"), "x").unwrap();
        fs::write(&file, "two").unwrap();
        assert_eq!(
            next(&mut watch).await,
            WatchEvent::Modify {
                path: file.clone(),
                kind: Kind::File
            }
        );
        // Replaced the way an atomic write does it: a new file under the name.
        fs::write(root.join("tmp"), "three").unwrap();
        fs::rename(root.join("tmp"), &file).unwrap();
        let seen = until(&mut watch, |e| matches!(e, WatchEvent::Create { .. })).await;
        assert_eq!(seen.last(), Some(&create(file.clone(), Kind::File)));
        fs::remove_file(&file).unwrap();
        assert_eq!(
            next(&mut watch).await,
            WatchEvent::Delete {
                path: file,
                kind: Kind::File
            }
        );
        quiet(&mut watch).await;
    }

    #[tokio::test]
    async fn an_atomic_write_shows_as_the_file_it_makes() {
        let (_dir, root) = tree();
        let mut watch = Watch::start(&root, recursive()).unwrap();
        // The write service's way: a temp file beside the target, then a rename over it.
        let temp = root.join(".svc-write-0123abcd.tmp");
        fs::write(&temp, "made").unwrap();
        fs::rename(&temp, root.join("made.txt")).unwrap();
        let seen = until(&mut watch, |e| matches!(e, WatchEvent::Create { .. })).await;
        assert_eq!(seen, vec![create(root.join("made.txt"), Kind::File)]);
        quiet(&mut watch).await;
    }

    #[tokio::test]
    async fn what_the_rules_refuse_is_never_named_nor_descended() {
        let (_dir, root) = tree();
        let admit: Admit = Arc::new(|path: &Path| !path.to_string_lossy().contains("private"));
        let options = WatchOptions {
            admit: Some(admit),
            ..recursive()
        };
        fs::create_dir(root.join("private")).unwrap();
        let mut watch = Watch::start(&root, options).unwrap();
        fs::write(root.join("private/key"), "").unwrap();
        fs::write(root.join("private.txt"), "").unwrap();
        fs::create_dir(root.join("private2")).unwrap();
        fs::write(root.join("public"), "").unwrap();
        fs::rename(root.join("public"), root.join("private3")).unwrap();
        fs::write(root.join("end"), "").unwrap();
        let seen = until(&mut watch, |e| *e == create(root.join("end"), Kind::File)).await;
        assert_eq!(
            seen,
            vec![
                create(root.join("public"), Kind::File),
                WatchEvent::Delete {
                    path: root.join("public"),
                    kind: Kind::File
                },
                create(root.join("end"), Kind::File),
            ]
        );
    }

    #[tokio::test]
    async fn the_watched_directory_going_away_ends_the_watch() {
        let (_dir, root) = tree();
        let watched = root.join("w");
        fs::create_dir(&watched).unwrap();
        let mut watch = Watch::start(&watched, recursive()).unwrap();
        fs::remove_dir(&watched).unwrap();
        assert_eq!(
            next(&mut watch).await,
            WatchEvent::Delete {
                path: watched.clone(),
                kind: Kind::Dir
            }
        );
        assert_eq!(next(&mut watch).await, WatchEvent::Gone { path: watched });
        assert_eq!(watch.next().await, None);
    }

    #[tokio::test]
    async fn the_service_judges_the_path_and_every_event() {
        use crate::services::paths::{PathGuard, PathRules, RefusalKind};
        let (_dir, root) = tree();
        let work = root.join("work");
        fs::create_dir_all(work.join("private")).unwrap();
        let guard = PathGuard::from_section(&PathRules {
            allow: Some(vec![work.clone()]),
            deny: vec!["**/private/**".into()],
            ..PathRules::default()
        })
        .unwrap();
        let files = FileService::new(guard, &work);
        let refusal = |raw: &str| files.watch(raw, true, 16).err().and_then(|e| e.refusal());
        assert_eq!(
            refusal(root.to_str().unwrap()),
            Some(RefusalKind::NotAllowed)
        );
        assert_eq!(refusal("private/inner"), Some(RefusalKind::Denied));
        assert!(matches!(
            files.watch("missing", true, 16),
            Err(FileError::NotFound(_))
        ));

        // Relative to the base; what the rules refuse is never named.
        let mut watch = files.watch(".", true, 16).unwrap();
        assert_eq!(watch.path(), work);
        fs::write(work.join("private/key"), "").unwrap();
        fs::write(work.join("seen"), "abc").unwrap();
        let seen = until(&mut watch, |e| matches!(e, WatchEvent::Modify { .. })).await;
        assert_eq!(seen[0], create(work.join("seen"), Kind::File));
        let entry = files.watched_entry(&work.join("seen")).unwrap();
        assert_eq!((entry.kind, entry.size), (Kind::File, 3));
        assert_eq!(files.watched_entry(&work.join("private/key")), None);
        assert_eq!(files.watched_entry(&work.join("gone")), None);
    }

    #[tokio::test]
    async fn a_missing_path_is_not_found() {
        let (_dir, root) = tree();
        assert!(matches!(
            Watch::start(&root.join("nope"), recursive()),
            Err(WatchError::NotFound(_))
        ));
        assert!(matches!(
            Watch::start(&root.join("nope/deeper"), recursive()),
            Err(WatchError::NotFound(_))
        ));
    }
}
