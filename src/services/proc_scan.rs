//! Finding one tenant's processes on this machine by reading `/proc`: for a sandbox
//! without a cgroup this is the only complete list of what it runs, since a command's
//! background children outlive the command and are nobody's child the engine knows.
//!
//! A tenant marks every process it starts with one environment entry (`NAME=value`);
//! children inherit it. [`find`] answers every process whose environment holds the mark,
//! plus every member of a process group or session the tenant started that also holds a
//! marked member (a child that cleared its environment but stayed with its family), plus
//! the pids the caller already knows (a cgroup's `cgroup.procs`). A group or session with
//! no marked member left is not trusted: its id may have been reused by a stranger, and a
//! stranger must never be signalled. The scanning process itself and init are never
//! answered, nor a process of another user.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;

/// The fields of `/proc/<pid>/stat` a tenant needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    pub ppid: u32,
    /// Its process group.
    pub pgid: u32,
    /// Its session.
    pub sid: u32,
    /// The kernel's state letter (`R`, `S`, `D`, `T`, `t`, `Z`, ...).
    pub state: char,
    /// CPU time used, user plus system, in clock ticks.
    pub cpu_ticks: u64,
    /// When it started, in clock ticks after boot: with the pid, it names one process for
    /// good (a pid is reused, a pid with its start time is not).
    pub started: u64,
}

impl ProcStat {
    /// A zombie or a dead task: it runs no more and cannot be signalled away.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }

    /// Stopped by a signal (or a tracer).
    pub fn is_stopped(&self) -> bool {
        matches!(self.state, 'T' | 't')
    }
}

/// The kernel's state letter in words.
pub fn state_name(state: char) -> &'static str {
    match state {
        'R' => "running",
        'S' | 'I' => "sleeping",
        'D' => "waiting",
        'T' | 't' => "stopped",
        'Z' => "zombie",
        'X' | 'x' => "dead",
        _ => "unknown",
    }
}

/// `/proc/<pid>/stat`, or `None` when there is no such process.
pub fn stat(pid: u32) -> Option<ProcStat> {
    parse_stat(
        pid,
        &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?,
    )
}

/// Parses a stat line. The command name may hold spaces and parentheses, so the fields
/// are counted from the last `)`: state, ppid, pgrp, session, then utime and stime as the
/// 12th and 13th after it and starttime as the 20th.
fn parse_stat(pid: u32, text: &str) -> Option<ProcStat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let number = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(ProcStat {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: u32::try_from(number(1)?).ok()?,
        pgid: u32::try_from(number(2)?).ok()?,
        sid: u32::try_from(number(3)?).ok()?,
        cpu_ticks: number(11)?.saturating_add(number(12)?),
        started: number(19)?,
    })
}

/// The command line, arguments joined by spaces; the name in brackets when there is none
/// (a zombie, a kernel thread).
pub fn cmdline(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if !words.is_empty() {
        return words.join(" ");
    }
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    format!("[{}]", comm.trim())
}

/// Whether the environment `pid` started with holds exactly `entry` (`NAME=value`).
/// An empty read is tried once more: the file is bound to the memory of the program that
/// ran when it was opened, so one opened just before an `exec` reads nothing after it.
pub fn environ_has(pid: u32, entry: &str) -> bool {
    let read = || std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let mut env = read();
    if env.is_empty() {
        env = read();
    }
    env.split(|b| *b == 0).any(|e| e == entry.as_bytes())
}

/// The namespace inode of kind `kind` (`pid`, `mnt`, `net`...) of process `pid`.
pub fn ns_inode(pid: u32, kind: &str) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).ok()?;
    let text = link.to_str()?;
    text.strip_prefix(kind)?
        .strip_prefix(":[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Every pid in `/proc`.
pub fn pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// What marks one tenant's processes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Marks<'a> {
    /// The environment entry every process of the tenant starts with (`NAME=value`).
    pub env: &'a str,
    /// Process groups the tenant started.
    pub groups: &'a [u32],
    /// Sessions the tenant started (terminals).
    pub sessions: &'a [u32],
    /// Pids known to be the tenant's by other means (a cgroup's members).
    pub known: &'a [u32],
    /// The tenant's own pid namespace (by inode): every process in it is the tenant's,
    /// whichever user it runs as (a sandbox's processes run as ids of their own).
    pub pidns: Option<u64>,
}

/// A process of the tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub stat: ProcStat,
    /// Its environment holds the mark (else it was found by its group, session or pid).
    pub marked: bool,
}

/// The tenant's processes (see the module's documentation), by pid.
pub fn find(marks: &Marks<'_>) -> Vec<Found> {
    let me = std::process::id();
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    let mut all = Vec::new();
    for pid in pids() {
        if pid == me || pid <= 1 {
            continue;
        }
        if marks.pidns.is_some() && ns_inode(pid, "pid") == marks.pidns {
            if let Some(stat) = stat(pid) {
                all.push(Found { stat, marked: true });
            }
            continue;
        }
        // Another user's process is never the tenant's (and is not ours to signal).
        let owner = std::fs::metadata(format!("/proc/{pid}"))
            .map(|m| m.uid())
            .ok();
        if owner.is_none() || owner != uid {
            continue;
        }
        let Some(stat) = stat(pid) else { continue };
        let marked = !marks.env.is_empty() && environ_has(pid, marks.env);
        all.push(Found { stat, marked });
    }
    let trusted_groups: HashSet<u32> = all
        .iter()
        .filter(|f| f.marked && marks.groups.contains(&f.stat.pgid))
        .map(|f| f.stat.pgid)
        .collect();
    let trusted_sessions: HashSet<u32> = all
        .iter()
        .filter(|f| f.marked && marks.sessions.contains(&f.stat.sid))
        .map(|f| f.stat.sid)
        .collect();
    all.retain(|f| {
        f.marked
            || trusted_groups.contains(&f.stat.pgid)
            || trusted_sessions.contains(&f.stat.sid)
            || marks.known.contains(&f.stat.pid)
    });
    all.sort_by_key(|f| f.stat.pid);
    all
}

/// The children of `pid` (of every thread of it: a child's parent is the thread that
/// forked it, and an adopted orphan's is any live thread of its new parent); empty when it
/// is gone.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        found.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// Sends `signal` to `pid`; `false` when it is gone.
pub fn signal(pid: u32, signal: Signal) -> bool {
    i32::try_from(pid).is_ok_and(|raw| kill(Pid::from_raw(raw), signal).is_ok())
}

/// Sends `signal` to the process group `pgid`; `false` when it is empty.
pub fn signal_group(pgid: u32, signal: Signal) -> bool {
    i32::try_from(pgid).is_ok_and(|raw| raw > 1 && killpg(Pid::from_raw(raw), signal).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    fn mark() -> String {
        format!("SVC_SCAN_TEST={}", uuid::Uuid::new_v4().simple())
    }

    /// `sh -c script` in a group of its own, with `mark` in its environment (if any).
    fn spawn(script: &str, mark: Option<&str>) -> Child {
        let mut command = Command::new("sh");
        command
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0);
        if let Some((name, value)) = mark.and_then(|m| m.split_once('=')) {
            command.env(name, value);
        }
        command.spawn().unwrap()
    }

    fn pids_of(found: &[Found]) -> Vec<u32> {
        found.iter().map(|f| f.stat.pid).collect()
    }

    /// Kills `child`'s group and reaps it.
    fn end(mut child: Child) {
        signal_group(child.id(), Signal::SIGKILL);
        let _ = child.wait();
    }

    #[test]
    fn a_stat_line_is_read_past_a_name_with_parentheses() {
        let line = "42 (a) b (c) S 7 42 40 0 -1 4194560 100 0 0 0 25 17 0 0 20 0 1 0 99 0 0";
        let parsed = parse_stat(42, line).unwrap();
        assert_eq!(
            parsed,
            ProcStat {
                pid: 42,
                ppid: 7,
                pgid: 42,
                sid: 40,
                state: 'S',
                cpu_ticks: 42,
                started: 99,
            }
        );
        assert_eq!(state_name(parsed.state), "sleeping");
        assert!(parse_stat(1, "garbage").is_none());
        let me = stat(std::process::id()).unwrap();
        assert_eq!(me.pid, std::process::id());
        assert!(stat(u32::MAX).is_none());
    }

    #[test]
    fn marked_processes_and_their_family_are_found_strangers_are_not() {
        let mark = mark();
        // The marked shell starts a child that drops the mark but stays in its group.
        let mut marked = spawn("env -u SVC_SCAN_TEST sleep 30 & echo $!; wait", Some(&mark));
        let stranger = spawn("sleep 30", None);
        let mut line = String::new();
        use std::io::BufRead;
        let mut out = std::io::BufReader::new(marked.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
        let unmarked_child: u32 = line.trim().parse().unwrap();
        // `env` execs `sleep`: wait until the child's environment is sleep's.
        for _ in 0..100 {
            if cmdline(unmarked_child).starts_with("sleep") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let by_mark = find(&Marks {
            env: &mark,
            ..Marks::default()
        });
        assert_eq!(pids_of(&by_mark), vec![marked.id()]);
        assert!(by_mark[0].marked);
        let groups = [marked.id()];
        let with_group = find(&Marks {
            env: &mark,
            groups: &groups,
            ..Marks::default()
        });
        let mut expected = vec![marked.id(), unmarked_child];
        expected.sort();
        assert_eq!(pids_of(&with_group), expected);
        // A stranger's group named by mistake (or reused) is not trusted: it has no
        // marked member.
        let strangers = [stranger.id()];
        let wrong = find(&Marks {
            env: &mark,
            groups: &strangers,
            ..Marks::default()
        });
        assert!(!pids_of(&wrong).contains(&stranger.id()));
        assert_eq!(cmdline(stranger.id()), "sh -c sleep 30");
        end(marked);
        end(stranger);
    }

    #[test]
    fn known_pids_are_found_and_cpu_time_is_counted() {
        let busy = spawn("while :; do :; done", None);
        let known = [busy.id()];
        let found = find(&Marks {
            env: "",
            known: &known,
            ..Marks::default()
        });
        assert_eq!(pids_of(&found), vec![busy.id()]);
        assert!(!found[0].marked);
        let before = stat(busy.id()).unwrap().cpu_ticks;
        let mut after = before;
        for _ in 0..300 {
            std::thread::sleep(Duration::from_millis(10));
            after = stat(busy.id()).unwrap().cpu_ticks;
            if after > before {
                break;
            }
        }
        assert!(after > before, "a busy loop uses CPU time");
        assert!(signal(busy.id(), Signal::SIGSTOP));
        for _ in 0..100 {
            if stat(busy.id()).unwrap().is_stopped() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(state_name(stat(busy.id()).unwrap().state), "stopped");
        end(busy);
        assert!(!signal(u32::MAX, Signal::SIGCONT));
        assert!(!signal_group(1, Signal::SIGCONT), "never init's group");
    }
}
