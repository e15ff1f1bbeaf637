//! One spawn for every child: its own process group, exactly the environment of its spec,
//! stdout and stderr pumped into rings, stdin as the spec says, and a reaper task that owns
//! the child, applies the time limit and signals, reaps it, clears what it left in its group
//! and records the exit.

use super::ring::{Replay, Retention, Ring};
use super::trees::{Birth, Tree};
use super::{Error, GroupEnd, Line, Signal, Spec, Stdin};
use crate::services::before_exec::Steps;
use crate::services::namespaces::entry::Way;
use crate::services::namespaces::hidden;
use crate::services::spawn::{Child, Command, Io};
use nix::sys::signal::killpg;
use nix::unistd::Pid;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long the exit waits for the output pumps to reach the end of their pipes (a
/// process that left the group may still hold them).
const DRAIN: Duration = Duration::from_secs(2);
/// The same wait when the group is left running ([`GroupEnd::Leave`]): a background child
/// holds the pipes open for as long as it lives, so the exit does not wait for their end,
/// only long enough for what the child wrote before it exited to be read.
pub const LEAVE_DRAIN: Duration = Duration::from_millis(100);

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// `None` when waiting for the child failed (see `wait_error`).
    pub status: Option<ExitStatus>,
    pub wait_error: Option<String>,
    /// The time limit of the spec ran out and the group was stopped.
    pub timed_out: bool,
    pub ended_at: SystemTime,
}

impl Exit {
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    pub fn signal(&self) -> Option<i32> {
        self.status.and_then(super::signal_of)
    }

    pub fn status(&self) -> std::io::Result<ExitStatus> {
        self.status.ok_or_else(|| {
            std::io::Error::other(
                self.wait_error
                    .clone()
                    .unwrap_or_else(|| "no exit status".into()),
            )
        })
    }
}

/// Which of the two output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A piece of output as it was read, for a reader following the child live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub stream: Stream,
    pub bytes: bytes::Bytes,
}

/// Who else reads the output as it arrives, besides the rings.
pub(super) enum Tap {
    None,
    /// Stdout split into lines (agent runtimes), read by the caller itself ([`Lines`]).
    Lines,
    /// Both streams in the order they were read (a streamed shell).
    Chunks(mpsc::Sender<Chunk>),
}

enum Control {
    Signal(Signal),
    /// TERM to the group now, KILL after the grace period.
    Stop(Duration),
}

struct State {
    stdout: Ring,
    stderr: Ring,
    exit: Option<Exit>,
}

struct Shared {
    pid: u32,
    started_at: SystemTime,
    grace: Duration,
    state: Mutex<State>,
    /// Bumped on every change (output, end of a stream, exit): readers wait on it.
    changed: watch::Sender<u64>,
    stdin: tokio::sync::Mutex<Option<pipe::Sender>>,
    control: mpsc::UnboundedSender<Control>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    fn append(&self, stream: Stream, bytes: &[u8]) {
        {
            let mut state = self.state();
            match stream {
                Stream::Stdout => state.stdout.write(bytes),
                Stream::Stderr => state.stderr.write(bytes),
            }
        }
        self.bump();
    }

    fn close(&self, stream: Stream) {
        {
            let mut state = self.state();
            match stream {
                Stream::Stdout => state.stdout.close(),
                Stream::Stderr => state.stderr.close(),
            }
        }
        self.bump();
    }
}

/// Every child alive, whoever started it (a shell, a stream, a runtime, a registry), so the
/// server's stop can end them all: a child a request owned would otherwise outlive the
/// runtime that reaps it. Entries leave when their child is reaped.
static LIVE: Mutex<Vec<(u32, std::sync::Weak<Shared>)>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<(u32, std::sync::Weak<Shared>)>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stops every live child of this process (TERM to each group, `grace`, KILL) and returns
/// once all are reaped.
pub async fn stop_all(grace: Duration) {
    let running: Vec<ProcessHandle> = live()
        .iter()
        .filter_map(|(_, weak)| weak.upgrade())
        .map(|shared| ProcessHandle { shared })
        .collect();
    futures::future::join_all(running.iter().map(|p| p.stop(grace))).await;
}

/// A view of a spawned child: its output, its state, its stdin and its signals. Cheap to
/// clone; dropping it leaves the child alone (the [`Process`] that owns it does not).
#[derive(Clone)]
pub struct ProcessHandle {
    shared: Arc<Shared>,
}

impl ProcessHandle {
    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    pub fn started_at(&self) -> SystemTime {
        self.shared.started_at
    }

    /// `None` while it runs.
    pub fn exit(&self) -> Option<Exit> {
        self.shared.state().exit.clone()
    }

    pub fn is_running(&self) -> bool {
        self.shared.state().exit.is_none()
    }

    /// Everything kept of one stream from offset `from` on.
    pub fn output(&self, stream: Stream, from: u64) -> Replay {
        let state = self.shared.state();
        match stream {
            Stream::Stdout => state.stdout.read_from(from),
            Stream::Stderr => state.stderr.read_from(from),
        }
    }

    /// The last `n` bytes kept of one stream.
    pub fn tail(&self, stream: Stream, n: usize) -> Vec<u8> {
        let state = self.shared.state();
        match stream {
            Stream::Stdout => state.stdout.tail(n),
            Stream::Stderr => state.stderr.tail(n),
        }
    }

    /// Changes whenever output arrives, a stream ends or the child exits. Subscribe first,
    /// then read, then wait for `changed()`: nothing is missed in between.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Sends `signal` to the child's process group.
    pub fn signal(&self, signal: Signal) -> Result<(), Error> {
        if !self.is_running() {
            return Err(Error::Exited);
        }
        self.shared
            .control
            .send(Control::Signal(signal))
            .map_err(|_| Error::Exited)
    }

    /// Writes `bytes` to the child's stdin (opened with [`Stdin::Stream`]), then closes it
    /// if `close`.
    pub async fn write_stdin(&self, bytes: &[u8], close: bool) -> Result<(), Error> {
        if !self.is_running() {
            return Err(Error::Exited);
        }
        let mut pipe = self.shared.stdin.lock().await;
        let Some(stdin) = pipe.as_mut() else {
            return Err(if self.is_running() {
                Error::StdinClosed
            } else {
                Error::Exited
            });
        };
        if !bytes.is_empty() {
            let written = match stdin.write_all(bytes).await {
                Ok(()) => stdin.flush().await,
                Err(e) => Err(e),
            };
            if let Err(e) = written {
                *pipe = None;
                return Err(match e.kind() {
                    // The child closed its end (or is gone): nothing it will ever read.
                    std::io::ErrorKind::BrokenPipe => Error::StdinClosed,
                    _ => Error::Stdin(e),
                });
            }
        }
        if close {
            *pipe = None;
        }
        Ok(())
    }

    /// Whether the child's stdin is open for [`write_stdin`](Self::write_stdin) (started
    /// with [`Stdin::Stream`], not closed since, and the child still running).
    pub fn stdin_open(&self) -> bool {
        self.is_running()
            && self
                .shared
                .stdin
                .try_lock()
                // Held by a writer right now: open.
                .map_or(true, |pipe| pipe.is_some())
    }

    /// Waits for the exit (the child reaped, its group cleared, its output drained).
    pub async fn wait(&self) -> Exit {
        let mut changed = self.subscribe();
        loop {
            if let Some(exit) = self.exit() {
                return exit;
            }
            if changed.changed().await.is_err() {
                // Cannot happen while `self` holds the sender; never spin if it did.
                std::future::pending::<()>().await;
            }
        }
    }

    /// TERM to the group, the grace period, then KILL to the group (and the child, should
    /// it have left it); returns the exit.
    pub async fn stop(&self, grace: Duration) -> Exit {
        if self.is_running() {
            let _ = self.shared.control.send(Control::Stop(grace));
        }
        self.wait().await
    }

    /// [`stop`](Self::stop) with the grace period of the spec.
    pub async fn kill(&self) -> Exit {
        self.stop(self.shared.grace).await
    }
}

/// A spawned child. Dropping it while the child runs kills the child's group: nothing the
/// server forgets keeps running.
pub struct Process {
    handle: ProcessHandle,
}

impl std::ops::Deref for Process {
    type Target = ProcessHandle;
    fn deref(&self) -> &ProcessHandle {
        &self.handle
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.handle.is_running() {
            let _ = self
                .handle
                .shared
                .control
                .send(Control::Signal(Signal::Kill));
        }
    }
}

impl Process {
    /// Spawns `spec` with both streams in rings that keep the newest bytes.
    pub fn spawn(spec: &Spec) -> std::io::Result<Process> {
        Ok(spawn_with(spec, Retention::Newest, Tap::None)?.0)
    }

    /// Spawns `spec` and hands every piece of output to the receiver as it is read, stdout
    /// and stderr each in order, with back-pressure (the child waits for a slow reader;
    /// dropping the receiver lets it run on into the rings alone).
    pub fn spawn_followed(spec: &Spec) -> std::io::Result<(Process, mpsc::Receiver<Chunk>)> {
        let (tx, rx) = mpsc::channel(64);
        Ok((spawn_with(spec, Retention::Newest, Tap::Chunks(tx))?.0, rx))
    }

    pub fn handle(&self) -> ProcessHandle {
        self.handle.clone()
    }
}

/// The spawn under every user: `retention` for both rings; a `tap` also gets the output as
/// it is read (with back-pressure: the child waits for a slow reader). With [`Tap::Lines`]
/// the caller is given stdout's [`Lines`] to read.
pub(super) fn spawn_with(
    spec: &Spec,
    retention: Retention,
    tap: Tap,
) -> std::io::Result<(Process, Option<Lines>)> {
    let mut command = command(spec, child_user(spec));
    if matches!(tap, Tap::Lines) {
        // Its spawner, a turn, tells the turn's start and answers while the runtime starts.
        command.apart();
    }
    // Where the process keeps trees, every child of it is one (a child it did not count
    // as its own would be taken for a leftover and killed).
    let birth = Birth::begin();
    let way = Way::open(spec.enter.as_ref())?;
    command.steps(Steps {
        join_cgroup: crate::services::cgroup::Join::new(&spec.join_cgroup),
        keep: Vec::new(),
        become_id: None,
        subreaper: birth.is_some(),
        // The server's own tool reads what the server reads; a machine hides the rest.
        hide: Steps::hide(
            hidden::for_children().filter(|_| !spec.server_tool && !way.inside()),
            spec.cwd.as_deref(),
        ),
        enter: way.in_child(),
    });
    let mut child = way.spawn(|| command.spawn())??;
    let pid = child.id();
    let tree = birth.map(|birth| birth.born(pid));
    let (control, control_rx) = mpsc::unbounded_channel();
    let capacity = spec.limits.output_bytes;
    let shared = Arc::new(Shared {
        pid,
        started_at: SystemTime::now(),
        grace: spec.limits.grace,
        state: Mutex::new(State {
            stdout: Ring::new(capacity, retention),
            stderr: Ring::new(capacity, retention),
            exit: None,
        }),
        changed: watch::Sender::new(0),
        stdin: tokio::sync::Mutex::new(None),
        control,
    });
    match (&spec.stdin, child.stdin.take()) {
        (Stdin::Bytes(bytes), Some(mut stdin)) => {
            let bytes = bytes.clone();
            tokio::spawn(async move {
                let _ = stdin.write_all(&bytes).await;
            });
        }
        (Stdin::Stream, Some(stdin)) => {
            if let Ok(mut slot) = shared.stdin.try_lock() {
                *slot = Some(stdin);
            }
        }
        _ => {}
    }
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let chunks = match &tap {
        Tap::Chunks(tx) => Some(tx.clone()),
        _ => None,
    };
    let mut drained = vec![tokio::spawn(pump(
        stderr,
        shared.clone(),
        Stream::Stderr,
        chunks.clone(),
    ))];
    let lines = match tap {
        // Not waited for at the exit: its reader may have stopped reading.
        Tap::Lines => Some(Lines {
            reader: tokio::io::BufReader::with_capacity(LINES_BUFFER, stdout),
            shared: shared.clone(),
            max_line: spec.limits.max_line_bytes,
            line: Vec::new(),
            cut: false,
            ended: false,
        }),
        _ => {
            drained.push(tokio::spawn(pump(
                stdout,
                shared.clone(),
                Stream::Stdout,
                chunks,
            )));
            None
        }
    };
    live().push((pid, Arc::downgrade(&shared)));
    tokio::spawn(reap(
        child,
        shared.clone(),
        control_rx,
        (spec.limits.timeout, spec.limits.group_end),
        tree,
        drained,
    ));
    Ok((
        Process {
            handle: ProcessHandle { shared },
        },
        lines,
    ))
}

/// Every child: its own process group (so it can be stopped as a whole), piped output,
/// killed if the server drops it, and exactly the environment of the spec (callers start
/// from `ChildEnv`): nothing of the server's own environment leaks through. Spawned
/// without a fork ([`spawn`](crate::services::spawn)).
fn command(spec: &Spec, user: Option<&crate::services::child_user::ChildUser>) -> Command {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .stdin(match spec.stdin {
            Stdin::None => Io::Null,
            Stdin::Bytes(_) | Stdin::Stream => Io::Piped,
        })
        .stdout(Io::Piped)
        .stderr(Io::Piped)
        .process_group()
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    if let Some(user) = user {
        command.ids(user.uid, user.gid);
    }
    command
}

/// Who `spec`'s child runs as when not the server's own user.
fn child_user(spec: &Spec) -> Option<&'static crate::services::child_user::ChildUser> {
    if spec.server_tool {
        return None;
    }
    crate::services::child_user::child_user()
}

/// Owns the child until it is reaped. Signals go through here, so none can reach a pid
/// that was reaped and reused: while this loop runs, the child's pid (its group's id) is
/// still held. With a [`Tree`], a stop and the end reach what left the group too.
async fn reap(
    mut child: Child,
    shared: Arc<Shared>,
    mut control: mpsc::UnboundedReceiver<Control>,
    (timeout, group_end): (Option<Duration>, GroupEnd),
    tree: Option<Tree>,
    drained: Vec<JoinHandle<()>>,
) {
    let group = Pid::from_raw(shared.pid as i32);
    let term = |tree: &Option<Tree>| {
        let _ = killpg(group, nix::sys::signal::Signal::SIGTERM);
        if let Some(tree) = tree {
            tree.signal(nix::sys::signal::Signal::SIGTERM);
        }
    };
    let timeout_at = timeout.map(|t| Instant::now() + t);
    let mut kill_at: Option<Instant> = None;
    let mut timed_out = false;
    let mut controls = true;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            message = control.recv(), if controls => match message {
                Some(Control::Signal(signal)) => send(&mut child, group, signal, &tree).await,
                Some(Control::Stop(grace)) => {
                    term(&tree);
                    let at = Instant::now() + grace;
                    kill_at = Some(kill_at.map_or(at, |k| k.min(at)));
                }
                None => controls = false,
            },
            () = tokio::time::sleep_until(timeout_at.unwrap_or_else(Instant::now)),
                if timeout_at.is_some() && !timed_out => {
                timed_out = true;
                term(&tree);
                let at = Instant::now() + shared.grace;
                kill_at = Some(kill_at.map_or(at, |k| k.min(at)));
            }
            () = tokio::time::sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                send(&mut child, group, Signal::Kill, &tree).await;
                kill_at = None;
            }
        }
    };
    let drain = match group_end {
        GroupEnd::Kill => {
            // Whatever the child left running in its group goes too, and with a tree
            // whatever left the group: before the drain, since they may hold the pipes.
            let _ = killpg(group, nix::sys::signal::Signal::SIGKILL);
            if let Some(tree) = tree {
                tree.end().await;
            }
            DRAIN
        }
        GroupEnd::Leave => LEAVE_DRAIN,
    };
    drop(child);
    // Past the wait the pumps go on alone (into the rings) until their pipes end.
    let _ = tokio::time::timeout(drain, futures::future::join_all(drained)).await;
    if let Ok(mut stdin) = shared.stdin.try_lock() {
        stdin.take();
    }
    let (status, wait_error) = match status {
        Ok(status) => (Some(status), None),
        Err(e) => (None, Some(e.to_string())),
    };
    live().retain(|(pid, weak)| *pid != shared.pid && weak.strong_count() > 0);
    shared.state().exit = Some(Exit {
        status,
        wait_error,
        timed_out,
        ended_at: SystemTime::now(),
    });
    shared.bump();
}

async fn send(child: &mut Child, group: Pid, signal: Signal, tree: &Option<Tree>) {
    let _ = killpg(group, signal.nix());
    if signal == Signal::Kill {
        // The child itself, should it have moved to a group of its own.
        let _ = child.start_kill();
        if let Some(tree) = tree {
            tree.kill().await;
        }
    }
}

async fn pump(
    mut pipe: impl AsyncRead + Unpin,
    shared: Arc<Shared>,
    stream: Stream,
    mut follower: Option<mpsc::Sender<Chunk>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                shared.append(stream, &buf[..n]);
                if let Some(tx) = &follower {
                    let chunk = Chunk {
                        stream,
                        bytes: bytes::Bytes::copy_from_slice(&buf[..n]),
                    };
                    if tx.send(chunk).await.is_err() {
                        // The follower went away; the rings keep what follows.
                        follower = None;
                    }
                }
            }
        }
    }
    shared.close(stream);
}

/// What [`Lines`] reads at a time. tokio's `BufReader` zeroes its buffer, and a turn's
/// first delta waited on that: 64 KiB zeroed at each spawn cost sixteen page faults and a
/// heap growth (a tenth of the spawn in a profile), where 8 KiB comes from memory the
/// allocator already has. A longer line only takes more reads; it is whole in `line`.
const LINES_BUFFER: usize = 8 * 1024;

/// A child's stdout split into lines of at most `max_line` bytes (a longer one is cut and
/// marked, and the rest of it consumed so the child never blocks), every byte copied into
/// the stdout ring as well. Read by its caller's own task, not a reader task of its own:
/// an agent's line then reaches the turn without a hop between tasks, which was the first
/// of the hops between the runtime printing a delta and the client receiving it.
pub(super) struct Lines {
    reader: tokio::io::BufReader<pipe::Receiver>,
    shared: Arc<Shared>,
    max_line: usize,
    /// The line read so far: kept here, so a `next` dropped half-way (a `select!` that took
    /// another branch) loses nothing.
    line: Vec<u8>,
    cut: bool,
    ended: bool,
}

impl Lines {
    /// The next line (an empty one is skipped), or `None` once stdout is closed. A last
    /// line without its newline is still a line.
    pub(super) async fn next(&mut self) -> Option<Line> {
        use tokio::io::AsyncBufReadExt;
        while !self.ended {
            // Nothing is taken from the buffer before it is in `line`: cancel-safe.
            let buf = match self.reader.fill_buf().await {
                Ok(buf) => buf,
                Err(_) => &[],
            };
            if buf.is_empty() {
                self.ended = true;
                self.shared.close(Stream::Stdout);
                return self.take();
            }
            let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = self.max_line.saturating_sub(self.line.len());
            self.cut |= chunk.len() > room;
            self.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = done.unwrap_or(buf.len());
            self.shared.append(Stream::Stdout, &buf[..used]);
            self.reader.consume(used);
            if done.is_some()
                && let Some(line) = self.take()
            {
                return Some(line);
            }
        }
        None
    }

    /// The line read so far, unless it is empty and whole.
    fn take(&mut self) -> Option<Line> {
        if self.line.is_empty() && !self.cut {
            return None;
        }
        let text = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        let cut = std::mem::take(&mut self.cut);
        Some(Line { text, cut })
    }
}

impl Drop for Lines {
    /// Nobody reads stdout any more: its ring says it ended, as at the child's close.
    fn drop(&mut self) {
        if !self.ended {
            self.shared.close(Stream::Stdout);
        }
    }
}
