//! Terminals: a shell on a pseudo-terminal, held by id for its owner, that clients attach to
//! and detach from while it runs.
//!
//! Each terminal is a child shell that leads a session of its own on the PTY's slave side
//! (so everything it starts, job-controlled groups included, can be found and ended),
//! started with exactly the environment of its [`Spec`]. A reader task pumps the PTY's
//! output into a bounded replay buffer ([`REPLAY_BYTES`], the newest bytes kept) and to
//! every attached client; a client attaching gets the buffer first, then live output, with
//! nothing lost or repeated in between. Each client has a bounded queue
//! ([`CLIENT_QUEUE_CHUNKS`] chunks of at most [`CHUNK_BYTES`]); a client whose queue stays
//! full for [`STALL`] is dropped, so a reader that stopped never grows the server's memory
//! and slows the others for that long at most. Killing a terminal hangs up its session
//! (HUP, CONT, TERM), waits a grace period, then KILLs what is left; the shell is reaped.
//!
//! The PTY comes from `pty-process`: a small, maintained crate whose async API is tokio's
//! own (an `AsyncFd` over the master, a `tokio::process::Child` for the shell), so the
//! reader, the writer and the reaper are plain tasks, and whose spawn does the `setsid` and
//! `TIOCSCTTY` in its own audited code, so this crate adds no `unsafe` for it (its
//! `unsafe` runs between fork and exec: the cgroup join and the subreaper mark; and a
//! sandbox's terminal, allocated from the sandbox's own multiplexer, is handed to
//! `pty-process` through its `unsafe` constructors).
//! `portable-pty` offers only blocking reads (a thread per terminal) behind trait objects.

mod registry;
pub mod session;
mod terminal;

pub use registry::{Config, TerminalRecord, Terminals};
pub use terminal::{Attachment, End, Exit, TerminalHandle};

use std::path::PathBuf;
use std::time::Duration;

/// Bytes of output a terminal keeps for clients that attach later.
pub const REPLAY_BYTES: usize = 1024 * 1024;
/// The most bytes one read from the PTY (one chunk to the clients) holds.
pub const CHUNK_BYTES: usize = 16 * 1024;
/// Chunks a client may have waiting before it counts as not keeping up.
pub const CLIENT_QUEUE_CHUNKS: usize = 64;
/// How long a client's queue may stay full before the client is dropped.
pub const STALL: Duration = Duration::from_secs(2);
/// Between the hang-up and KILL when a terminal is killed.
pub const GRACE: Duration = Duration::from_secs(2);
/// The largest number of columns or rows a terminal may have.
pub const MAX_SIDE: u16 = 1000;

/// Everything needed to start a terminal.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The shell program.
    pub shell: String,
    /// Its arguments (usually none: a shell on a terminal is interactive).
    pub args: Vec<String>,
    /// What is spawned in its place, when it starts through something (a sandbox's
    /// machine entry: the program and arguments ending with the shell); `None`: the shell.
    pub through: Option<(String, Vec<String>)>,
    /// The sandbox machine the shell is started in, entered directly (then `shell` and
    /// `cwd` are the machine's).
    pub enter: Option<crate::services::namespaces::Entry>,
    /// The cgroup the shell joins before it runs
    /// ([`Cgroup::join_files`](crate::services::cgroup::Cgroup::join_files)).
    pub join_cgroup: Vec<PathBuf>,
    pub cwd: Option<PathBuf>,
    /// The root whose `dev/pts/ptmx` the terminal is allocated from, when not the host's
    /// `/dev/ptmx`: a sandbox's (`/proc/<its pid 1>/root`), so that the shell's terminal is
    /// a `/dev/pts/N` of the sandbox and `tty` names it. What is there is the sandbox's to
    /// change: it is opened beneath that root, no link followed, and must be a multiplexer.
    pub ptmx_in: Option<PathBuf>,
    /// The shell's complete environment: nothing of the server's own is inherited.
    pub env: Vec<(String, String)>,
    pub size: Size,
}

/// A terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub cols: u16,
    pub rows: u16,
}

impl Size {
    /// Both sides must be within `1..=MAX_SIDE`.
    pub fn new(cols: u32, rows: u32) -> Result<Size, Error> {
        let side = |value: u32, param: &'static str| {
            u16::try_from(value)
                .ok()
                .filter(|v| (1..=MAX_SIDE).contains(v))
                .ok_or(Error::InvalidSize { param, value })
        };
        Ok(Size {
            cols: side(cols, "cols")?,
            rows: side(rows, "rows")?,
        })
    }
}

impl Default for Size {
    fn default() -> Size {
        Size { cols: 80, rows: 24 }
    }
}

/// What the terminal service refuses or fails at.
#[derive(Debug)]
pub enum Error {
    /// No such terminal for this owner (another owner's id looks the same), or it has
    /// ended.
    NotFound(String),
    /// The terminal's shell has exited.
    Ended,
    /// A side outside `1..=MAX_SIDE`.
    InvalidSize { param: &'static str, value: u32 },
    /// The shell could not be started.
    Spawn {
        shell: String,
        source: std::io::Error,
    },
    /// The `dev/pts/ptmx` beneath a sandbox's root is missing or no terminal multiplexer
    /// (something inside replaced it): no terminal can be allocated there.
    NoMultiplexer(String),
    /// Opening the PTY, or writing to it, or resizing it failed.
    Io(std::io::Error),
    /// The service is shutting down and starts nothing.
    ShuttingDown,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotFound(id) => write!(f, "no terminal `{id}`"),
            Error::Ended => f.write_str("the terminal's shell has exited"),
            Error::InvalidSize { param, value } => {
                write!(f, "`{param}` must be within 1..={MAX_SIDE}, not {value}")
            }
            Error::Spawn { shell, source } => {
                write!(f, "cannot start the shell `{shell}`: {source}")
            }
            Error::NoMultiplexer(why) => write!(
                f,
                "no terminal can be opened in this sandbox: its /dev/pts/ptmx {why} \
                 (something inside replaced /dev/pts)"
            ),
            Error::Io(e) => write!(f, "terminal I/O failed: {e}"),
            Error::ShuttingDown => f.write_str("the server is shutting down"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn { source, .. } | Error::Io(source) => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
