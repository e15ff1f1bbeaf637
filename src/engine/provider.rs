//! The provider layer: one trait every provider kind implements (`builtin`: `local`; `node`:
//! `memory`; `rest`; `exec`: the plugins), so a client cannot tell the kinds apart. A [`Provider`] creates,
//! lists and connects sandboxes; a connected [`Sandbox`] is a session's handle and does the
//! rest. Every operation has a default that answers 501 `E8004`, so a provider implements
//! what it declares in its [`ProviderRecord::features`] and nothing else; the engine also
//! checks the declared feature before it calls (`engine::routes`).

use crate::error::engine::{Code, EngineError};
use crate::services::files::{Piece, ReadFile};
use crate::wire::{
    CodeRunBody, CommandBody, Connection, ContextRecord, CreateContext, CreateSandbox, EntryInfo,
    Feature, ListSandboxes, MkdirBody, MoveBody, PortUrl, ProviderRecord, SandboxRecord,
    WriteQuery,
};
use crate::wire::{SANDBOX_TIMEOUT_DEFAULT_S, SANDBOX_TIMEOUT_MAX_S};
use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;

pub type ProviderResult<T> = Result<T, EngineError>;

/// A body of bytes, read or written as it flows (a 100 MiB file is never held whole).
pub type ByteStream = BoxStream<'static, std::io::Result<Bytes>>;

/// A file write's body as the engine receives it: its connection can put the bytes into the
/// file itself once a provider arms it with the file ([`crate::zero_copy`]); until then,
/// and for every provider that does not, it yields them as [`Piece::Bytes`].
pub type UploadBody = crate::zero_copy::Upload<axum::body::Body>;

/// The bytes of an upload nobody armed, for a provider that takes a [`ByteStream`].
fn bytes_of(body: UploadBody) -> ByteStream {
    use futures::StreamExt;
    Box::pin(body.map(|piece| match piece {
        Ok(Piece::Bytes(bytes)) => Ok(bytes),
        Ok(Piece::Failed(cause)) => Err(cause),
        Ok(Piece::Placed(_)) => Err(std::io::Error::other(
            "bytes were placed in a file this provider does not write",
        )),
        Err(e) => Err(std::io::Error::other(e)),
    }))
}

/// One event of an SSE stream: its name and its JSON data. A provider ends a stream with
/// `Err` for an `error` event; the engine adds the closing `end` of a command stream.
pub type EventStream = BoxStream<'static, Result<Event, EngineError>>;

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: &'static str,
    pub data: Value,
}

impl From<crate::wire::CommandEvent> for Event {
    fn from(event: crate::wire::CommandEvent) -> Self {
        Event {
            name: event.name(),
            data: event.data(),
        }
    }
}

/// `commands/run`: what the command printed and how it ended. Output that is not UTF-8 also
/// comes as `stdout_b64` / `stderr_b64` (the server groups' rule), added by the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    pub pid: u32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The exit status; 128 + the signal when a signal ended it (as shells say it).
    pub exit_code: i32,
    pub timed_out: bool,
}

pub use crate::wire::ProcessInfo;

/// `code/run`: like [`CommandOutcome`], with how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeOutcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// `None` when it timed out or a signal ended it.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
}

/// A whole code run as the events of [`Sandbox::code_run_stream`].
pub fn code_events(outcome: CodeOutcome) -> EventStream {
    use crate::wire::{CommandEvent, Exited, OutputChunk};
    let mut events = Vec::new();
    if !outcome.stdout.is_empty() {
        events.push(CommandEvent::Stdout(OutputChunk::new(&outcome.stdout)));
    }
    if !outcome.stderr.is_empty() {
        events.push(CommandEvent::Stderr(OutputChunk::new(&outcome.stderr)));
    }
    events.push(CommandEvent::Exit(Exited {
        exit_code: outcome.exit_code,
        timed_out: outcome.timed_out,
    }));
    Box::pin(futures::stream::iter(
        events.into_iter().map(|e| Ok(Event::from(e))),
    ))
}

/// A file read: its size, then its bytes.
pub struct FileRead {
    pub size: u64,
    pub body: FileBody,
}

/// A file read's bytes: a file on this machine (the engine sends it with `sendfile` where it
/// can, see [`crate::zero_copy`]), a remote's answer body still on its socket (the engine
/// splices it into the caller's, see [`Sandbox::read_file_spliced`]), or bytes as they
/// arrive (memory, a remote, a plugin).
pub enum FileBody {
    File(ReadFile),
    Socket(crate::zero_copy::SocketBody),
    Stream(ByteStream),
}

impl FileBody {
    /// The bytes as a stream, however they are held.
    pub fn into_stream(self) -> ByteStream {
        match self {
            FileBody::File(file) => file.into_stream(),
            FileBody::Socket(socket) => socket.into_stream(),
            FileBody::Stream(stream) => stream,
        }
    }
}

/// What a terminal client sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalInput {
    Bytes(Bytes),
    Resize { cols: u32, rows: u32 },
}

/// What a terminal is opened with, its query's defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOpen {
    pub cols: u32,
    pub rows: u32,
    pub shell: String,
    /// Who runs the shell (`user` or `root` in an isolated sandbox), as for a command.
    pub user: Option<String>,
    /// The shell's arguments (none: an interactive shell).
    pub args: Vec<String>,
    /// Variables added to the sandbox's.
    pub env: BTreeMap<String, String>,
    /// A directory of the sandbox (its home when `None`).
    pub cwd: Option<String>,
}

impl TerminalOpen {
    /// `shell` at `cols` x `rows`, run by the sandbox's default user in its home.
    pub fn new(cols: u32, rows: u32, shell: &str) -> TerminalOpen {
        TerminalOpen {
            cols,
            rows,
            shell: shell.to_owned(),
            user: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        }
    }
}

/// A terminal: write to `input`; `output` ends when the shell has exited, and `exit` then
/// says how (`None` when the provider cannot tell).
pub struct TerminalIo {
    pub input: mpsc::Sender<TerminalInput>,
    pub output: BoxStream<'static, Bytes>,
    pub exit: BoxFuture<'static, Option<i32>>,
}

/// Spec 8: `timeout` is 1-86400 seconds. The engine's handlers check it before a
/// provider is called; every provider checks it too, for callers that reach it directly.
pub fn check_timeout(seconds: u64) -> ProviderResult<u64> {
    if (1..=SANDBOX_TIMEOUT_MAX_S).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(EngineError::new(
            Code::InvalidArgument,
            format!("`timeout` must be 1 to {SANDBOX_TIMEOUT_MAX_S} seconds, not {seconds}"),
        ))
    }
}

/// The checks of a create that a provider with one template and no GPU makes (`local`,
/// `memory`), in this order: the template is its `template`, no `gpu`, `timeout` in range
/// (default 300 s), no limit of zero, good variable names. The template and the timeout.
pub fn check_create(
    provider: &str,
    template: &str,
    body: &CreateSandbox,
) -> ProviderResult<(String, u64)> {
    let asked = body.template.clone().unwrap_or_else(|| template.to_owned());
    if asked != template {
        return Err(EngineError::new(
            Code::TemplateNotFound,
            format!(
                "the {provider} provider has no template `{asked}`: its one template is `{template}`"
            ),
        ));
    }
    if let Some(gpu) = &body.gpu {
        return Err(EngineError::new(
            Code::FeatureNotSupported,
            format!(
                "the {provider} provider has no GPU: create the sandbox without `gpu` (asked: `{gpu}`)"
            ),
        ));
    }
    let timeout = check_timeout(body.timeout.unwrap_or(SANDBOX_TIMEOUT_DEFAULT_S))?;
    for (what, zero) in [
        ("cpu", body.cpu == Some(0)),
        ("memory", body.memory == Some(0)),
        ("disk", body.disk == Some(0)),
        ("max_processes", body.max_processes == Some(0)),
    ] {
        if zero {
            return Err(EngineError::new(
                Code::InvalidArgument,
                format!("`{what}` must be at least 1"),
            ));
        }
    }
    if let Some(envs) = &body.envs {
        check_env("envs", envs)?;
    }
    Ok((asked, timeout))
}

/// Variables a process can be given (`field` names the body's map): names of letters,
/// digits and `_` (not starting with a digit), values without NUL.
pub fn check_env(field: &str, env: &BTreeMap<String, String>) -> ProviderResult<()> {
    let invalid = |message: String| Err(EngineError::new(Code::InvalidArgument, message));
    for (name, value) in env {
        let mut chars = name.chars();
        let good = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !good {
            return invalid(format!(
                "`{field}`: `{name}` is not a variable name (letters, digits and `_`, not starting with a digit)"
            ));
        }
        if value.contains('\0') {
            return invalid(format!("`{field}`: the value of `{name}` holds a NUL byte"));
        }
    }
    Ok(())
}

/// A program and its arguments as `execve` takes them: no NUL byte in any (`program` and
/// `args` name the fields, e.g. `cmd`, `shell`).
pub fn check_argv(names: (&str, &str), program: &str, args: &[String]) -> ProviderResult<()> {
    if program.contains('\0') || args.iter().any(|a| a.contains('\0')) {
        return Err(EngineError::new(
            Code::InvalidArgument,
            format!("`{}` and `{}` must not hold NUL bytes", names.0, names.1),
        ));
    }
    Ok(())
}

fn unsupported<T>(feature: Feature) -> ProviderResult<T> {
    Err(EngineError::new(
        Code::FeatureNotSupported,
        format!("this provider does not support `{}`", feature.name()),
    ))
}

#[async_trait]
pub trait Provider: Send + Sync {
    /// Its record for `GET /v1/providers`.
    fn record(&self) -> ProviderRecord;

    async fn create(&self, conn: &Connection, body: CreateSandbox)
    -> ProviderResult<SandboxRecord>;

    /// The sandboxes this connection's account can see, filtered, newest first.
    async fn list(
        &self,
        conn: &Connection,
        query: &ListSandboxes,
    ) -> ProviderResult<Vec<SandboxRecord>>;

    /// Attaches to an existing sandbox of this account (`E2009` when there is none).
    async fn connect(
        &self,
        conn: &Connection,
        sandbox_id: &str,
    ) -> ProviderResult<Arc<dyn Sandbox>>;
}

/// A connected sandbox: a session's handle. `E2009` from any call means the backend no
/// longer knows it; the engine then connects once more and retries once.
#[async_trait]
pub trait Sandbox: Send + Sync {
    async fn info(&self) -> ProviderResult<SandboxRecord>;

    async fn kill(&self) -> ProviderResult<SandboxRecord>;

    async fn set_timeout(&self, _seconds: u64) -> ProviderResult<SandboxRecord> {
        unsupported(Feature::Timeout)
    }

    async fn pause(&self) -> ProviderResult<SandboxRecord> {
        unsupported(Feature::Pause)
    }

    async fn resume(&self) -> ProviderResult<SandboxRecord> {
        unsupported(Feature::Pause)
    }

    async fn port_url(&self, _port: u16) -> ProviderResult<PortUrl> {
        unsupported(Feature::Ports)
    }

    async fn run(&self, _body: CommandBody) -> ProviderResult<CommandOutcome> {
        unsupported(Feature::Commands)
    }

    /// Events `start` `{pid}`, `stdout` / `stderr` `{data}`, `exit` `{exit_code,
    /// timed_out}`; the engine adds `end`.
    async fn stream(&self, _body: CommandBody) -> ProviderResult<EventStream> {
        unsupported(Feature::Commands)
    }

    async fn processes(&self) -> ProviderResult<Vec<ProcessInfo>> {
        unsupported(Feature::Processes)
    }

    /// The host pids of the sandbox's live processes, for readings of this machine's
    /// `/proc` (metrics); `None` from a provider whose processes are not this machine's
    /// or whose API pids are (a sandbox without a pid namespace of its own).
    async fn host_pids(&self) -> ProviderResult<Option<Vec<u32>>> {
        Ok(None)
    }

    /// `signal` is 15 or 9 (checked before the call).
    async fn signal(&self, _pid: u32, _signal: i32) -> ProviderResult<()> {
        unsupported(Feature::Processes)
    }

    async fn stdin(&self, _pid: u32, _data: Vec<u8>, _close: bool) -> ProviderResult<()> {
        unsupported(Feature::Processes)
    }

    async fn kill_process(&self, _pid: u32) -> ProviderResult<()> {
        unsupported(Feature::Processes)
    }

    async fn read_file(&self, _path: &str) -> ProviderResult<FileRead> {
        unsupported(Feature::Files)
    }

    /// [`Sandbox::read_file`] for a caller whose connection can splice a socket's bytes into
    /// its own (HTTP/1 over the engine's listener): a provider that reads from a remote may
    /// answer [`FileBody::Socket`] (`rest`); the others answer as `read_file`. Anyone else
    /// calls `read_file`, whose bytes any consumer can take.
    async fn read_file_spliced(&self, path: &str) -> ProviderResult<FileRead> {
        self.read_file(path).await
    }

    /// Entry info of the written file.
    async fn write_file(&self, _query: WriteQuery, _body: ByteStream) -> ProviderResult<EntryInfo> {
        unsupported(Feature::Files)
    }

    /// [`Sandbox::write_file`] of the body as the engine received it: a provider that writes
    /// a local file arms it so its connection places the bytes (`local`); the others get
    /// the bytes.
    async fn write_upload(&self, query: WriteQuery, body: UploadBody) -> ProviderResult<EntryInfo> {
        self.write_file(query, bytes_of(body)).await
    }

    async fn list_files(&self, _path: &str, _depth: u32) -> ProviderResult<Vec<EntryInfo>> {
        unsupported(Feature::Files)
    }

    async fn file_info(&self, _path: &str) -> ProviderResult<EntryInfo> {
        unsupported(Feature::Files)
    }

    async fn file_exists(&self, _path: &str) -> ProviderResult<bool> {
        unsupported(Feature::Files)
    }

    async fn mkdir(&self, _body: MkdirBody) -> ProviderResult<EntryInfo> {
        unsupported(Feature::Files)
    }

    async fn rename(&self, _body: MoveBody) -> ProviderResult<EntryInfo> {
        unsupported(Feature::Files)
    }

    /// The path removed, as the sandbox sees it.
    async fn remove(&self, _path: &str, _recursive: bool) -> ProviderResult<String> {
        unsupported(Feature::Files)
    }

    /// Events `create`, `modify`, `delete`, `rename` `{path, type, entry?}` and `overflow`.
    async fn watch(&self, _path: &str, _recursive: bool) -> ProviderResult<EventStream> {
        unsupported(Feature::Watch)
    }

    async fn code_run(&self, _body: CodeRunBody) -> ProviderResult<CodeOutcome> {
        unsupported(Feature::Code)
    }

    /// [`Sandbox::code_run`] as it happens: events `stdout` / `stderr` `{data}` as the code
    /// prints, then `exit` `{exit_code, timed_out}`. A provider that cannot follow a run
    /// answers the whole run at its end (this default), so every provider streams.
    async fn code_run_stream(&self, body: CodeRunBody) -> ProviderResult<EventStream> {
        Ok(code_events(self.code_run(body).await?))
    }

    async fn context_create(&self, _body: CreateContext) -> ProviderResult<ContextRecord> {
        unsupported(Feature::CodeContexts)
    }

    async fn context_list(&self) -> ProviderResult<Vec<ContextRecord>> {
        unsupported(Feature::CodeContexts)
    }

    async fn context_restart(&self, _id: &str) -> ProviderResult<ContextRecord> {
        unsupported(Feature::CodeContexts)
    }

    async fn context_delete(&self, _id: &str) -> ProviderResult<()> {
        unsupported(Feature::CodeContexts)
    }

    async fn terminal(&self, _open: &TerminalOpen) -> ProviderResult<TerminalIo> {
        unsupported(Feature::Terminal)
    }
}
