//! Whole trees: a child's process group holds only what stays in it, and one `setsid` (a
//! daemon, a double fork, `python -c 'os.setsid()'`) leaves it, so a group kill misses the
//! process and it lives on, reparented to pid 1. What a process cannot leave is its place
//! under a *child subreaper*: when a process's parent ends, the kernel hands it to the
//! nearest living ancestor marked as one, never past it to pid 1.
//!
//! Once [`keep_whole_trees`] has run (the server calls it at start), the server is a
//! subreaper and so is every child it spawns, marked between fork and exec (the mark
//! survives `exec`). Hence:
//! - while a child lives, everything it started is among its descendants, whatever it
//!   called: a stop or a kill walks them from the child down ([`Tree::signal`],
//!   [`Tree::kill`]), stopping each before reading its children, so none forks past it;
//! - when a child ends, what it left is adopted by the server, which knows its own
//!   children: every other child of the server is such a leftover, and is killed and
//!   reaped after each end ([`Tree::end`]).
//!
//! No cgroup is made or joined (a v1 migration cost about a millisecond per spawn), no
//! privilege is needed, so this holds as root and as an ordinary user on any Linux since
//! 3.4. What it cannot hold: the server's own death (SIGKILL) hands its leftovers to pid 1.

use crate::services::proc_scan;
use nix::sys::signal::Signal;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

/// Set once [`keep_whole_trees`] made this process a subreaper.
static KEPT: AtomicBool = AtomicBool::new(false);
/// The server's own children, spawned and not yet given up by their owner: a count per
/// pid, since a reaped pid may be handed to the next spawn before the old entry goes.
static OWN: Mutex<BTreeMap<u32, u32>> = Mutex::new(BTreeMap::new());
/// Held shared by a spawn from before its fork until its pid is in [`OWN`], and exclusively
/// by a sweep while it tells the server's children apart: a child being born is never
/// taken for a leftover.
static BIRTHS: RwLock<()> = RwLock::new(());
/// Ends counted so far, and (under the lock) the count the last finished sweep began
/// after: see [`Tree::end`].
static SWEEPS_ASKED: AtomicU64 = AtomicU64::new(0);
static SWEPT: tokio::sync::Mutex<u64> = tokio::sync::Mutex::const_new(0);

/// Makes this process a subreaper and every later child of the supervisor and of the
/// terminals one too (see the module doc); answers why not where the kernel refuses.
pub fn keep_whole_trees() -> Result<(), String> {
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| format!("this process cannot be a child subreaper ({e})"))?;
    KEPT.store(true, Ordering::SeqCst);
    Ok(())
}

/// Whether children's trees are kept ([`keep_whole_trees`] succeeded).
pub fn whole_trees_kept() -> bool {
    KEPT.load(Ordering::SeqCst)
}

/// A spawn under way: the sweep waits for it. Dropped on a failed spawn.
pub struct Birth(#[allow(dead_code)] RwLockReadGuard<'static, ()>);

impl Birth {
    /// Taken just before a spawn whose child is marked a subreaper
    /// ([`before_exec`](crate::services::before_exec)); `None` when trees are not kept.
    pub fn begin() -> Option<Birth> {
        whole_trees_kept().then(|| Birth(BIRTHS.read().unwrap_or_else(|e| e.into_inner())))
    }

    /// The spawned child `pid` is the root of a kept tree.
    pub fn born(self, pid: u32) -> Tree {
        *own().entry(pid).or_default() += 1;
        Tree { root: pid }
    }
}

/// A child of the server and everything below it. Its owner holds the child unreaped while
/// it signals the tree, so the root's pid cannot name another process.
#[derive(Debug)]
pub struct Tree {
    root: u32,
}

impl Tree {
    /// `signal` to the child and every descendant (TERM before the grace period: a process
    /// that left the group gets its chance to end as the group does). The tree is stopped
    /// while it is walked, so nothing forks past the walk, then continued.
    pub fn signal(&self, signal: Signal) {
        let all = stopped(self.root);
        for &pid in &all {
            proc_scan::signal(pid, signal);
        }
        for &pid in &all {
            proc_scan::signal(pid, Signal::SIGCONT);
        }
    }

    /// Kills the child and every descendant, off the async threads.
    pub async fn kill(&self) {
        let root = self.root;
        let _ = tokio::task::spawn_blocking(move || kill_tree(root)).await;
    }

    /// After the child was reaped: kills and reaps whatever it left (adopted by the server
    /// when it ended), off the async threads. Ends that meet share one sweep: one that
    /// started after this end was counted covers it (100 shells ending at once sweep a few
    /// times, not 100).
    pub async fn end(self) {
        drop(self);
        let mine = SWEEPS_ASKED.fetch_add(1, Ordering::SeqCst) + 1;
        let mut covered = SWEPT.lock().await;
        if *covered >= mine {
            return;
        }
        let upto = SWEEPS_ASKED.load(Ordering::SeqCst);
        let _ = tokio::task::spawn_blocking(sweep).await;
        *covered = upto;
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let mut own = own();
        if let Some(count) = own.get_mut(&self.root) {
            *count -= 1;
            if *count == 0 {
                own.remove(&self.root);
            }
        }
    }
}

fn own() -> MutexGuard<'static, BTreeMap<u32, u32>> {
    OWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kills and reaps every child of this process that is not its own (see the module doc),
/// with all below each, until none is left: what a leftover's descendants leave when it
/// dies is adopted here in turn. One that does not die (another user's, which this process
/// may not signal) is tried once and left to a later sweep.
fn sweep() {
    let mut tried = std::collections::BTreeSet::new();
    loop {
        let leftovers: Vec<u32> = {
            let _no_births = BIRTHS.write().unwrap_or_else(|e| e.into_inner());
            let own = own();
            proc_scan::children(std::process::id())
                .into_iter()
                .filter(|pid| !own.contains_key(pid) && !tried.contains(pid))
                .collect()
        };
        if leftovers.is_empty() {
            return;
        }
        for pid in leftovers {
            tried.insert(pid);
            kill_tree(pid);
            reap(pid);
        }
    }
}

/// Reaps the killed leftover `pid`, waiting up to a second for it to die. Ours to reap,
/// and only ours: no other wait in this process names a pid it did not spawn.
fn reap(pid: u32) {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let Ok(raw) = i32::try_from(pid) else { return };
    let pid = nix::unistd::Pid::from_raw(raw);
    for _ in 0..1000 {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => std::thread::sleep(std::time::Duration::from_millis(1)),
            _ => return,
        }
    }
}

fn kill_tree(root: u32) {
    for pid in stopped(root) {
        proc_scan::signal(pid, Signal::SIGKILL);
    }
}

/// Stops `root` and every descendant, from the top down, and answers them all. A stopped
/// process reaps nothing, so a pid read from its children stays that child's until it is
/// signalled; each is seen stopped before its own children are read, so none forks past
/// the walk (a process that cannot stop, in an uninterruptible wait, is read after a short
/// wait: anything it forks later is a leftover the next sweep finds).
fn stopped(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    proc_scan::signal(root, Signal::SIGSTOP);
    let mut next = 0;
    while let Some(&pid) = all.get(next) {
        next += 1;
        wait_stopped(pid);
        for child in proc_scan::children(pid) {
            if !all.contains(&child) {
                proc_scan::signal(child, Signal::SIGSTOP);
                all.push(child);
            }
        }
    }
    all
}

/// Waits (briefly) until `pid` is stopped or gone: a stop is delivered asynchronously.
fn wait_stopped(pid: u32) {
    for _ in 0..200 {
        match proc_scan::stat(pid).map(|s| s.state) {
            Some('T' | 't' | 'Z' | 'X') | None => return,
            _ => std::thread::sleep(std::time::Duration::from_micros(50)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// Live processes whose command line holds `word`.
    fn holding(word: &str) -> Vec<u32> {
        proc_scan::pids()
            .into_iter()
            .filter(|&pid| {
                proc_scan::cmdline(pid).contains(word)
                    && !matches!(proc_scan::stat(pid).map(|s| s.state), Some('Z') | None)
            })
            .collect()
    }

    /// A marked child keeps what its children orphan, `setsid` or not, and one kill of its
    /// tree ends it all (without the mark the daemon went to pid 1 and lived on).
    #[test]
    fn a_subreaper_keeps_what_left_its_group_and_the_kill_ends_it() {
        let word = format!("3000.{}", std::process::id());
        let script =
            format!("sh -c 'setsid sleep {word} & sleep {word} &' ; echo ready; exec sleep {word}");
        let mut command = Command::new("sh");
        command
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        let steps = crate::services::before_exec::Steps {
            join_cgroup: None,
            keep: Vec::new(),
            become_id: None,
            subreaper: true,
            hide: None,
            enter: None,
        };
        crate::services::before_exec::apply_std(&mut command, steps);
        let mut child = command.spawn().unwrap();
        let mut ready = [0u8; 6];
        std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut ready).unwrap();
        let root = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // The root (exec'd into sleep) and the two orphans, each adopted by it.
        let adopted = |pid: &u32| proc_scan::stat(*pid).is_some_and(|s| s.ppid == root);
        while holding(&word).iter().filter(|p| adopted(p)).count() < 2 {
            if std::time::Instant::now() > deadline {
                kill_tree(root);
                panic!("not adopted: {:?}", holding(&word));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        kill_tree(root);
        child.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !holding(&word).is_empty() {
            assert!(std::time::Instant::now() < deadline, "{:?}", holding(&word));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
