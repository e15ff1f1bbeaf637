//! Starting an engine: `PROGRAM provider engine serve`, detached from the caller, and the
//! liveness check of a descriptor's pid. Racing starts are safe by construction: every
//! started engine takes the state folder's lock first and a loser exits, so the caller only
//! waits for a descriptor whose engine answers (`Client::start_engine`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;

/// A started engine process, reaped by a thread of its own: a long-lived caller (a test, an
/// SDK host) must not keep it as a zombie, which `kill(pid, 0)` would still call alive.
pub(crate) struct Started {
    exited: mpsc::Receiver<std::io::Result<ExitStatus>>,
    status: Option<ExitStatus>,
}

impl Started {
    /// The exit status, once the process has ended.
    pub(crate) fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none()
            && let Ok(Ok(status)) = self.exited.try_recv()
        {
            self.status = Some(status);
        }
        self.status
    }
}

/// Starts `program provider engine serve` for `state_dir`, detached: its own process group
/// (a Ctrl-C at the caller's terminal does not reach it; a new session would need `setsid`
/// between fork and exec, which only `unsafe` code can do: the crate keeps that to the
/// cgroup join and the subreaper mark), stdio on `/dev/null` (it never
/// holds the caller's terminal or pipes open: `$(svc sandbox create)` returns), the root as
/// its working directory (it never holds a mount busy) and `SVC_STATE_DIR` set to the
/// folder the client uses, made absolute for that reason.
pub(crate) fn spawn_engine(program: &Path, state_dir: &Path) -> std::io::Result<Started> {
    use std::os::unix::process::CommandExt as _;
    let state_dir = std::path::absolute(state_dir)?;
    let mut child = Command::new(program)
        .args(["provider", "engine", "serve"])
        .env("SVC_STATE_DIR", &state_dir)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("svc-engine-reaper".into())
        .spawn(move || {
            let _ = tx.send(child.wait());
        })?;
    Ok(Started {
        exited: rx,
        status: None,
    })
}

/// The program the client starts: the caller's choice, else this executable.
pub(crate) fn engine_program(explicit: Option<&PathBuf>) -> std::io::Result<PathBuf> {
    match explicit {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe(),
    }
}

/// Whether `pid` names a live process (a zombie is not one: it answers nothing).
pub fn pid_alive(pid: u32) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    // 0 and values past i32 would name a process group or wrap: never a descriptor's pid.
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match kill(Pid::from_raw(raw), None) {
        Ok(()) => !is_zombie(pid),
        // It exists but belongs to someone else.
        Err(Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// `/proc/PID/stat`'s state field (after the command name, which may hold spaces and
/// parentheses) is `Z` for a zombie.
fn is_zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .is_some_and(|state| state == 'Z')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_of_pids() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not reaped: a zombie, not alive.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while pid_alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(!pid_alive(pid));
        child.wait().unwrap();
        assert!(!pid_alive(pid));
    }
}
