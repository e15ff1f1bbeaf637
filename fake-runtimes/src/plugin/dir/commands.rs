//! Commands in a sandbox: `cmd` alone is a shell line (`/bin/sh -c`), with `args` it is a
//! program and its arguments. Each runs in its sandbox's home (or `cwd`), in a process
//! group of its own (its `timeout` ends the whole group), with a clean environment: the
//! sandbox's variables, the command's, and the sandbox's mark. The output is read by one
//! thread per pipe; the caller hears it as it comes (`stream`) or at the end (`run`).

use super::paths::{io_fault, missing, resolve, shown};
use super::store::{MARK, Stored};
use crate::plugin::{Fault, Out, b64};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Bytes of each stream a `run` keeps (the rest is dropped).
const RUN_KEEP: usize = 8 * 1024 * 1024;
/// After the command exits, how long output of what it left behind is still taken.
const DRAIN: Duration = Duration::from_millis(100);
/// How often a waiting call looks at its cancel flag.
const TICK: Duration = Duration::from_millis(50);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Body {
    pub cmd: String,
    #[serde(default)]
    pub args: Option<Vec<String>>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub stdin: Option<String>,
}

#[derive(Clone, Copy)]
pub enum Pipe {
    Stdout,
    Stderr,
}

enum Happened {
    Output(Pipe, Vec<u8>),
    Closed,
    Exited(std::io::Result<ExitStatus>),
}

/// How a command ended.
pub struct Ended {
    pub exit_code: i32,
    pub timed_out: bool,
}

/// What the running command needs from its call: where `alive` goes, how often, and the
/// cancel flag.
pub struct Ctx<'a> {
    pub out: &'a Out,
    pub id: u64,
    pub alive_every: Duration,
    pub cancel: &'a AtomicBool,
}

fn invalid(message: String) -> Fault {
    Fault::new("E4001", message)
}

fn check_names(env: &BTreeMap<String, String>) -> Result<(), Fault> {
    for name in env.keys() {
        let mut chars = name.chars();
        let good = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !good {
            return Err(invalid(format!("`env`: `{name}` is not a variable name")));
        }
    }
    Ok(())
}

/// Runs the command of `params` in `sandbox`; `on_start` hears its pid, `on_output` its
/// output as read.
pub fn execute(
    ctx: &Ctx,
    home: &Path,
    sandbox: &Stored,
    params: Value,
    on_start: impl FnOnce(u32),
    mut on_output: impl FnMut(Pipe, Vec<u8>),
) -> Result<Ended, Fault> {
    let body: Body =
        serde_json::from_value(params).map_err(|e| invalid(format!("a bad command body: {e}")))?;
    let me = std::env::var("USER").unwrap_or_default();
    if let Some(user) = body.user.as_deref().filter(|u| *u != me) {
        return Err(invalid(format!(
            "the dir provider runs as `{me}`: `user` must be `{me}` or left out, not `{user}`"
        )));
    }
    let timeout = match body.timeout.unwrap_or(60) {
        0 => None,
        s if s <= 86_400 => Some(Duration::from_secs(s)),
        s => {
            return Err(invalid(format!(
                "`timeout` must be 0 (none) to 86400 seconds, not {s}"
            )));
        }
    };
    let extra = body.env.clone().unwrap_or_default();
    check_names(&extra)?;
    let cwd = match body.cwd.as_deref() {
        None => home.to_path_buf(),
        Some(raw) => {
            let path = resolve(home, raw)?;
            match std::fs::metadata(&path) {
                Err(_) => return Err(missing(&path)),
                Ok(m) if !m.is_dir() => {
                    return Err(Fault::new(
                        "E4006",
                        format!("`cwd` {} is not a directory", shown(&path)),
                    ));
                }
                Ok(_) => path,
            }
        }
    };
    let mut command = match &body.args {
        Some(args) => {
            let mut c = Command::new(&body.cmd);
            c.args(args);
            c
        }
        None => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(&body.cmd);
            c
        }
    };
    command
        .current_dir(&cwd)
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("HOME", home)
        .env("USER", &me)
        .env("LANG", "C.UTF-8")
        .envs(&sandbox.envs)
        .envs(&extra)
        .env(MARK, &sandbox.record.sandbox_id)
        .process_group(0)
        .stdin(if body.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| match (&body.args, e.kind()) {
        (Some(_), std::io::ErrorKind::NotFound) => invalid(format!(
            "no program `{}` in sandbox `{}` (not on its PATH, or not executable)",
            body.cmd, sandbox.record.sandbox_id
        )),
        _ => io_fault(&cwd, &e),
    })?;
    let pid = child.id();
    on_start(pid);
    let (tx, rx) = mpsc::channel();
    if let (Some(text), Some(mut stdin)) = (body.stdin, child.stdin.take()) {
        std::thread::spawn(move || {
            let _ = stdin.write_all(text.as_bytes());
        });
    }
    for (pipe, reader) in [
        (
            Pipe::Stdout,
            child
                .stdout
                .take()
                .map(|r| Box::new(r) as Box<dyn Read + Send>),
        ),
        (
            Pipe::Stderr,
            child
                .stderr
                .take()
                .map(|r| Box::new(r) as Box<dyn Read + Send>),
        ),
    ] {
        if let Some(reader) = reader {
            let tx = tx.clone();
            std::thread::spawn(move || pump(pipe, reader, tx));
        }
    }
    std::thread::spawn(move || {
        let _ = tx.send(Happened::Exited(child.wait()));
    });
    follow(ctx, pid, timeout, rx, &mut on_output)
}

fn pump(pipe: Pipe, mut reader: Box<dyn Read + Send>, tx: mpsc::Sender<Happened>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send(Happened::Output(pipe, buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send(Happened::Closed);
}

/// Waits for the exit, passing output on, saying `alive`, ending the group at the
/// timeout or the cancel; then takes what is left in the pipes for a moment.
fn follow(
    ctx: &Ctx,
    pid: u32,
    timeout: Option<Duration>,
    rx: mpsc::Receiver<Happened>,
    on_output: &mut impl FnMut(Pipe, Vec<u8>),
) -> Result<Ended, Fault> {
    let started = Instant::now();
    let mut last_word = Instant::now();
    let mut timed_out = false;
    let mut open_pipes = 2;
    let mut exited: Option<(ExitStatus, Instant)> = None;
    let kill_group = || {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    };
    loop {
        if let Some((_, at)) = exited
            && (open_pipes == 0 || at.elapsed() >= DRAIN)
        {
            break;
        }
        if exited.is_none() {
            if ctx.cancel.load(Ordering::Relaxed) {
                kill_group();
            }
            if !timed_out && timeout.is_some_and(|t| started.elapsed() >= t) {
                timed_out = true;
                kill_group();
            }
        }
        if last_word.elapsed() >= ctx.alive_every {
            ctx.out.alive(ctx.id);
            last_word = Instant::now();
        }
        match rx.recv_timeout(TICK) {
            Ok(Happened::Output(pipe, bytes)) => on_output(pipe, bytes),
            Ok(Happened::Closed) => open_pipes -= 1,
            Ok(Happened::Exited(status)) => {
                let status = status.map_err(|e| {
                    Fault::new("E9001", format!("the command could not be waited for: {e}"))
                })?;
                exited = Some((status, Instant::now()));
            }
            Err(_) => {}
        }
    }
    let status = exited.map(|(s, _)| s);
    let exit_code = status
        .and_then(|s| s.code().or_else(|| s.signal().map(|sig| 128 + sig)))
        .unwrap_or(-1);
    Ok(Ended {
        exit_code,
        timed_out,
    })
}

/// `commands_run`: the whole output at the end, as base64.
pub fn run(ctx: &Ctx, home: &Path, sandbox: &Stored, params: Value) -> Result<Value, Fault> {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut pid = 0;
    let ended = execute(
        ctx,
        home,
        sandbox,
        params,
        |p| pid = p,
        |pipe, bytes| {
            let kept = match pipe {
                Pipe::Stdout => &mut stdout,
                Pipe::Stderr => &mut stderr,
            };
            let room = RUN_KEEP.saturating_sub(kept.len());
            kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
        },
    )?;
    Ok(json!({
        "pid": pid,
        "stdout_b64": b64(&stdout),
        "stderr_b64": b64(&stderr),
        "exit_code": ended.exit_code,
        "timed_out": ended.timed_out,
    }))
}

/// `commands_stream`: `start`, then `stdout` / `stderr` as read, then `exit`.
pub fn stream(ctx: &Ctx, home: &Path, sandbox: &Stored, params: Value) -> Result<Value, Fault> {
    let (out, id) = (ctx.out, ctx.id);
    let ended = execute(
        ctx,
        home,
        sandbox,
        params,
        |pid| out.event(id, "start", json!({ "pid": pid })),
        |pipe, bytes| {
            let name = match pipe {
                Pipe::Stdout => "stdout",
                Pipe::Stderr => "stderr",
            };
            out.event(id, name, json!({ "data_b64": b64(&bytes) }));
        },
    )?;
    out.event(
        id,
        "exit",
        json!({ "exit_code": ended.exit_code, "timed_out": ended.timed_out }),
    );
    Ok(Value::Null)
}
