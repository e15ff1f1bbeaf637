//! The pids the API speaks. An isolated sandbox numbers its processes itself (its own pid
//! namespace): the API answers and takes those numbers, the ones `$$`, `$!` and `ps` print
//! inside, so a pid read in a command's output can be listed, signalled and killed. A
//! sandbox without a machine speaks the host's pids.
//!
//! A root engine starts a command of an isolated sandbox inside directly
//! ([`Entry`](crate::services::namespaces::Entry)): the registry holds the command itself,
//! by its host pid, and the API shows its pid inside. An ordinary engine starts it through
//! `nsenter`, which stays outside (in the host's numbering) and forks the command inside:
//! the registry holds the outer process (its stdin, output and exit are the command's) and
//! the API shows the inner one, the outer's only child. Either pair is noted when the
//! command starts.

use super::sandbox::{Core, lock};
use crate::services::namespaces;
use crate::services::proc_scan::{self, Found};
use std::time::{Duration, Instant};

/// How long a start looks for the command inside its `nsenter`. The child is forked a
/// few milliseconds after the spawn; the bound only matters on a machine under load. (A
/// command started inside directly is found at once.)
const INNER_WAIT: Duration = Duration::from_secs(2);
/// How often it looks.
const INNER_TICK: Duration = Duration::from_micros(100);

/// A process of the sandbox as the API shows it.
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    pub found: Found,
    pub pid: u32,
    pub pgid: u32,
}

impl Core {
    /// Notes the command the registry started as `outer` and answers the pid the API
    /// gives it: `outer` itself without a machine, else its pid inside (started inside) or
    /// that of the process its `nsenter` forked. A command not seen inside within the wait
    /// keeps `outer` as its number, noted as its own pair so it stays addressable while it
    /// runs.
    pub async fn note_command(&self, outer: u32) -> u32 {
        if self.isolated.is_none() {
            return outer;
        }
        let inner = match namespaces::inner_ids(outer) {
            Some((inner, _)) => Some(inner),
            None => tokio::task::spawn_blocking(move || find_inner(outer))
                .await
                .ok()
                .flatten(),
        };
        // Not seen inside (it ended at once, or the machine is slow past the wait): the API
        // gives the outer number, and the pair still makes it addressable while it runs.
        let inner = inner.unwrap_or(outer);
        let mut pairs = lock(&self.inner);
        // Pairs of ended commands go: their inner numbers may be given again.
        pairs.retain(|outer, _| proc_scan::stat(*outer).is_some_and(|s| !s.is_dead()));
        pairs.insert(outer, inner);
        inner
    }

    /// The registry's pid of the command the API calls `pid`: the same number without a
    /// machine; in an isolated sandbox only through a noted pair, since a number of the
    /// sandbox is no host pid (an `nsenter`'s host pid named by a caller must not reach it).
    pub fn outer_of(&self, pid: u32) -> Option<u32> {
        if self.isolated.is_none() {
            return Some(pid);
        }
        lock(&self.inner)
            .iter()
            .find(|(_, inner)| **inner == pid)
            .map(|(outer, _)| *outer)
    }

    /// The live processes of the sandbox with the numbers the API gives them. In an
    /// isolated sandbox those are the processes inside its machine (not the `nsenter`s
    /// that started them, nor its init); a group led from outside is shown by the command
    /// that leads it.
    pub fn shown(&self) -> Vec<Shown> {
        let live = self.live();
        if self.isolated.is_none() {
            return live
                .into_iter()
                .map(|found| Shown {
                    found,
                    pid: found.stat.pid,
                    pgid: found.stat.pgid,
                })
                .collect();
        }
        let inner = lock(&self.inner).clone();
        live.into_iter()
            .filter_map(|found| {
                let (pid, pgid) = namespaces::inner_ids(found.stat.pid)?;
                let pgid = match pgid {
                    0 => inner.get(&found.stat.pgid).copied().unwrap_or(pid),
                    pgid => pgid,
                };
                Some(Shown { found, pid, pgid })
            })
            .collect()
    }

    /// The live process the API calls `pid`.
    pub fn shown_member(&self, pid: u32) -> Option<Shown> {
        self.shown().into_iter().find(|s| s.pid == pid)
    }
}

/// The pid inside the machine of the process `nsenter` (host pid `outer`) forks, once it
/// has; `None` when `outer` ends first or the wait passes.
fn find_inner(outer: u32) -> Option<u32> {
    let deadline = Instant::now() + INNER_WAIT;
    loop {
        if let Some(inner) = namespaces::children(outer)
            .into_iter()
            .find_map(|child| namespaces::inner_ids(child).map(|(pid, _)| pid))
        {
            return Some(inner);
        }
        let gone = proc_scan::stat(outer).is_none_or(|s| s.is_dead());
        if gone || Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(INNER_TICK);
    }
}
