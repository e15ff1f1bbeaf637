//! The process supervisor: every child the server starts (named commands, agent runtimes,
//! and the processes, shells and sandbox commands of the next issues) is spawned from one
//! [`Spec`] by one spawn ([`process`]): in a process group of its own, with exactly the
//! environment of its spec, reaped by a task that owns it, killed with its group if the
//! server drops it. A timeout, a cancel or a kill stops the whole tree (TERM, a grace
//! period, then KILL) and nothing is left behind as a zombie or an orphan. When the child
//! exits, what it left in its group is killed too, unless its limits say
//! [`GroupEnd::Leave`]: a sandbox's command leaves its background children running, as a
//! shell on a machine does. Once the server asked for whole trees ([`trees`]), what left
//! the group (`setsid`) stays below the child, a subreaper, and ends with it too.
//!
//! Output is kept apart, stdout and stderr each in a bounded [`ring`] that counts every
//! byte and replays from an offset; stdin is closed, written once, or a stream. Three ways
//! to use it:
//! - [`run`]: a bounded run to completion (named commands);
//! - [`Streaming`]: stdout read line by line while the child runs (agent runtimes);
//! - [`Registry`]: processes that outlive a request, by pid and owner.

pub mod process;
pub mod registry;
pub mod ring;
pub mod trees;

pub use process::{Chunk, Exit, LEAVE_DRAIN, Process, ProcessHandle, Stream, stop_all};
pub use registry::{Label, Output, ProcessRecord, Registry, RegistryConfig, Status};
pub use ring::{Replay, Retention};
pub use trees::keep_whole_trees;

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// Between TERM and KILL when a child is stopped.
pub const GRACE: Duration = Duration::from_secs(2);
/// Bytes kept of each of stdout and stderr unless the spec says otherwise.
pub const OUTPUT_BYTES: usize = 1024 * 1024;
/// Longest stdout line kept whole unless the spec says otherwise; a longer line is cut (the
/// reader still consumes the rest, so the child never blocks) and marked as cut.
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;
/// How much of stderr [`Streaming::stderr_tail`] gives for error messages.
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// Everything needed to start a child.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// The child's complete environment: nothing of the server's own is inherited.
    pub env: Vec<(String, String)>,
    pub stdin: Stdin,
    pub limits: Limits,
    /// `cgroup.procs` files the child writes itself into before its program runs (between
    /// fork and exec): nothing it starts is ever outside the cgroup, and a cgroup it cannot
    /// join fails the spawn, never runs the program outside.
    pub join_cgroup: Vec<PathBuf>,
    /// The server's own tool (the browser), run as the server's user: every other child
    /// runs as `process.run_as` when the operator set it
    /// ([`child_user`](crate::services::child_user)).
    pub server_tool: bool,
    /// The sandbox machine the child is started in, entered directly
    /// ([`Entry`](crate::services::namespaces::Entry)); `program` and `cwd` are then the
    /// machine's.
    pub enter: Option<crate::services::namespaces::Entry>,
}

/// What the child's stdin is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Stdin {
    /// Closed from the start (`/dev/null`).
    #[default]
    None,
    /// These bytes, then closed.
    Bytes(Vec<u8>),
    /// Open: written with [`ProcessHandle::write_stdin`] while the child runs.
    Stream,
}

impl From<Option<String>> for Stdin {
    fn from(text: Option<String>) -> Stdin {
        text.map_or(Stdin::None, |t| Stdin::Bytes(t.into_bytes()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// After this long the group is stopped (TERM, `grace`, KILL); `None`: no limit.
    pub timeout: Option<Duration>,
    /// Between TERM and KILL.
    pub grace: Duration,
    /// Bytes kept of each of stdout and stderr.
    pub output_bytes: usize,
    /// The longest stdout line a line reader ([`Streaming`]) keeps whole.
    pub max_line_bytes: usize,
    /// What becomes of the child's process group when the child exits. (Here rather than
    /// on [`Spec`]: it bounds the child's lifetime like the timeout does, and every
    /// caller builds its limits from `Limits::default()`.)
    pub group_end: GroupEnd,
}

/// What becomes of a child's process group when the child itself exits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GroupEnd {
    /// Whatever the child left running in its group is killed with it: a request's child
    /// never outlives the request.
    #[default]
    Kill,
    /// Left running: a sandbox behaves as a machine, where `cmd &` goes on after the shell
    /// that started it. The exit then waits at most [`LEAVE_DRAIN`] for the output pipes,
    /// which a background child may hold open for as long as it lives; what the group
    /// writes afterwards still goes to the rings.
    Leave,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: None,
            grace: GRACE,
            output_bytes: OUTPUT_BYTES,
            max_line_bytes: MAX_LINE_BYTES,
            group_end: GroupEnd::Kill,
        }
    }
}

/// The signals a caller may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// 15
    Term,
    /// 9
    Kill,
}

impl Signal {
    pub fn number(self) -> i32 {
        match self {
            Signal::Term => 15,
            Signal::Kill => 9,
        }
    }

    fn nix(self) -> nix::sys::signal::Signal {
        match self {
            Signal::Term => nix::sys::signal::Signal::SIGTERM,
            Signal::Kill => nix::sys::signal::Signal::SIGKILL,
        }
    }
}

impl TryFrom<i32> for Signal {
    type Error = Error;
    fn try_from(number: i32) -> Result<Signal, Error> {
        match number {
            15 => Ok(Signal::Term),
            9 => Ok(Signal::Kill),
            other => Err(Error::UnsupportedSignal(other)),
        }
    }
}

/// What the supervisor refuses or fails at.
#[derive(Debug)]
pub enum Error {
    /// The program could not be started.
    Spawn(std::io::Error),
    /// No such process for this owner (another owner's pid looks the same).
    NotFound,
    /// The process has exited: no signal, no stdin.
    Exited,
    /// Stdin was closed (on request, by the child, or never opened as a stream).
    StdinClosed,
    /// Writing to stdin failed.
    Stdin(std::io::Error),
    /// Only TERM (15) and KILL (9) are accepted.
    UnsupportedSignal(i32),
    /// The registry is shutting down and starts nothing.
    ShuttingDown,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Spawn(e) => write!(f, "cannot start the process: {e}"),
            Error::NotFound => f.write_str("no such process"),
            Error::Exited => f.write_str("the process has exited"),
            Error::StdinClosed => f.write_str("the process's stdin is closed"),
            Error::Stdin(e) => write!(f, "cannot write to the process's stdin: {e}"),
            Error::UnsupportedSignal(n) => {
                write!(f, "signal {n} is not supported (only 15 and 9 are)")
            }
            Error::ShuttingDown => f.write_str("the server is shutting down"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn(e) | Error::Stdin(e) => Some(e),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: Captured,
    pub stderr: Captured,
    pub timed_out: bool,
    pub duration: Duration,
}

#[derive(Debug, Clone, Default)]
pub struct Captured {
    pub bytes: Vec<u8>,
    pub truncated: bool,
}

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    fn from(replay: Replay) -> Captured {
        Captured {
            truncated: replay.truncated(),
            bytes: replay.bytes,
        }
    }
}

/// Runs to completion (or to the spec's timeout: TERM, grace, KILL to the group) and
/// reports what happened; the first `output_bytes` of each stream are kept, the rest read
/// and dropped (so the child never blocks on a full pipe) and marked `truncated`.
pub async fn run(spec: &Spec) -> std::io::Result<Outcome> {
    let started = Instant::now();
    let (process, _) = process::spawn_with(spec, Retention::First, process::Tap::None)?;
    let exit = process.wait().await;
    let status = exit.status()?;
    Ok(Outcome {
        exit_code: status.code(),
        signal: signal_of(status),
        stdout: Captured::from(process.output(Stream::Stdout, 0)),
        stderr: Captured::from(process.output(Stream::Stderr, 0)),
        timed_out: exit.timed_out,
        duration: started.elapsed(),
    })
}

/// One line of a child's stdout, without its newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    /// The line was longer than the limit: `text` holds its first bytes only.
    pub cut: bool,
}

/// A child whose stdout is read line by line while it runs (agent runtimes). The child
/// waits for a slow reader; stderr (and a copy of stdout) go to rings of the spec's
/// `output_bytes`.
pub struct Streaming {
    process: Process,
    lines: process::Lines,
}

impl Streaming {
    pub fn spawn(spec: &Spec) -> std::io::Result<Streaming> {
        let (process, lines) = process::spawn_with(spec, Retention::Newest, process::Tap::Lines)?;
        let lines =
            lines.ok_or_else(|| std::io::Error::other("the child's stdout was not given"))?;
        Ok(Streaming { process, lines })
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    pub fn handle(&self) -> ProcessHandle {
        self.process.handle()
    }

    /// The next stdout line, or `None` once stdout is closed.
    pub async fn next_line(&mut self) -> Option<Line> {
        self.lines.next().await
    }

    /// Waits for the exit; whatever the child left in its group is ended.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.process.wait().await.status()
    }

    /// TERM to the group, a grace period, then KILL; reaps the child.
    pub async fn stop(&mut self) -> std::io::Result<ExitStatus> {
        self.process.kill().await.status()
    }

    /// The last few KiB the child wrote to stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        let bytes = self.process.tail(Stream::Stderr, STDERR_TAIL_BYTES);
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }
}

fn signal_of(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(test)]
mod tests;
