//! The client of the local engine (`svc-engine/1`, spec part B): it finds the engine through
//! the descriptor in the state folder and starts one when none answers, sends the token and
//! the connection with every request, rebuilds the engine's typed errors, and offers a typed
//! method for every route of the engine's table. It knows the engine only through the
//! protocol's leaves ([`crate::wire`], `error::engine`), as any other client would.
//!
//! - [`Client`], [`ClientOptions`]: finding, starting and recovering an engine
//!   (`transport.rs`, `launch.rs`);
//! - the routes: `sandboxes.rs`, `commands.rs`, `files.rs`, `code.rs`, `terminal.rs`;
//! - [`ClientError`], [`ApiError`]: the engine's error body rebuilt;
//! - `sse.rs`: the event-stream parser under the streamed routes.

mod code;
mod commands;
mod error;
mod events;
mod files;
mod launch;
mod raw;
mod raw_files;
mod sandboxes;
mod terminal;
mod transport;
mod types;
mod upload_body;

pub use crate::wire::ALLOWED_SIGNALS;
pub use error::{ApiError, ClientError, ClientResult};
pub use events::EventStream;
pub use files::{Download, Upload, WriteOptions};
pub use launch::pid_alive;
pub use terminal::{
    DEFAULT_COLS, DEFAULT_ROWS, DEFAULT_SHELL, Terminal, TerminalReader, TerminalWriter,
};
pub use types::{
    CodeResult, CommandEvent, CommandResult, EntryInfo, ProcessRecord, Progress, WatchEvent,
};

use crate::wire::{self, Connection, Descriptor};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a client waits for an engine it started to answer.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Where the descriptor is (`wire::state_dir()` by default).
    pub state_dir: PathBuf,
    /// Who the engine speaks to the provider as; sent with every request.
    pub connection: Connection,
    /// The program started as `PROGRAM provider engine serve`; `None`: this executable.
    /// Tests (whose executable is the test harness) name the `svc` binary here.
    pub program: Option<PathBuf>,
    /// Start an engine when none answers. Off for `status` and `stop`, which report instead.
    pub autostart: bool,
    /// How long to wait for a started engine to answer.
    pub start_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            state_dir: wire::state_dir(),
            connection: Connection::default(),
            program: None,
            autostart: true,
            start_timeout: START_TIMEOUT,
        }
    }
}

/// A client of the local engine. Cheap to clone; clones share the engine they found.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    options: ClientOptions,
    /// The connection header's value, encoded once.
    connection_header: String,
    /// The engine in use, once found or started.
    engine: Mutex<Option<Descriptor>>,
    /// One start at a time per client: concurrent calls that all found no engine wait for
    /// the one start instead of racing their own.
    starting: tokio::sync::Mutex<()>,
}

impl Client {
    pub fn new(options: ClientOptions) -> ClientResult<Client> {
        let http = reqwest::Client::builder()
            // The engine is on loopback: a proxy from the environment must never see it.
            .no_proxy()
            // Plain HTTP on loopback: no TLS roots, since loading the system's costs tens of
            // milliseconds of every command's start (the cold start's budget is 50).
            .tls_certs_only(std::iter::empty())
            .http1_only()
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| ClientError::transport(&e))?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                connection_header: options.connection.header_value(),
                options,
                engine: Mutex::new(None),
                starting: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// A client of the default state folder with the default connection (`local`).
    pub fn from_env() -> ClientResult<Client> {
        Client::new(ClientOptions::default())
    }

    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// The descriptor of the engine in use, when one was found or started.
    pub fn descriptor(&self) -> Option<Descriptor> {
        self.inner
            .engine
            .lock()
            .map(|d| d.clone())
            .unwrap_or_default()
    }
}
