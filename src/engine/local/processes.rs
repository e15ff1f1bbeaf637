//! The processes of a sandbox: listed, signalled, written to and killed by pid, and all
//! of them stopped, continued or killed at once (pause, resume, the end).
//!
//! Each is tagged by what started it: `command` (a command running), `code` (a code run, or
//! a context's interpreter), `terminal` (a terminal's shell), or `background` (anything
//! those left or started, found by the scan). Zombies are not listed: they run no more.
//!
//! A sandbox's processes are those its commands, terminals and code contexts started and
//! whatever those left behind: found in `/proc` by the sandbox's mark, its process groups
//! and sessions, and its cgroup where there is one (`Core::scan`). A pid that is not
//! among them is `E2005`, whoever it belongs to: nothing outside the sandbox is ever
//! signalled.

use super::super::provider::{ProcessInfo, ProviderResult};
use super::sandbox::{Core, lock};
use crate::error::engine::{Code, EngineError};
use crate::services::proc_scan::{self, Found};
use crate::services::supervisor::{self, Status};
use nix::sys::signal::Signal;
use std::time::Duration;

/// How often the stop, continue and kill loops look again.
const TICK: Duration = Duration::from_millis(5);
/// How long a pause waits for every process to stop (one in uninterruptible sleep stops
/// when it wakes).
const STOP_WAIT: Duration = Duration::from_secs(2);
/// How long the end keeps killing what it finds.
const KILL_WAIT: Duration = Duration::from_secs(10);
/// How long `kill_process` waits for the process to be gone.
const GONE_WAIT: Duration = Duration::from_secs(5);

fn process_not_found(id: &str, pid: u32) -> EngineError {
    EngineError::new(
        Code::ProcessNotFound,
        format!("no process {pid} in sandbox `{id}`"),
    )
}

/// The running command (or code run) the API calls `pid`, and its tag (an exited one's
/// pid may have been reused by another process of the sandbox).
fn registered(core: &Core, pid: u32) -> Option<(String, supervisor::ProcessHandle)> {
    let pid = core.outer_of(pid)?;
    let record = core.registry.get(&core.id, pid).ok()?;
    if record.status != Status::Running {
        return None;
    }
    Some((record.tag, core.registry.process(&core.id, pid).ok()?))
}

fn command(core: &Core, pid: u32) -> Option<supervisor::ProcessHandle> {
    registered(core, pid).map(|(_, handle)| handle)
}

/// The live process of the sandbox the API calls `pid`.
fn member(core: &Core, pid: u32) -> Option<Found> {
    core.shown_member(pid).map(|s| s.found)
}

pub fn list(core: &Core) -> ProviderResult<Vec<ProcessInfo>> {
    core.life.alive()?;
    let terminals: Vec<u32> = core
        .terminals
        .list(&core.id)
        .iter()
        .map(|t| t.pid)
        .collect();
    let code = core.contexts.pids(&core.id);
    let paused = core.status() == crate::wire::SandboxStatus::Paused;
    Ok(core
        .shown()
        .into_iter()
        .map(|shown| {
            let f = shown.found;
            let host = f.stat.pid;
            let registered = registered(core, shown.pid);
            let tag = match &registered {
                Some((tag, _)) => tag.as_str(),
                // In an isolated sandbox these are the `nsenter`s: their child is it.
                None if [host, f.stat.ppid].iter().any(|p| terminals.contains(p)) => "terminal",
                None if [host, f.stat.ppid].iter().any(|p| code.contains(p)) => "code",
                None => "background",
            };
            ProcessInfo {
                pid: shown.pid,
                pgid: shown.pgid,
                cmd: proc_scan::cmdline(host),
                // A frozen process (a cgroup v1 freezer) reads `D`; in a paused sandbox
                // every process is stopped, whichever way it was.
                state: if paused {
                    "stopped".to_owned()
                } else {
                    proc_scan::state_name(f.stat.state).to_owned()
                },
                tag: tag.to_owned(),
                stdin_open: registered.is_some_and(|(_, c)| c.stdin_open()),
            }
        })
        .collect())
}

/// TERM or KILL to `pid`: to a command's process group (as the server's process routes
/// do), to the process alone for anything else of the sandbox.
pub fn signal(core: &Core, pid: u32, number: i32) -> ProviderResult<()> {
    core.running()?;
    let signal = supervisor::Signal::try_from(number).map_err(|e| EngineError::from_domain(&e))?;
    if let Some(handle) = command(core, pid) {
        return handle
            .signal(signal)
            .map_err(|e| EngineError::from_domain(&e));
    }
    let Some(found) = member(core, pid) else {
        return Err(process_not_found(&core.id, pid));
    };
    let signal = match signal {
        supervisor::Signal::Term => Signal::SIGTERM,
        supervisor::Signal::Kill => Signal::SIGKILL,
    };
    if !proc_scan::signal(found.stat.pid, signal) {
        return Err(process_not_found(&core.id, pid));
    }
    Ok(())
}

pub async fn stdin(core: &Core, pid: u32, data: &[u8], close: bool) -> ProviderResult<()> {
    core.running()?;
    let not_open = || {
        EngineError::new(
            Code::ProcessExited,
            format!(
                "process {pid} has no open stdin: only a command streamed without `stdin` \
                 keeps it open, until it is closed or the command ends"
            ),
        )
    };
    match command(core, pid) {
        Some(handle) => handle.write_stdin(data, close).await.map_err(|e| match e {
            supervisor::Error::StdinClosed | supervisor::Error::Exited => not_open(),
            other => EngineError::from_domain(&other),
        }),
        None if member(core, pid).is_some() => Err(not_open()),
        None => Err(process_not_found(&core.id, pid)),
    }
}

/// KILL to `pid` (a command's whole group); returns once it is gone.
pub async fn kill(core: &Core, pid: u32) -> ProviderResult<()> {
    core.running()?;
    if let Some(handle) = command(core, pid) {
        handle
            .signal(supervisor::Signal::Kill)
            .map_err(|e| EngineError::from_domain(&e))?;
        let _ = tokio::time::timeout(GONE_WAIT, handle.wait()).await;
        return Ok(());
    }
    let Some(found) = member(core, pid) else {
        return Err(process_not_found(&core.id, pid));
    };
    let host = found.stat.pid;
    proc_scan::signal(host, Signal::SIGKILL);
    let deadline = tokio::time::Instant::now() + GONE_WAIT;
    while tokio::time::Instant::now() < deadline {
        if proc_scan::stat(host).is_none_or(|s| s.is_dead()) {
            break;
        }
        tokio::time::sleep(TICK).await;
    }
    Ok(())
}

/// Sends `signal` to every live process of the sandbox and to every group it started
/// that still has one, until `done` holds for every process found (or `wait` passes);
/// answers whether it does.
async fn each(core: &Core, signal: Signal, wait: Duration, done: impl Fn(&Found) -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let live = core.live();
        let left: Vec<&Found> = live.iter().filter(|f| !done(f)).collect();
        if left.is_empty() {
            return true;
        }
        let groups = lock(&core.stored).groups.clone();
        for found in &left {
            proc_scan::signal(found.stat.pid, signal);
            // The group goes too, so a child forked meanwhile is not missed.
            if groups.contains(&found.stat.pgid) {
                proc_scan::signal_group(found.stat.pgid, signal);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(TICK).await;
    }
}

/// Stops every process of the sandbox: the cgroup's freezer where there is one, and
/// SIGSTOP to each process found outside it (and its group) until all are stopped.
pub async fn stop_all(core: &Core) -> ProviderResult<()> {
    let mut frozen = Vec::new();
    if let Some(cgroup) = core.cgroup.clone() {
        match tokio::task::spawn_blocking(move || cgroup.freeze(true).map(|()| cgroup.procs()))
            .await
        {
            Ok(Ok(pids)) => frozen = pids,
            _ => {
                tracing::warn!(sandbox = %core.id, "the cgroup did not freeze: stopping by signals")
            }
        }
    }
    let stopped = |f: &Found| f.stat.is_stopped() || frozen.contains(&f.stat.pid);
    if each(core, Signal::SIGSTOP, STOP_WAIT, stopped).await {
        return Ok(());
    }
    Err(EngineError::new(
        Code::Internal,
        format!(
            "not every process of sandbox `{}` stopped within {} s",
            core.id,
            STOP_WAIT.as_secs()
        ),
    ))
}

/// Continues every process of the sandbox.
pub async fn continue_all(core: &Core) {
    if let Some(cgroup) = core.cgroup.clone() {
        let _ = tokio::task::spawn_blocking(move || cgroup.freeze(false)).await;
    }
    // One round is enough: a stopped process cannot fork.
    each(core, Signal::SIGCONT, Duration::ZERO, |_| false).await;
}

/// Kills every process of the sandbox, again and again until none is left.
pub async fn kill_all(core: &Core) -> bool {
    // The machine's pid 1 first: the kernel then kills everything inside at once.
    if let Some(isolated) = &core.isolated {
        isolated.machine.end();
    }
    if let Some(cgroup) = core.cgroup.clone() {
        let _ = tokio::task::spawn_blocking(move || cgroup.kill()).await;
    }
    // `each` answers true once a scan finds nothing; past its wait, look once more.
    each(core, Signal::SIGKILL, KILL_WAIT, |_| false).await || core.live().is_empty()
}
