//! The engine process: the state folder, the lock that leaves one engine however many
//! start at once, the descriptor (written atomically, mode 0600), the log, and the exits
//! (idle timeout, `POST /v1/shutdown`, SIGTERM / SIGINT). Sandboxes outlive the engine:
//! the next engine adopts them from the state folder.

use super::app::app;
use super::local::LocalProvider;
use super::provider::Provider;
use super::state::{EngineState, Shared};
use crate::error::engine::EngineError;
use crate::wire::{Descriptor, PROTOCOL, descriptor_path, lock_path, log_path};
use crate::zero_copy;
use anyhow::Context as _;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Spec 8: the engine exits after this long without a request.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(900);
/// Spec 8: a session unused this long is closed.
pub const SESSION_IDLE: Duration = Duration::from_secs(600);
/// After the stop, how long open streams and terminals get before the engine exits anyway.
const DRAIN: Duration = Duration::from_secs(2);
/// How long a loser of the start race waits for the winner's descriptor.
const WINNER_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct DaemonOptions {
    pub state_dir: PathBuf,
    /// 0: any free port.
    pub port: u16,
    /// The E2B-compatible front's port; 0: any free port.
    pub e2b_port: u16,
    pub idle_timeout: Duration,
    pub session_idle: Duration,
    /// The connection cap, one count over both ports; `None`: [`crate::connections::default_max_connections`].
    pub max_connections: Option<usize>,
}

/// How `serve` ended.
#[derive(Debug)]
pub enum Outcome {
    /// It served, then stopped (idle, shutdown route, signal).
    Stopped { reason: &'static str },
    /// Another engine holds the lock: nothing was started; its descriptor, when readable.
    AlreadyRunning(Option<Descriptor>),
}

/// Runs the engine until it stops; `on_ready` is called once the descriptor is written.
pub async fn serve(
    options: DaemonOptions,
    on_ready: impl FnOnce(&Descriptor) + Send,
) -> anyhow::Result<Outcome> {
    let dir = &options.state_dir;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the state folder {}", dir.display()))?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let Some(lock) = take_lock(dir)? else {
        return Ok(Outcome::AlreadyRunning(wait_for_winner(dir).await));
    };
    init_log(dir);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", options.port))?;
    let port = listener.local_addr()?.port();
    let e2b_listener = tokio::net::TcpListener::bind(("127.0.0.1", options.e2b_port))
        .await
        .with_context(|| {
            format!(
                "cannot listen on 127.0.0.1:{} (the E2B front)",
                options.e2b_port
            )
        })?;
    let e2b_port = e2b_listener.local_addr()?.port();
    let local = LocalProvider::open(dir).context("cannot open the local provider")?;
    // Every kind behind the one trait: builtin, node (in-process), rest, exec (plugins).
    let mut providers: Vec<Arc<dyn Provider>> = vec![local.clone()];
    providers.extend(super::memory::providers(dir));
    providers.extend(super::rest::providers(dir));
    providers.extend(super::plugins::providers(dir).await);
    let state: Shared = Arc::new(EngineState::new(
        new_token()?,
        providers,
        options.session_idle,
    ));
    let descriptor = Descriptor {
        protocol: PROTOCOL.into(),
        pid: std::process::id(),
        host: "127.0.0.1".into(),
        port,
        token: state.token.clone(),
        version: env!("CARGO_PKG_VERSION").into(),
        started_at: crate::services::files::rfc3339(SystemTime::now()),
        e2b_port: Some(e2b_port),
        e2b_api_key: Some(super::e2b::api_key(&state.token)),
    };
    write_private(
        &descriptor_path(dir),
        &serde_json::to_vec_pretty(&descriptor)?,
    )
    .context("cannot write the engine descriptor")?;
    tracing::info!(port, e2b_port, pid = descriptor.pid, "engine listening");
    on_ready(&descriptor);

    let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel::<()>();
    let router = app(state.clone());
    let max_connections = options
        .max_connections
        .unwrap_or_else(crate::connections::default_max_connections);
    // One count for both listeners, as the server's two share one.
    let limits = connection_limits(max_connections);
    let server = tokio::spawn(crate::connections::serve(
        zero_copy::Listener(listener),
        limits.clone(),
        zero_copy::with_channel(router),
        async {
            let _ = stopped_rx.await;
        },
    ));
    // The E2B front: a second door of this process over the same state, with the same
    // connection rules (header timeout, cap, refused-body close).
    let (front_stop_tx, front_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let front_router = super::e2b::app(super::e2b::Front::new(state.clone()));
    // TCP_NODELAY, as on `/v1`: the SDKs' calls are streams of small envelopes, and each
    // could otherwise wait for the client's delayed ACK of the one before (tens of ms).
    let e2b_listener = axum::serve::ListenerExt::tap_io(e2b_listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
    });
    let front = tokio::spawn(crate::connections::serve(
        e2b_listener,
        limits,
        move |_: &tokio::net::TcpStream| front_router.clone(),
        async {
            let _ = front_stop_rx.await;
        },
    ));
    let keeping = local.clone();
    let reason = stop_reason(&state, options.idle_timeout, move || {
        keeping.sandbox_count() > 0
    })
    .await;
    tracing::info!(reason, "engine stopping");
    let _ = stopped_tx.send(());
    let _ = front_stop_tx.send(());
    let _ = tokio::time::timeout(DRAIN, async {
        let _ = tokio::join!(server, front);
    })
    .await;
    local.shutdown().await;
    // The descriptor goes before the lock, so the next engine never sees a stale one.
    if Descriptor::read(dir).is_some_and(|d| d.pid == descriptor.pid) {
        let _ = std::fs::remove_file(descriptor_path(dir));
    }
    drop(lock);
    Ok(Outcome::Stopped { reason })
}

/// The engine's connection limits: the defaults of the server's `server.connections`
/// (`max` is the machine's default, 1,024 or half the descriptor limit).
fn connection_limits(max: usize) -> crate::connections::Limits {
    let refusal = EngineError::new(
        crate::error::engine::Code::Busy,
        format!("more than {max} connections are open; retry shortly"),
    );
    crate::connections::Limits::new(
        max,
        crate::connections::DEFAULT_HEADER_TIMEOUT,
        crate::error::engine::Code::Busy.status(),
        &serde_json::to_vec(&refusal.body()).unwrap_or_default(),
    )
}

/// The engine lock, or `None` when another engine holds it.
fn take_lock(dir: &Path) -> anyhow::Result<Option<Flock<File>>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(lock_path(dir))
        .context("cannot open the engine lock")?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(Some(lock)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(anyhow::anyhow!("cannot lock the engine lock: {e}")),
    }
}

/// The winner's descriptor, once it has written it.
async fn wait_for_winner(dir: &Path) -> Option<Descriptor> {
    let deadline = tokio::time::Instant::now() + WINNER_WAIT;
    loop {
        if let Some(d) = Descriptor::read(dir) {
            return Some(d);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Why the engine stops: a signal, the shutdown route, or the idle timeout. Idle sessions
/// are closed on the way. While `busy` (a sandbox is alive) the engine does not go idle:
/// it is what ends the sandbox at its expiry.
async fn stop_reason(
    state: &Shared,
    idle_timeout: Duration,
    busy: impl Fn() -> bool,
) -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut shutdown = state.shutdown.subscribe();
    let tick = (idle_timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut ticker = tokio::time::interval(tick);
    loop {
        tokio::select! {
            Some(()) = async { term.as_mut()?.recv().await } => return "SIGTERM",
            Some(()) = async { int.as_mut()?.recv().await } => return "SIGINT",
            Ok(()) = shutdown.changed() => if *shutdown.borrow() { return "shutdown requested" },
            _ = ticker.tick() => {
                let closed = state.sessions.sweep();
                if closed > 0 {
                    tracing::info!(closed, "idle sessions closed");
                }
                if state.activity.idle_for() >= idle_timeout && !busy() {
                    return "idle timeout";
                }
            }
        }
    }
}

/// 32 random bytes, hex.
fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness for the token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `bytes` to `path` with mode 0600 through a temp file and a rename, so a reader
/// sees the old descriptor or the new one, never half of one.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The engine's log goes to `<state_dir>/engine.log` (appended; `RUST_LOG` filters).
fn init_log(dir: &Path) {
    let Ok(file) = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log_path(dir))
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("svc=info,warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::connection_limits;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Past the cap a connection is answered 503 `E9003` before its request is read; the
    /// engine's cap is the machine's default, which no conformance case can reach.
    #[tokio::test]
    async fn past_the_cap_a_connection_is_answered_busy() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        tokio::spawn(crate::connections::serve(
            listener,
            connection_limits(1),
            move |_: &tokio::net::TcpStream| router.clone(),
            std::future::pending(),
        ));
        let _held = tokio::net::TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut refused = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = refused
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await;
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(5), refused.read_to_string(&mut answer))
            .await
            .unwrap()
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(answer.contains("retry-after: 1\r\n"), "{answer}");
        assert!(answer.contains("\"E9003\""), "{answer}");
    }
}
