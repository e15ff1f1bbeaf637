//! The processes of a terminal's session. An interactive shell on a terminal runs every job
//! in a process group of its own (job control), so the shell's group alone does not hold
//! everything it started; the session does. Members are found in `/proc` by their session
//! id (the shell's pid: the shell is the session leader).

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The session id of `pid`, from `/proc/<pid>/stat` (fields after the command name:
/// state, ppid, pgrp, session); `None` when the process is gone.
pub fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields start after the last `)`.
    let (_, fields) = stat.rsplit_once(')')?;
    fields.split_whitespace().nth(3)?.parse().ok()
}

/// Every process of session `sid` (the leader included while it exists).
pub fn members(sid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| session_of(*pid) == Some(sid))
        .collect()
}

/// Sends each of `signals` to every member of session `sid`; returns how many members
/// there were.
pub fn signal(sid: u32, signals: &[Signal]) -> usize {
    let pids = members(sid);
    for pid in &pids {
        let Ok(raw) = i32::try_from(*pid) else {
            continue;
        };
        for signal in signals {
            let _ = kill(Pid::from_raw(raw), *signal);
        }
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_session_holds_us() {
        let me = std::process::id();
        let sid = session_of(me).unwrap();
        assert!(members(sid).contains(&me));
    }

    #[test]
    fn a_missing_process_has_no_session() {
        assert_eq!(session_of(u32::MAX), None);
    }
}
