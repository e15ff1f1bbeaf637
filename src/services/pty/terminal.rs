//! One terminal: the shell on its PTY, the reader task that fills the replay buffer and
//! feeds the attached clients, and the reaper task that owns the shell until it is reaped
//! and ends whatever its session left behind.

use super::session;
use super::{CHUNK_BYTES, CLIENT_QUEUE_CHUNKS, Error, REPLAY_BYTES, STALL, Size, Spec};
use crate::services::before_exec::{self, Steps};
use crate::services::namespaces::entry::Way;
use crate::services::namespaces::hidden;
use crate::services::supervisor::ring::{Retention, Ring};
use crate::services::supervisor::trees::{Birth, Tree};
use bytes::Bytes;
use nix::sys::signal::Signal;
use pty_process::{OwnedReadPty, OwnedWritePty};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWrite};
use tokio::process::Child;
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;

/// How long the exit waits for the reader to reach the end of the PTY's output.
const DRAIN: Duration = Duration::from_secs(2);

/// How a terminal's shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
}

/// Why an attachment's output ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The shell exited (`None`: waiting for it failed) and all its output was delivered.
    Exited(Option<Exit>),
    /// The client's queue stayed full for [`STALL`]: it was dropped.
    Dropped,
}

/// What a client and the reader share: whether the client was dropped, and a wake-up for
/// a client blocked on its socket.
#[derive(Default)]
struct Gone {
    dropped: AtomicBool,
    notify: Notify,
}

struct Client {
    id: u64,
    tx: mpsc::Sender<Bytes>,
    gone: Arc<Gone>,
}

struct State {
    size: Size,
    replay: Ring,
    clients: Vec<Client>,
    next_client: u64,
    /// Set once the shell is reaped and its output drained.
    exit: Option<Option<Exit>>,
}

enum Control {
    /// Hang up the session now, KILL what is left after the grace period.
    Stop(Duration),
}

struct Shared {
    pid: u32,
    shell: String,
    cwd: Option<PathBuf>,
    created_at: SystemTime,
    /// Held across a whole write: the PTY keeps one waker per direction, so two writers
    /// waiting at once could lose a wake-up.
    writing: tokio::sync::Mutex<()>,
    /// Locked only for one poll or a resize, so a resize never waits for a blocked write.
    pty: Mutex<OwnedWritePty>,
    state: Mutex<State>,
    control: mpsc::UnboundedSender<Control>,
    /// Becomes `true` when the exit is recorded.
    ended: watch::Sender<bool>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pty(&self) -> MutexGuard<'_, OwnedWritePty> {
        self.pty.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes a client that did not keep up; its output task is woken to close.
    fn drop_client(&self, id: u64) {
        let mut state = self.state();
        if let Some(at) = state.clients.iter().position(|c| c.id == id) {
            let client = state.clients.remove(at);
            client.gone.dropped.store(true, Ordering::SeqCst);
            client.gone.notify.notify_one();
        }
    }
}

/// A view of a running (or ended) terminal. Cheap to clone; dropping it leaves the shell
/// alone.
#[derive(Clone)]
pub struct TerminalHandle {
    shared: Arc<Shared>,
}

impl TerminalHandle {
    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    pub fn shell(&self) -> &str {
        &self.shared.shell
    }

    pub fn cwd(&self) -> Option<&std::path::Path> {
        self.shared.cwd.as_deref()
    }

    pub fn created_at(&self) -> SystemTime {
        self.shared.created_at
    }

    pub fn size(&self) -> Size {
        self.shared.state().size
    }

    /// Clients attached now.
    pub fn clients(&self) -> usize {
        self.shared.state().clients.len()
    }

    /// `None` while it runs; `Some(None)` when it ended but waiting for it failed.
    pub fn exit(&self) -> Option<Option<Exit>> {
        self.shared.state().exit
    }

    pub fn is_running(&self) -> bool {
        self.exit().is_none()
    }

    /// Writes `bytes` to the shell's input, waiting while the terminal's input buffer is
    /// full (the shell not reading).
    pub async fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        let _writing = self.shared.writing.lock().await;
        let mut rest = bytes;
        while !rest.is_empty() {
            if !self.is_running() {
                return Err(Error::Ended);
            }
            let n = std::future::poll_fn(|cx| {
                let mut pty = self.shared.pty();
                std::pin::Pin::new(&mut *pty).poll_write(cx, rest)
            })
            .await
            .map_err(Error::Io)?;
            if n == 0 {
                return Err(Error::Io(std::io::ErrorKind::WriteZero.into()));
            }
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Sets the window size (TIOCSWINSZ); the shell gets SIGWINCH.
    pub fn resize(&self, size: Size) -> Result<(), Error> {
        self.shared
            .pty()
            .resize(pty_process::Size::new(size.rows, size.cols))
            .map_err(pty_error)?;
        self.shared.state().size = size;
        Ok(())
    }

    /// Attaches a client: what the replay buffer holds now, then every chunk of output
    /// after it. Dropping the attachment detaches.
    pub fn attach(&self) -> Attachment {
        let (tx, rx) = mpsc::channel(CLIENT_QUEUE_CHUNKS);
        let gone = Arc::new(Gone::default());
        let mut state = self.shared.state();
        // Under the lock the reader writes and broadcasts with: nothing between the replay
        // and the first live chunk is lost or repeated.
        let replay = state.replay.read_from(0).bytes;
        let id = state.next_client;
        state.next_client += 1;
        if state.exit.is_none() {
            state.clients.push(Client {
                id,
                tx,
                gone: gone.clone(),
            });
        }
        Attachment {
            replay,
            rx,
            gone,
            id,
            terminal: self.clone(),
        }
    }

    /// Waits for the exit (the shell reaped, its session ended, its output drained).
    pub async fn wait(&self) -> Option<Exit> {
        let mut ended = self.shared.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
        self.exit().flatten()
    }

    /// Starts a stop with no grace period and does not wait for it (an owner forgetting
    /// the terminal).
    pub fn kill_now(&self) {
        if self.is_running() {
            let _ = self.shared.control.send(Control::Stop(Duration::ZERO));
        }
    }

    /// Hangs up the session (HUP, CONT, TERM), waits up to `grace`, then KILLs what is
    /// left; returns the exit.
    pub async fn stop(&self, grace: Duration) -> Option<Exit> {
        if self.is_running() {
            let _ = self.shared.control.send(Control::Stop(grace));
        }
        self.wait().await
    }
}

/// One client's view of the output: the replay first ([`Attachment::replay`]), then
/// [`Attachment::next`] until the output ends, then [`Attachment::end`] says why.
pub struct Attachment {
    /// The replay buffer at the moment of attaching (at most [`REPLAY_BYTES`]).
    pub replay: Vec<u8>,
    rx: mpsc::Receiver<Bytes>,
    gone: Arc<Gone>,
    id: u64,
    terminal: TerminalHandle,
}

impl Attachment {
    /// The next chunk of output, `None` once the output ended for this client.
    pub async fn next(&mut self) -> Option<Bytes> {
        self.rx.recv().await
    }

    /// Resolves when the client is dropped for not keeping up (at once if it was).
    pub async fn dropped(&self) {
        loop {
            let notified = self.gone.notify.notified();
            if self.gone.dropped.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Why the output ended (after [`Attachment::next`] gave `None`).
    pub async fn end(&self) -> End {
        if self.gone.dropped.load(Ordering::SeqCst) {
            return End::Dropped;
        }
        End::Exited(self.terminal.wait().await)
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.terminal
            .shared
            .state()
            .clients
            .retain(|c| c.id != self.id);
    }
}

/// Starts `spec`'s shell on a new PTY, with its reader and reaper tasks (a tokio runtime
/// must be running).
pub fn spawn(spec: &Spec) -> Result<TerminalHandle, Error> {
    let (pty, pts) = match &spec.ptmx_in {
        Some(root) => open_from(root)?,
        None => pty_process::open().map_err(pty_error)?,
    };
    pty.resize(pty_process::Size::new(spec.size.rows, spec.size.cols))
        .map_err(pty_error)?;
    let mut command = match &spec.through {
        Some((program, args)) => pty_process::Command::new(program).args(args),
        None => pty_process::Command::new(&spec.shell).args(&spec.args),
    }
    .env_clear()
    .envs(spec.env.iter().map(|(k, v)| (k, v)))
    .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command = command.current_dir(cwd);
    }
    if let Some(user) = crate::services::child_user::child_user() {
        command = command.uid(user.uid).gid(user.gid);
    }
    // The shell's whole tree, where the server keeps trees: what leaves the session
    // (`setsid`) still ends with the terminal.
    let birth = Birth::begin();
    let spawn_error = |source| Error::Spawn {
        shell: spec.shell.clone(),
        source,
    };
    let way = Way::open(spec.enter.as_ref()).map_err(spawn_error)?;
    let steps = Steps {
        join_cgroup: crate::services::cgroup::Join::new(&spec.join_cgroup),
        keep: Vec::new(),
        become_id: None,
        subreaper: birth.is_some(),
        hide: Steps::hide(
            hidden::for_children().filter(|_| !way.inside()),
            spec.cwd.as_deref(),
        ),
        enter: way.in_child(),
    };
    command = before_exec::apply_pty(command, steps);
    let child = way
        .spawn(|| command.spawn(pts))
        .map_err(spawn_error)?
        .map_err(|e| spawn_error(io_of(e)))?;
    let pid = child
        .id()
        .ok_or_else(|| Error::Io(std::io::Error::other("the shell has no pid")))?;
    let tree = birth.map(|birth| birth.born(pid));
    let (read, write) = pty.into_split();
    let (control, control_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        pid,
        shell: spec.shell.clone(),
        cwd: spec.cwd.clone(),
        created_at: SystemTime::now(),
        writing: tokio::sync::Mutex::new(()),
        pty: Mutex::new(write),
        state: Mutex::new(State {
            size: spec.size,
            replay: Ring::new(REPLAY_BYTES, Retention::Newest),
            clients: Vec::new(),
            next_client: 0,
            exit: None,
        }),
        control,
        ended: watch::Sender::new(false),
    });
    let reader = tokio::spawn(pump(read, shared.clone()));
    tokio::spawn(reap(child, shared.clone(), control_rx, tree, reader));
    Ok(TerminalHandle { shared })
}

fn io_of(e: pty_process::Error) -> std::io::Error {
    match e {
        pty_process::Error::Io(e) => e,
        pty_process::Error::Rustix(errno) => {
            std::io::Error::from_raw_os_error(errno.raw_os_error())
        }
        other => std::io::Error::other(other.to_string()),
    }
}

/// A terminal pair from the multiplexer `dev/pts/ptmx` beneath `root` (a sandbox's, another
/// devpts instance than the host's). The sandbox's root may have replaced its `/dev/pts`
/// (a tmpfs, a link to a host path): the multiplexer is opened beneath `root` without
/// following any link (`openat2`), and must be the character device 5:2 of a devpts. The
/// slave is taken with `TIOCGPTPEER` (Linux 4.13), from the master itself, so it is in the
/// same instance whatever the paths say. `pty_process` takes descriptors it did not open
/// only through `unsafe` constructors: allowed here alone.
#[allow(unsafe_code)]
fn open_from(root: &std::path::Path) -> Result<(pty_process::Pty, pty_process::Pts), Error> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::pty::OpenptFlags;
    let io = |e: rustix::io::Errno| Error::Io(std::io::Error::from(e));
    let dir = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)?;
    let flags = OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let beneath = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let master = rustix::fs::openat2(&dir, "dev/pts/ptmx", flags, Mode::empty(), beneath)
        .map_err(|e| Error::NoMultiplexer(format!("cannot be opened as it is ({e})")))?;
    let stat = rustix::fs::fstat(&master).map_err(io)?;
    let is_ptmx = rustix::fs::FileType::from_raw_mode(stat.st_mode)
        == rustix::fs::FileType::CharacterDevice
        && (
            rustix::fs::major(stat.st_rdev),
            rustix::fs::minor(stat.st_rdev),
        ) == (5, 2);
    if !is_ptmx {
        return Err(Error::NoMultiplexer("is not a terminal multiplexer".into()));
    }
    rustix::pty::unlockpt(&master).map_err(io)?;
    let slave = rustix::pty::ioctl_tiocgptpeer(
        &master,
        OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC,
    )
    .map_err(io)?;
    // SAFETY: `master` was opened above, checked to be a ptmx, non-blocking, and is owned
    // only by the `Pty`; `slave` is its peer, owned only by the `Pts`.
    let pty = unsafe { pty_process::Pty::from_fd(master) }.map_err(pty_error)?;
    let pts = unsafe { pty_process::Pts::from_fd(slave) };
    Ok((pty, pts))
}

fn pty_error(e: pty_process::Error) -> Error {
    Error::Io(io_of(e))
}

/// Reads the PTY until its slave side is closed everywhere (EIO), keeping every chunk in
/// the replay buffer and handing it to each attached client. A client with room gets it at
/// once; one whose queue is full is waited for, but only while its queue has stayed full
/// for less than [`STALL`]: past that it is dropped and the others go on.
async fn pump(mut read: OwnedReadPty, shared: Arc<Shared>) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    // When each client's queue was first found full (cleared when it next had room).
    let mut full_since: HashMap<u64, Instant> = HashMap::new();
    loop {
        let n = match read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = Bytes::copy_from_slice(&buf[..n]);
        let targets: Vec<(u64, mpsc::Sender<Bytes>)> = {
            let mut state = shared.state();
            state.replay.write(&chunk);
            state.clients.iter().map(|c| (c.id, c.tx.clone())).collect()
        };
        for (id, tx) in targets {
            match tx.try_send(chunk.clone()) {
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {
                    full_since.remove(&id);
                }
                Err(mpsc::error::TrySendError::Full(chunk)) => {
                    let since = *full_since.entry(id).or_insert_with(Instant::now);
                    let left = STALL.saturating_sub(since.elapsed());
                    if tokio::time::timeout(left, tx.send(chunk)).await.is_err() {
                        full_since.remove(&id);
                        shared.drop_client(id);
                    }
                }
            }
        }
    }
    shared.state().replay.close();
}

/// Owns the shell until it is reaped. When it exits (or is stopped), whatever is left of
/// its session is killed, so the PTY's slave side closes and nothing outlives the terminal;
/// then the reader drains, the exit is recorded and the clients' queues are closed.
async fn reap(
    mut child: Child,
    shared: Arc<Shared>,
    mut control: mpsc::UnboundedReceiver<Control>,
    tree: Option<Tree>,
    reader: tokio::task::JoinHandle<()>,
) {
    let sid = shared.pid;
    let mut kill_at: Option<Instant> = None;
    let mut controls = true;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            message = control.recv(), if controls => match message {
                Some(Control::Stop(grace)) => {
                    session::signal(sid, &[Signal::SIGHUP, Signal::SIGCONT, Signal::SIGTERM]);
                    if let Some(tree) = &tree {
                        tree.signal(Signal::SIGTERM);
                    }
                    let at = Instant::now() + grace;
                    kill_at = Some(kill_at.map_or(at, |k| k.min(at)));
                }
                None => controls = false,
            },
            () = tokio::time::sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                session::signal(sid, &[Signal::SIGKILL]);
                let _ = child.start_kill();
                kill_at = None;
            }
        }
    };
    // What the shell left running in its session (background jobs, nohup) goes too, and
    // with a tree what left the session.
    session::signal(sid, &[Signal::SIGKILL]);
    if let Some(tree) = tree {
        tree.end().await;
    }
    drop(child);
    let _ = tokio::time::timeout(DRAIN, reader).await;
    let exit = status.ok().map(|status| {
        use std::os::unix::process::ExitStatusExt;
        Exit {
            code: status.code(),
            signal: status.signal(),
        }
    });
    let clients = {
        let mut state = shared.state();
        state.exit = Some(exit);
        std::mem::take(&mut state.clients)
    };
    // Dropping the senders ends each client's output after what it was sent.
    drop(clients);
    shared.ended.send_replace(true);
}
