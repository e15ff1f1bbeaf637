//! Start-up and shutdown: two listeners (the API and the terminal WebSocket), one shared
//! state, a clean stop on SIGINT or SIGTERM.

use super::SharedState;
use super::router;
use crate::zero_copy::{self, FileChannel};
use axum::Router;
use axum::extract::connect_info::{ConnectInfo, IntoMakeServiceWithConnectInfo};
use axum::middleware::AddExtension;
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

/// The main listener's server: the API routes, over connections that send file answers
/// with `sendfile` ([`zero_copy`]).
pub fn serve_main(
    listener: TcpListener,
    state: SharedState,
) -> axum::serve::Serve<
    zero_copy::Listener,
    IntoMakeServiceWithConnectInfo<Router, FileChannel>,
    AddExtension<Router, ConnectInfo<FileChannel>>,
> {
    axum::serve(
        zero_copy::Listener(listener),
        router::app(state).into_make_service_with_connect_info::<FileChannel>(),
    )
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
    let main = serve_main(listeners.main, state.clone()).with_graceful_shutdown(signal(rx.clone()));
    // Streams write many small frames; without TCP_NODELAY each can wait on the peer's
    // delayed ACK (40 ms on Linux).
    let terminal = axum::serve(
        listeners.terminal.tap_io(no_delay),
        router::terminal_app(state.clone()),
    )
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
