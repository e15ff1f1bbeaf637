//! Start-up and shutdown: two listeners (the API and the terminal WebSocket), one shared
//! state, a clean stop on SIGINT or SIGTERM. Both listeners' connections are served by
//! [`connections::serve`] under `server.connections` (one count for both).

use super::SharedState;
use super::router;
use crate::connections::{self, Limits};
use crate::error::{ApiError, Code};
use crate::zero_copy;
use axum::serve::ListenerExt;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;

/// How long open streams may keep the server up after a stop signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

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

fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
}

/// The connection limits of `state`'s settings, with a count of their own.
fn limits(state: &SharedState) -> Limits {
    let settings = &state.settings.connections;
    let refusal = ApiError::new(
        Code::TooManyConnections,
        format!(
            "more than {} connections are open (`server.connections.max`); retry shortly",
            settings.max
        ),
    );
    Limits::new(
        settings.max,
        settings.header_timeout,
        Code::TooManyConnections.status(),
        &serde_json::to_vec(&refusal.flat_body()).unwrap_or_default(),
    )
}

/// The main listener's server: the API routes, over connections that send file answers
/// with `sendfile` ([`zero_copy`]), until the process ends.
pub fn serve_main(
    listener: TcpListener,
    state: SharedState,
) -> impl Future<Output = std::io::Result<()>> + Send {
    let limits = limits(&state);
    serve_main_until(listener, state, limits, std::future::pending())
}

fn serve_main_until(
    listener: TcpListener,
    state: SharedState,
    limits: Limits,
    stop: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = std::io::Result<()>> + Send {
    let front = router::front(&state, crate::server::endpoints::Port::Main);
    connections::serve(
        zero_copy::Listener(listener),
        limits,
        zero_copy::with_channel(front),
        stop,
    )
}

/// Serves until `stop` resolves, then lets open requests finish for [`SHUTDOWN_GRACE`].
pub async fn run(
    state: SharedState,
    listeners: Listeners,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Before the first request, so every capabilities document carries it (whoever
    // started the server: the CLI, a test, a program using the library).
    let _ = state.terminal_port.set(listeners.terminal_addr()?.port());
    let (tx, rx) = tokio::sync::watch::channel(false);
    let signal = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stopped| *stopped).await;
    };
    let limits = limits(&state);
    let main = serve_main_until(
        listeners.main,
        state.clone(),
        limits.clone(),
        signal(rx.clone()),
    );
    // Streams write many small frames; without TCP_NODELAY each can wait on the peer's
    // delayed ACK (40 ms on Linux).
    let terminal_app = router::terminal_app(state.clone());
    let terminal = connections::serve(
        listeners.terminal.tap_io(no_delay),
        limits,
        move |_: &tokio::net::TcpStream| terminal_app.clone(),
        signal(rx),
    );
    let main = tokio::spawn(main);
    let terminal = tokio::spawn(terminal);
    stop.await;
    tracing::info!("stopping: no new connections, open ones get {SHUTDOWN_GRACE:?}");
    let _ = tx.send(true);
    let drained = async {
        let _ = main.await;
        let _ = terminal.await;
    };
    // Children are ended while connections drain, so a stream following one sees its exit
    // and ends; nothing the server started outlives it.
    let (drained, ()) = tokio::join!(
        tokio::time::timeout(SHUTDOWN_GRACE, drained),
        state.end_process_children()
    );
    if drained.is_err() {
        tracing::warn!("open connections did not finish in time; closing them");
    }
    Ok(())
}

/// SIGINT and SIGTERM handlers, installed before the server says it is ready so that a
/// signal sent right after the `listening on` line stops it cleanly instead of killing it.
pub struct StopSignal {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl StopSignal {
    pub fn install() -> std::io::Result<StopSignal> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignal {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// Resolves on the first SIGINT or SIGTERM.
    pub async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
