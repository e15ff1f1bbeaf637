//! One running plugin process: started, greeted (the hello both ways), then served by three
//! tasks: a writer that owns its stdin, a reader that owns its stdout and the process and
//! routes every line to the call it names, and a logger of its stderr. When the process
//! exits or breaks the protocol, every call in flight is answered E9001 with the reason, and
//! the reason stays for the provider record. Dropping the [`Conn`] kills the process.

use super::handshake::{Handshake, handshake};
use super::lines::{Read, read_line};
use super::protocol::{self, Delivery, FromPlugin, Hello, Line, MAX_LINE};
use super::stderr::log_stderr;
use crate::error::engine::{Code, EngineError};
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot};

/// Lines waiting for the plugin's stdin.
const WRITE_QUEUE: usize = 64;
/// How long an exiting plugin gets to be reaped, for its status in the message.
const REAP_WAIT: Duration = Duration::from_secs(1);

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the reader task and the calls share.
pub struct Routes {
    pub calls: Mutex<HashMap<u64, mpsc::Sender<Delivery>>>,
    next_id: AtomicU64,
    /// Why the process is gone, once it is.
    pub dead: Mutex<Option<String>>,
}

/// A running plugin: send requests through it; drop it to stop the process.
pub struct Conn {
    /// The plugin's id, for messages and the log.
    pub plugin: String,
    pub idle: Duration,
    pub routes: Arc<Routes>,
    pub writer: mpsc::Sender<String>,
    _stop: oneshot::Sender<()>,
}

impl Conn {
    /// Why the process is gone, or `None` while it serves.
    pub fn dead(&self) -> Option<String> {
        lock(&self.routes.dead).clone()
    }

    /// A new call id and the channel its messages arrive on.
    pub fn open_call(&self) -> Result<(u64, mpsc::Receiver<Delivery>), EngineError> {
        let mut calls = lock(&self.routes.calls);
        if let Some(reason) = self.dead() {
            return Err(failed(&self.plugin, &reason));
        }
        let id = self.routes.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel(32);
        calls.insert(id, tx);
        Ok((id, rx))
    }
}

/// E9001 for a plugin that cannot serve.
pub fn failed(plugin: &str, reason: &str) -> EngineError {
    EngineError::new(
        Code::ProviderFailed,
        format!("plugin `{plugin}` failed: {reason}"),
    )
}

/// Starts the plugin at `path` in `cwd` (its data folder) and waits for its hello; the
/// error says what went wrong, in words for the provider record.
pub async fn start(
    path: &Path,
    label: &str,
    cwd: &Path,
    idle: Duration,
    hello_wait: Duration,
) -> Result<(Conn, Hello), String> {
    let mut command = tokio::process::Command::new(path);
    command
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // The engine's own settings are not the plugin's business.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SVC_") {
            command.env_remove(name);
        }
    }
    // The open-files limit the engine started with, not the one it raised.
    crate::services::before_exec::apply_std(
        command.as_std_mut(),
        crate::services::before_exec::Steps::default(),
    );
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", path.display()))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("its stdio could not be opened".into());
    };
    tokio::spawn(log_stderr(BufReader::new(stderr), label.to_owned()));
    let mut reader = BufReader::new(stdout);
    let hello = handshake(&mut stdin, &mut reader, idle, hello_wait).await;
    let hello = match hello {
        Ok(hello) => hello,
        Err(Handshake::Eof) => {
            return Err(format!(
                "it exited before its hello ({})",
                reap(&mut child).await
            ));
        }
        Err(Handshake::Wrong(why)) => {
            let _ = child.start_kill();
            return Err(why);
        }
    };
    let routes = Arc::new(Routes {
        calls: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(1),
        dead: Mutex::new(None),
    });
    let (writer, lines) = mpsc::channel(WRITE_QUEUE);
    let (stop, stopped) = oneshot::channel();
    tokio::spawn(write_lines(stdin, lines));
    tokio::spawn(read_lines(
        reader,
        child,
        routes.clone(),
        stopped,
        hello.id.clone(),
        idle,
    ));
    let conn = Conn {
        plugin: hello.id.clone(),
        idle,
        routes,
        writer,
        _stop: stop,
    };
    Ok((conn, hello))
}

async fn write_lines(mut stdin: ChildStdin, mut lines: mpsc::Receiver<String>) {
    while let Some(line) = lines.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() {
            break;
        }
    }
    // Dropping stdin closes it: a plugin exits when its stdin closes.
}

/// The process's exit status in words, once it has exited (killed after [`REAP_WAIT`]).
async fn reap(child: &mut Child) -> String {
    let status = match tokio::time::timeout(REAP_WAIT, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    match status {
        Ok(status) => status_words(status),
        Err(e) => format!("status unknown: {e}"),
    }
}

fn status_words(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "status unknown".into(),
    }
}

/// Routes each line to its call until the process is gone or breaks the protocol; then
/// answers every call in flight with the reason.
async fn read_lines(
    mut reader: BufReader<ChildStdout>,
    mut child: Child,
    routes: Arc<Routes>,
    mut stop: oneshot::Receiver<()>,
    plugin: String,
    idle: Duration,
) {
    let reason = loop {
        let mut line = Vec::new();
        let read = tokio::select! {
            read = read_line(&mut reader, &mut line) => read,
            _ = &mut stop => {
                // The engine let go of the plugin: it is not needed any more.
                let _ = child.start_kill();
                let _ = child.wait().await;
                break "the engine stopped it".to_owned();
            }
        };
        let broken = match read {
            Ok(Read::Line) => match deliver(&routes, &plugin, protocol::parse(&line), idle).await {
                Ok(()) => continue,
                Err(why) => why,
            },
            Ok(Read::Eof { partial }) => {
                let cut = if partial {
                    " in the middle of a message"
                } else {
                    ""
                };
                break format!("it exited{cut} ({})", reap(&mut child).await);
            }
            Ok(Read::TooLong) => format!("it wrote a line longer than {MAX_LINE} bytes"),
            Err(e) => format!("its stdout could not be read: {e}"),
        };
        let _ = child.start_kill();
        let _ = child.wait().await;
        break format!("{broken}; the engine stopped it");
    };
    tracing::warn!(plugin = %plugin, %reason, "plugin gone");
    // The calls' lock first, as `open_call` takes them: no call opens after this.
    let calls: Vec<_> = {
        let mut calls = lock(&routes.calls);
        *lock(&routes.dead) = Some(reason.clone());
        calls.drain().collect()
    };
    for (_, call) in calls {
        let _ = call.try_send(Delivery::Failed(failed(&plugin, &reason)));
    }
}

/// Hands one line to its call; `Err` when the line makes the plugin broken.
async fn deliver(routes: &Routes, plugin: &str, line: Line, idle: Duration) -> Result<(), String> {
    let (id, delivery) = match line {
        Line::Garbage(why) => return Err(format!("it wrote {why}")),
        Line::Malformed { id, why } => (
            id,
            Delivery::Failed(failed(plugin, &format!("it answered call {id} with {why}"))),
        ),
        Line::Message(message) => (message_id(&message), Delivery::Message(message)),
    };
    let call = lock(&routes.calls).get(&id).cloned();
    let Some(call) = call else {
        if id < routes.next_id.load(Ordering::SeqCst) {
            // A call that ended (answered, timed out, cancelled): its late words are dropped.
            return Ok(());
        }
        return Err(format!(
            "it answered call {id}, which the engine never made"
        ));
    };
    if tokio::time::timeout(idle, call.send(delivery))
        .await
        .is_err()
    {
        // The caller stopped reading (a stalled download): it is abandoned, not the rest.
        lock(&routes.calls).remove(&id);
        tracing::warn!(
            plugin,
            id,
            "a call did not take its messages in time: abandoned"
        );
    }
    Ok(())
}

fn message_id(message: &FromPlugin) -> u64 {
    match message {
        FromPlugin::Response { id, .. }
        | FromPlugin::Event { id, .. }
        | FromPlugin::Chunk { id, .. }
        | FromPlugin::Alive { id } => *id,
    }
}
