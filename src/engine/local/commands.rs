//! Commands in a sandbox (`commands/run`, `commands/stream`): started through the one
//! supervisor, in a process group of their own that outlives them (a command's `cmd &`
//! goes on running, as on a machine), registered by pid so stdin, signals and kills reach
//! them while they run. `cmd` alone is a shell line for `/bin/sh -c`; with `args` it is a
//! program found on the sandbox's `PATH`, run without a shell.

use super::super::provider::{
    CommandOutcome, Event, EventStream, ProviderResult, check_argv, check_env,
};
use super::sandbox::Core;
use super::{env, inside};
use crate::error::engine::{Code, EngineError};
use crate::services::supervisor::{
    Chunk, Exit, GroupEnd, LEAVE_DRAIN, Label, Limits, ProcessHandle, Spec, Stdin, Stream,
};
use crate::services::utf8_carry::Utf8Carry;
use crate::wire::{
    COMMAND_TIMEOUT_DEFAULT_S, CommandBody, CommandEvent, Exited, OutputChunk,
    SANDBOX_TIMEOUT_MAX_S, Started,
};

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The shell of a `cmd` without `args`.
const SHELL: &str = "/bin/sh";
/// Bytes of each stream a run keeps (the newest, should a command print more).
const RUN_OUTPUT_BYTES: usize = 8 * 1024 * 1024;

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::new(Code::InvalidArgument, message)
}

/// A timeout in seconds: `default` when absent, none for 0, at most a sandbox's lifetime.
pub fn limit(timeout: Option<u64>, default: u64) -> ProviderResult<Option<Duration>> {
    match timeout.unwrap_or(default) {
        0 => Ok(None),
        s if s <= SANDBOX_TIMEOUT_MAX_S => Ok(Some(Duration::from_secs(s))),
        s => Err(invalid(format!(
            "`timeout` must be 0 (none) to {SANDBOX_TIMEOUT_MAX_S} seconds, not {s}"
        ))),
    }
}

/// The spec and label of `body`; `open_stdin`: stdin stays open when the body gives none.
fn prepare(
    core: &Core,
    body: &CommandBody,
    open_stdin: bool,
    output_bytes: usize,
) -> ProviderResult<(Spec, Label)> {
    let who = inside::identity(core, body.user.as_deref())?;
    if body.cmd.trim().is_empty() {
        return Err(invalid("`cmd` must not be empty"));
    }
    check_argv(
        ("cmd", "args"),
        &body.cmd,
        body.args.as_deref().unwrap_or_default(),
    )?;
    let extra = body.env.clone().unwrap_or_default();
    check_env("env", &extra)?;
    let timeout = limit(body.timeout, COMMAND_TIMEOUT_DEFAULT_S)?;
    let cwd = inside::working_dir(core, body.cwd.as_deref())?;
    let env = inside::env_for(env::with(&core.env, &extra, &core.id), who);
    let (program, args) = match &body.args {
        Some(args) => (inside::program(core, &env, &body.cmd, &cwd)?, args.clone()),
        None => (SHELL.to_owned(), vec!["-c".to_owned(), body.cmd.clone()]),
    };
    let confined = inside::confiner(core).apply(who, &cwd, program, args);
    let stdin = match (&body.stdin, open_stdin) {
        (Some(text), _) => Stdin::Bytes(text.clone().into_bytes()),
        (None, true) => Stdin::Stream,
        (None, false) => Stdin::None,
    };
    let spec = Spec {
        env,
        stdin,
        limits: Limits {
            timeout,
            output_bytes,
            group_end: GroupEnd::Leave,
            ..Limits::default()
        },
        ..confined
    };
    let label = Label {
        tag: "command".into(),
        cmd: body.cmd.clone(),
        args: body.args.clone(),
    };
    Ok((spec, label))
}

/// The exit status as a shell says it: the code, or 128 + the signal.
fn exit_code(exit: &Exit) -> i32 {
    exit.code()
        .or_else(|| exit.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

/// A process of the sandbox run to its end: its pid, how it ended, what it wrote.
pub struct Ran {
    pub pid: u32,
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Starts `spec` as a registered process of the sandbox (so it can be listed and
/// signalled; its group noted, so what it leaves behind is found) and waits for its exit.
pub async fn run_registered(core: &Core, spec: &Spec, label: Label) -> ProviderResult<Ran> {
    let pass = core.admit().await?;
    let record = core
        .registry
        .start_labelled(&core.id, spec, label)
        .map_err(|e| EngineError::from_domain(&e))?;
    drop(pass);
    core.note_group(record.pid);
    let handle = core
        .registry
        .process(&core.id, record.pid)
        .map_err(|e| EngineError::from_domain(&e))?;
    let pid = core.note_command(record.pid).await;
    let exit = handle.wait().await;
    Ok(Ran {
        pid,
        exit,
        stdout: handle.output(Stream::Stdout, 0).bytes,
        stderr: handle.output(Stream::Stderr, 0).bytes,
    })
}

pub async fn run(core: &Core, body: CommandBody) -> ProviderResult<CommandOutcome> {
    let (spec, label) = prepare(core, &body, false, RUN_OUTPUT_BYTES)?;
    let ran = run_registered(core, &spec, label).await?;
    Ok(CommandOutcome {
        pid: ran.pid,
        stdout: ran.stdout,
        stderr: ran.stderr,
        exit_code: exit_code(&ran.exit),
        timed_out: ran.exit.timed_out,
    })
}

pub async fn stream(core: &Arc<Core>, body: CommandBody) -> ProviderResult<EventStream> {
    let (spec, label) = prepare(core, &body, true, crate::services::supervisor::OUTPUT_BYTES)?;
    let pass = core.admit().await?;
    let (record, chunks) = core
        .registry
        .start_followed(&core.id, &spec, label)
        .map_err(|e| EngineError::from_domain(&e))?;
    drop(pass);
    core.note_group(record.pid);
    let handle = core
        .registry
        .process(&core.id, record.pid)
        .map_err(|e| EngineError::from_domain(&e))?;
    let pid = core.note_command(record.pid).await;
    let follow = Follow {
        handle,
        chunks: Some(chunks),
        stdout: Utf8Carry::default(),
        stderr: Utf8Carry::default(),
        queue: std::collections::VecDeque::from([CommandEvent::Start(Started { pid }).into()]),
        done: false,
        ended: core.life.ended.subscribe(),
    };
    Ok(Box::pin(futures::stream::unfold(
        follow,
        |mut follow| async move { follow.next().await.map(|event| (event, follow)) },
    )))
}

/// What a streamed command's follower woke up for.
enum Woke {
    Output(Option<Chunk>),
    Exit,
    Ended,
}

/// A streamed command's events: `start`, then its output as read (each stream's text
/// kept whole across reads), then `exit`.
struct Follow {
    handle: ProcessHandle,
    /// `None` once the output has been taken to its end.
    chunks: Option<mpsc::Receiver<Chunk>>,
    stdout: Utf8Carry,
    stderr: Utf8Carry,
    queue: std::collections::VecDeque<Event>,
    done: bool,
    ended: tokio::sync::watch::Receiver<bool>,
}

impl Follow {
    async fn next(&mut self) -> Option<Result<Event, EngineError>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            let Some(mut chunks) = self.chunks.take() else {
                self.finish();
                continue;
            };
            let woke = tokio::select! {
                chunk = chunks.recv() => Woke::Output(chunk),
                _ = self.handle.wait() => Woke::Exit,
                _ = self.ended.wait_for(|ended| *ended) => Woke::Ended,
            };
            match woke {
                Woke::Output(Some(chunk)) => {
                    self.output(chunk);
                    self.chunks = Some(chunks);
                }
                // Both pipes ended: only the exit is left.
                Woke::Output(None) => {
                    self.handle.wait().await;
                }
                Woke::Exit => {
                    // A background child may hold the pipes for as long as it lives: what
                    // the command itself wrote is already read or queued, so take what
                    // comes within the drain and no more.
                    let deadline = tokio::time::Instant::now() + LEAVE_DRAIN;
                    while let Ok(Some(chunk)) =
                        tokio::time::timeout_at(deadline, chunks.recv()).await
                    {
                        self.output(chunk);
                    }
                }
                Woke::Ended => {
                    self.done = true;
                    return Some(Err(EngineError::new(
                        Code::SandboxNotFound,
                        "the sandbox ended while the command ran",
                    )));
                }
            }
        }
    }

    fn output(&mut self, chunk: Chunk) {
        let carry = match chunk.stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        let bytes = carry.push(&chunk.bytes);
        if !bytes.is_empty() {
            self.queue.push_back(output_event(chunk.stream, &bytes));
        }
    }

    /// What a stream ended with that never became a whole character, then `exit`.
    fn finish(&mut self) {
        for (stream, rest) in [
            (Stream::Stdout, self.stdout.finish()),
            (Stream::Stderr, self.stderr.finish()),
        ] {
            if !rest.is_empty() {
                self.queue.push_back(output_event(stream, &rest));
            }
        }
        let exit = self.handle.exit();
        self.queue.push_back(
            CommandEvent::Exit(Exited {
                exit_code: exit.as_ref().map(exit_code),
                timed_out: exit.is_some_and(|e| e.timed_out),
            })
            .into(),
        );
        self.done = true;
    }
}

/// A `stdout` or `stderr` event of bytes read.
pub(super) fn output_event(stream: Stream, bytes: &[u8]) -> Event {
    let chunk = OutputChunk::new(bytes);
    match stream {
        Stream::Stdout => CommandEvent::Stdout(chunk),
        Stream::Stderr => CommandEvent::Stderr(chunk),
    }
    .into()
}
