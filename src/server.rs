//! Start-up and shutdown: two listeners (the API and the terminal WebSocket), one shared
//! state, a clean stop on SIGINT or SIGTERM.

use crate::audit::Audit;
use crate::config::Settings;
use crate::policy::Policy;
use crate::routes;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// How long open streams may keep the server up after a stop signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

pub struct AppState {
    pub settings: Settings,
    pub policy: Policy,
    pub audit: Audit,
    pub started: Instant,
    /// Relative paths are judged against this directory (the server's working directory).
    pub base_dir: PathBuf,
    pub capabilities: crate::capabilities::DocumentCache,
}

pub type SharedState = Arc<AppState>;

impl AppState {
    pub fn new(settings: Settings) -> std::io::Result<SharedState> {
        let audit = Audit::start(settings.audit, settings.audit_file.as_deref())?;
        Ok(AppState::build(settings, audit))
    }

    /// Audit off: for tests, benchmarks and embedding.
    pub fn with_settings(settings: Settings) -> SharedState {
        AppState::build(settings, Audit::off())
    }

    fn build(settings: Settings, audit: Audit) -> SharedState {
        Arc::new(AppState {
            policy: Policy::new(&settings),
            settings,
            audit,
            started: Instant::now(),
            base_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            capabilities: Default::default(),
        })
    }
}

pub struct Listeners {
    pub main: TcpListener,
    pub terminal: TcpListener,
}

impl Listeners {
    pub async fn bind(host: &str, port: u16, terminal_port: u16) -> std::io::Result<Listeners> {
        let bind = |port: u16| async move {
            TcpListener::bind((host, port)).await.map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot listen on {host}:{port}: {e}"))
            })
        };
        Ok(Listeners {
            main: bind(port).await?,
            terminal: bind(terminal_port).await?,
        })
    }

    pub fn main_addr(&self) -> std::io::Result<SocketAddr> {
        self.main.local_addr()
    }

    pub fn terminal_addr(&self) -> std::io::Result<SocketAddr> {
        self.terminal.local_addr()
    }
}

/// `http://HOST:PORT`, with brackets for IPv6.
pub fn url_of(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// Serves until `stop` resolves, then lets open requests finish for [`SHUTDOWN_GRACE`].
pub async fn run(
    state: SharedState,
    listeners: Listeners,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let signal = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stopped| *stopped).await;
    };
    let main = axum::serve(listeners.main, routes::app(state.clone()))
        .with_graceful_shutdown(signal(rx.clone()));
    let terminal = axum::serve(listeners.terminal, routes::terminal_app(state))
        .with_graceful_shutdown(signal(rx));
    let main = tokio::spawn(async move { main.await });
    let terminal = tokio::spawn(async move { terminal.await });
    stop.await;
    tracing::info!("stopping: no new connections, open ones get {SHUTDOWN_GRACE:?}");
    let _ = tx.send(true);
    let drained = async {
        let _ = main.await;
        let _ = terminal.await;
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        tracing::warn!("open connections did not finish in time; closing them");
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop the server with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
