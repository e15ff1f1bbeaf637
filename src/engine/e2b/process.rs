//! envd's `process.Process` over the engine's command streams and terminals. A started
//! process is followed by a task of the front for its whole life, whoever listens: the
//! caller's stream may end (a background command, a client gone) and the process runs on,
//! and `Connect` attaches to it later by pid or tag, as envd allows. A PTY is an engine
//! terminal, named by a pid of the front's own (above any pid Linux hands out).

use super::super::provider::{Sandbox, TerminalInput, TerminalOpen};
use super::super::routes::RouteId;
use super::connect::{self, Messages};
use super::errors::{ConnectCode, RpcError};
use super::messages::{
    Selected, Selector, SendInputRequest, SendSignalRequest, StartRequest, StreamInputRequest,
    UpdateRequest,
};
use super::routes::{At, Door, Op};
use super::{Front, sandbox_id, user_of};
use crate::wire::{CommandBody, CommandEvent, OutputChunk, SandboxRecord};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use base64::Engine as _;
use futures::StreamExt;
use http::HeaderMap;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Linux's largest pid is 2^22: a PTY's pid above it never names a real process.
const PTY_PIDS: u32 = 1 << 22;

pub const OPS: &[Op] = &[
    Op {
        id: "e2b_process_start",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/process.Process/Start"),
        summary: "start a command or a PTY; a stream of `start`, `data`, `end` events",
        bind: || connect::call(post(start)),
    },
    Op {
        id: "e2b_process_connect",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/process.Process/Connect"),
        summary: "follow a running process's events by pid or tag",
        bind: || connect::call(post(connect_to)),
    },
    Op {
        id: "e2b_process_list",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/process.Process/List"),
        summary: "the processes the front follows, with their config",
        bind: || connect::call(post(list)),
    },
    Op {
        id: "e2b_process_send_input",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/process.Process/SendInput"),
        summary: "bytes to a process's stdin or a PTY",
        bind: || connect::call(post(send_input)),
    },
    Op {
        id: "e2b_process_stream_input",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/process.Process/StreamInput"),
        summary: "a client stream of input for one process",
        bind: || connect::call(post(stream_input)),
    },
    Op {
        id: "e2b_process_send_signal",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/process.Process/SendSignal"),
        summary: "SIGTERM or SIGKILL to a process's group",
        bind: || connect::call(post(send_signal)),
    },
    Op {
        id: "e2b_process_close_stdin",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/process.Process/CloseStdin"),
        summary: "end a process's stdin",
        bind: || connect::call(post(close_stdin)),
    },
    Op {
        id: "e2b_process_update",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/process.Process/Update"),
        summary: "resize a PTY",
        bind: || connect::call(post(update)),
    },
];

/// A process the front follows.
struct Tracked {
    pid: u32,
    tag: Option<String>,
    /// Its `ProcessConfig` as `List` shows it.
    config: Value,
    /// Who listens: each `Start` or `Connect` stream still open.
    listeners: Mutex<Vec<mpsc::UnboundedSender<Result<Value, RpcError>>>>,
    /// A PTY's input (taken away to end the terminal); `None` for a command, whose stdin
    /// goes through the sandbox.
    pty: Option<Mutex<Option<mpsc::Sender<TerminalInput>>>>,
}

impl Tracked {
    fn listen(&self) -> mpsc::UnboundedReceiver<Result<Value, RpcError>> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.listeners).push(tx);
        rx
    }

    fn send(&self, event: Result<Value, RpcError>) {
        lock(&self.listeners).retain(|l| l.send(event.clone()).is_ok());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The processes the front follows, per sandbox.
#[derive(Default)]
pub struct Table {
    map: Mutex<HashMap<String, HashMap<u32, Arc<Tracked>>>>,
    next_pty: AtomicU32,
}

impl Table {
    fn insert(&self, sandbox: &str, tracked: Arc<Tracked>) {
        lock(&self.map)
            .entry(sandbox.to_owned())
            .or_default()
            .insert(tracked.pid, tracked);
    }

    fn remove(&self, sandbox: &str, pid: u32) {
        if let Some(processes) = lock(&self.map).get_mut(sandbox) {
            processes.remove(&pid);
        }
    }

    fn find(&self, sandbox: &str, selector: Option<&Selector>) -> Result<Arc<Tracked>, RpcError> {
        let selector = selector.ok_or_else(|| RpcError::invalid("`process` is required"))?;
        let map = lock(&self.map);
        let processes = map.get(sandbox);
        let found = match (selector.pid, &selector.tag) {
            (Some(pid), _) => processes.and_then(|p| p.get(&pid)).cloned(),
            (None, Some(tag)) => processes
                .and_then(|p| p.values().find(|t| t.tag.as_deref() == Some(tag.as_str())))
                .cloned(),
            (None, None) => return Err(RpcError::invalid("`process` needs `pid` or `tag`")),
        };
        found.ok_or_else(|| {
            let name = selector.pid.map_or_else(
                || format!("tag {}", selector.tag.clone().unwrap_or_default()),
                |p| format!("pid {p}"),
            );
            RpcError::new(
                ConnectCode::NotFound,
                format!("process with {name} not found"),
            )
        })
    }

    fn of(&self, sandbox: &str) -> Vec<Arc<Tracked>> {
        let map = lock(&self.map);
        let mut all: Vec<_> = map
            .get(sandbox)
            .map(|p| p.values().cloned().collect())
            .unwrap_or_default();
        all.sort_by_key(|t| t.pid);
        all
    }

    /// Once the sandbox is gone ([`Front::forget_sandbox`]): what it ran is gone with it.
    pub fn forget_sandbox(&self, sandbox: &str) {
        lock(&self.map).remove(sandbox);
    }
}

fn event(kind: &str, body: Value) -> Value {
    json!({"event": {kind: body}})
}

fn data(stream: &str, bytes: &[u8]) -> Value {
    event(
        "data",
        json!({stream: base64::engine::general_purpose::STANDARD.encode(bytes)}),
    )
}

/// The end event as envd words it: `exit status N`, or the signal that ended it.
fn end(exit_code: Option<i32>, timed_out: bool) -> Value {
    let (code, status) = match exit_code {
        Some(code) if code > 128 && code <= 128 + 64 => {
            (code, format!("signal: {}", signal_name(code - 128)))
        }
        Some(code) => (code, format!("exit status {code}")),
        None => (-1, "signal: killed".to_owned()),
    };
    let mut end = json!({"exitCode": code, "exited": true, "status": status});
    if timed_out {
        end["error"] = json!("the command timed out");
    }
    event("end", end)
}

fn signal_name(signal: i32) -> String {
    match signal {
        9 => "killed".into(),
        15 => "terminated".into(),
        2 => "interrupt".into(),
        other => format!("signal {other}"),
    }
}

fn keepalive() -> Value {
    event("keepalive", json!({}))
}

/// The user of a call in a sandbox that has users (a machine of namespaces); a sandbox
/// without isolation runs everything as the engine's user, whatever the SDK names.
fn user(record: &SandboxRecord, headers: &HeaderMap) -> Result<Option<String>, RpcError> {
    let asked = user_of(headers)?;
    Ok(match record.isolation {
        Some(crate::wire::Isolation::Namespaces) => asked,
        _ => None,
    })
}

async fn start(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    match start_stream(&front, &headers, &body).await {
        Ok(messages) => stream(&front, &headers, messages),
        Err(e) => connect::stream_error(e),
    }
}

fn stream(front: &Front, headers: &HeaderMap, messages: Messages) -> Response {
    let keepalive = connect::keepalive_interval(headers).map(|every| (every, keepalive()));
    connect::stream_response(messages, keepalive, front.engine.activity.open())
}

async fn start_stream(
    front: &Arc<Front>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Messages, RpcError> {
    let request: StartRequest = connect::stream_request(headers, body)?;
    let config = request
        .process
        .ok_or_else(|| RpcError::invalid("`process` is required"))?;
    if config.cmd.trim().is_empty() {
        return Err(RpcError::invalid("`process.cmd` must not be empty"));
    }
    let id = sandbox_id(headers);
    // A PTY is an engine terminal, a command an engine command stream: each its route.
    let route = match request.pty {
        Some(_) => RouteId::Terminal,
        None => RouteId::CommandsStream,
    };
    // The record says whether the sandbox has users: one `info` gives it and the handle.
    let (sandbox, record) = front
        .with_record(&id, route)
        .await
        .map_err(|e| RpcError::envd(&id, e))?;
    let user = user(&record, headers)?;
    if let Some(pty) = request.pty {
        let shown =
            json!({"cmd": config.cmd, "args": config.args, "envs": config.envs, "cwd": config.cwd});
        let size = pty
            .size
            .unwrap_or(super::messages::Size { cols: 80, rows: 24 });
        let open = TerminalOpen {
            cols: size.cols.max(1),
            rows: size.rows.max(1),
            shell: config.cmd,
            user,
            args: config.args,
            env: config.envs,
            cwd: config.cwd.filter(|c| !c.is_empty()),
        };
        return start_pty(front, &id, sandbox, &open, shown, request.tag).await;
    }
    let shown =
        json!({"cmd": config.cmd, "args": config.args, "envs": config.envs, "cwd": config.cwd});
    let command = CommandBody {
        cmd: config.cmd,
        args: Some(config.args),
        env: (!config.envs.is_empty()).then_some(config.envs),
        cwd: config.cwd.filter(|c| !c.is_empty()),
        user,
        // envd's processes run until they end: the SDK bounds its own wait.
        timeout: Some(0),
        // Without `stdin: true` the process reads an empty, closed stdin, as under envd.
        stdin: if request.stdin == Some(true) {
            None
        } else {
            Some(String::new())
        },
    };
    let mut events = sandbox
        .stream(command)
        .await
        .map_err(|e| RpcError::envd(&id, e))?;
    let pid = match events.next().await {
        Some(Ok(first)) => match CommandEvent::parse(first.name, &first.data.to_string()) {
            Ok(Some(CommandEvent::Start(started))) => started.pid,
            _ => {
                return Err(RpcError::new(
                    ConnectCode::Internal,
                    "the command did not start",
                ));
            }
        },
        Some(Err(e)) => return Err(RpcError::envd(&id, e)),
        None => {
            return Err(RpcError::new(
                ConnectCode::Internal,
                "the command did not start",
            ));
        }
    };
    let tracked = Arc::new(Tracked {
        pid,
        tag: request.tag,
        config: shown,
        listeners: Mutex::new(Vec::new()),
        pty: None,
    });
    let listener = tracked.listen();
    front.processes.insert(&id, tracked.clone());
    let table = front.clone();
    tokio::spawn(async move {
        while let Some(next) = events.next().await {
            let event = match next {
                Ok(event) => match CommandEvent::parse(event.name, &event.data.to_string()) {
                    Ok(Some(CommandEvent::Stdout(chunk))) => Ok(data("stdout", &bytes_of(chunk))),
                    Ok(Some(CommandEvent::Stderr(chunk))) => Ok(data("stderr", &bytes_of(chunk))),
                    Ok(Some(CommandEvent::Exit(exited))) => {
                        Ok(end(exited.exit_code, exited.timed_out))
                    }
                    _ => continue,
                },
                Err(e) => Err(RpcError::envd(&id, e)),
            };
            tracked.send(event);
        }
        table.processes.remove(&id, pid);
    });
    Ok(follow(pid, listener))
}

fn bytes_of(chunk: OutputChunk) -> Vec<u8> {
    let text = chunk.data.clone();
    chunk.exact().unwrap_or_else(|_| text.into_bytes())
}

/// A listener's messages: the start event, then what the process does until its end.
fn follow(pid: u32, listener: mpsc::UnboundedReceiver<Result<Value, RpcError>>) -> Messages {
    let first = futures::stream::once(async move { Ok(event("start", json!({"pid": pid}))) });
    let rest = futures::stream::unfold(listener, |mut rx| async move {
        rx.recv().await.map(|event| (event, rx))
    });
    // The end event is the last: what follows is only the stream's close.
    let mut ended = false;
    Box::pin(first.chain(rest).take_while(move |event| {
        let last = ended;
        ended =
            ended || matches!(event, Ok(v) if v["event"].get("end").is_some()) || event.is_err();
        futures::future::ready(!last)
    }))
}

async fn start_pty(
    front: &Arc<Front>,
    id: &str,
    sandbox: Arc<dyn Sandbox>,
    open: &TerminalOpen,
    shown: Value,
    tag: Option<String>,
) -> Result<Messages, RpcError> {
    let terminal = sandbox
        .terminal(open)
        .await
        .map_err(|e| RpcError::envd(id, e))?;
    let pid = PTY_PIDS + front.processes.next_pty.fetch_add(1, Ordering::Relaxed);
    let tracked = Arc::new(Tracked {
        pid,
        tag,
        config: shown,
        listeners: Mutex::new(Vec::new()),
        pty: Some(Mutex::new(Some(terminal.input))),
    });
    let listener = tracked.listen();
    front.processes.insert(id, tracked.clone());
    let (front, id) = (front.clone(), id.to_owned());
    let (mut output, exit) = (terminal.output, terminal.exit);
    tokio::spawn(async move {
        while let Some(bytes) = output.next().await {
            tracked.send(Ok(data("pty", &bytes)));
        }
        // One the SDK killed ended by SIGKILL, as envd reports it; a provider that cannot
        // tell how the shell ended (an older remote engine) reports it as envd does a killed one.
        let killed = tracked.pty.as_ref().is_some_and(|pty| lock(pty).is_none());
        let code = if killed { None } else { exit.await };
        tracked.send(Ok(end(code, false)));
        front.processes.remove(&id, pid);
    });
    Ok(follow(pid, listener))
}

async fn connect_to(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    let attach = async {
        let request: Selected = connect::stream_request(&headers, &body)?;
        let (id, _) = front
            .envd_sandbox(&headers, RouteId::CommandsStream, RpcError::envd)
            .await?;
        let tracked = front.processes.find(&id, request.process.as_ref())?;
        Ok::<_, RpcError>(follow(tracked.pid, tracked.listen()))
    };
    match attach.await {
        Ok(messages) => stream(&front, &headers, messages),
        Err(e) => connect::stream_error(e),
    }
}

async fn list(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    connect::unary(
        async {
            let _: Value = connect::unary_request(&headers, &body)?;
            let (id, _) = front
                .envd_sandbox(&headers, RouteId::ProcessesList, RpcError::envd)
                .await?;
            let processes: Vec<Value> = front
                .processes
                .of(&id)
                .iter()
                .map(|t| {
                    let mut info = json!({"config": t.config, "pid": t.pid});
                    if let Some(tag) = &t.tag {
                        info["tag"] = json!(tag);
                    }
                    info
                })
                .collect();
            Ok(json!({"processes": processes}))
        }
        .await,
    )
}

/// Writes `input` to the process of the sandbox `id`: a PTY's input, or the command's stdin.
async fn write_input(
    front: &Front,
    (id, sandbox): (&str, &Arc<dyn Sandbox>),
    selector: Option<&Selector>,
    input: Option<&super::messages::ProcessInput>,
) -> Result<(), RpcError> {
    let (bytes, _) = input
        .ok_or_else(|| RpcError::invalid("`input` is required"))?
        .bytes()?;
    let tracked = front.processes.find(id, selector)?;
    match &tracked.pty {
        Some(pty) => send_pty(pty, TerminalInput::Bytes(bytes.into())).await,
        None => sandbox
            .stdin(tracked.pid, bytes, false)
            .await
            .map_err(|e| RpcError::envd(id, e)),
    }
}

async fn send_pty(
    pty: &Mutex<Option<mpsc::Sender<TerminalInput>>>,
    input: TerminalInput,
) -> Result<(), RpcError> {
    let sender = lock(pty).clone();
    let ended = || RpcError::new(ConnectCode::NotFound, "the terminal has ended");
    sender
        .ok_or_else(ended)?
        .send(input)
        .await
        .map_err(|_| ended())
}

async fn send_input(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    connect::unary(
        async {
            let request: SendInputRequest = connect::unary_request(&headers, &body)?;
            let (id, sandbox) = front
                .envd_sandbox(&headers, RouteId::ProcessesStdin, RpcError::envd)
                .await?;
            write_input(
                &front,
                (&id, &sandbox),
                request.process.as_ref(),
                request.input.as_ref(),
            )
            .await?;
            Ok(json!({}))
        }
        .await,
    )
}

/// A client stream: its first message names the process, the others carry input. The
/// body is read whole before the input is written, so input arrives once the client
/// closes its side.
async fn stream_input(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = async {
        let messages: Vec<StreamInputRequest> = connect::client_stream(&headers, &body)?;
        // One lookup for the whole stream, not one per message.
        let (id, sandbox) = front
            .envd_sandbox(&headers, RouteId::ProcessesStdin, RpcError::envd)
            .await?;
        let mut selector = None;
        for message in messages {
            if let Some(start) = message.start {
                selector = start.process;
            }
            if let Some(data) = message.data {
                let chosen = selector
                    .as_ref()
                    .ok_or_else(|| RpcError::invalid("the first message must be `start`"))?;
                write_input(&front, (&id, &sandbox), Some(chosen), data.input.as_ref()).await?;
            }
        }
        Ok::<_, RpcError>(())
    }
    .await;
    let answer: Messages = match result {
        Ok(()) => Box::pin(futures::stream::once(async { Ok(json!({})) })),
        Err(e) => Box::pin(futures::stream::once(async { Err(e) })),
    };
    stream(&front, &headers, answer)
}

async fn send_signal(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    connect::unary(
        async {
            let request: SendSignalRequest = connect::unary_request(&headers, &body)?;
            let signal = request.signal()?;
            let (id, sandbox) = front
                .envd_sandbox(&headers, RouteId::ProcessesSignal, RpcError::envd)
                .await?;
            let tracked = front.processes.find(&id, request.process.as_ref())?;
            match &tracked.pty {
                // A terminal ends with its input: the shell and its session go.
                Some(pty) => {
                    lock(pty).take();
                }
                None => sandbox
                    .signal(tracked.pid, signal)
                    .await
                    .map_err(|e| RpcError::envd(&id, e))?,
            }
            Ok(json!({}))
        }
        .await,
    )
}

async fn close_stdin(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    connect::unary(
        async {
            let request: Selected = connect::unary_request(&headers, &body)?;
            let (id, sandbox) = front
                .envd_sandbox(&headers, RouteId::ProcessesStdin, RpcError::envd)
                .await?;
            let tracked = front.processes.find(&id, request.process.as_ref())?;
            if tracked.pty.is_some() {
                return Err(RpcError::invalid(
                    "a PTY has no stdin to close: send it Ctrl-D",
                ));
            }
            sandbox
                .stdin(tracked.pid, Vec::new(), true)
                .await
                .map_err(|e| RpcError::envd(&id, e))?;
            Ok(json!({}))
        }
        .await,
    )
}

async fn update(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    connect::unary(
        async {
            let request: UpdateRequest = connect::unary_request(&headers, &body)?;
            let (id, _) = front
                .envd_sandbox(&headers, RouteId::Terminal, RpcError::envd)
                .await?;
            let tracked = front.processes.find(&id, request.process.as_ref())?;
            let size = request
                .pty
                .and_then(|p| p.size)
                .ok_or_else(|| RpcError::invalid("`pty.size` is required"))?;
            let pty = tracked
                .pty
                .as_ref()
                .ok_or_else(|| RpcError::invalid("the process has no PTY to resize"))?;
            send_pty(
                pty,
                TerminalInput::Resize {
                    cols: size.cols,
                    rows: size.rows,
                },
            )
            .await?;
            Ok(json!({}))
        }
        .await,
    )
}
