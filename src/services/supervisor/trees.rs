//! Whole trees: a child's process group holds only what stays in it, and one `setsid` (a
//! daemon, a double fork, `python -c 'os.setsid()'`) leaves it, so a group kill misses the
//! process and it lives on, reparented to pid 1. A cgroup cannot be left without a
//! privilege the child lacks. Once [`keep_whole_trees`] has run (the server calls it at
//! start), every child the supervisor spawns whose spec names no cgroup of its own and
//! whose group dies with it ([`GroupEnd::Kill`](super::GroupEnd)) runs in a cgroup of its
//! own, joined between fork and exec: a kill, a timeout and the child's own end kill
//! everything in it, and the cgroup goes. Where the machine gives no cgroups, children
//! keep their process groups only, and the caller says so.

use crate::services::cgroup::{self, Cgroup, Cgroups, Limits, Support};
use nix::sys::signal::Signal;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the children's cgroups are made, once [`keep_whole_trees`] found a place.
static TREES: OnceLock<Cgroups> = OnceLock::new();
/// Numbers the cgroups of this process (their names also carry its pid: two servers on
/// one machine share the folder).
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Makes every later child (see the module doc) run in a cgroup of its own; answers why
/// not where this machine gives this process no cgroups.
pub fn keep_whole_trees() -> Result<(), String> {
    match cgroup::detect() {
        Support::Available(cgroups) => {
            let _ = TREES.set(cgroups.one_folder());
            Ok(())
        }
        Support::Unavailable(why) => Err(why),
    }
}

/// Whether children are kept in cgroups ([`keep_whole_trees`] succeeded).
pub fn whole_trees_kept() -> bool {
    TREES.get().is_some()
}

/// One child's cgroup.
#[derive(Debug, Clone)]
pub struct Tree(Cgroup);

impl Tree {
    /// A new cgroup for the next child; `None` when trees are not kept.
    pub fn make() -> std::io::Result<Option<Tree>> {
        let Some(cgroups) = TREES.get() else {
            return Ok(None);
        };
        let name = format!(
            "tree-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        cgroups
            .create(&name, &Limits::default())
            .map(|cgroup| Some(Tree(cgroup)))
    }

    /// The files the child writes itself into before its program runs.
    pub(super) fn join_files(&self) -> Vec<PathBuf> {
        self.0.procs_files()
    }

    /// Lets a child that runs as `uid` write itself into it (it joins after it became
    /// that user).
    pub(super) fn give_to(&self, uid: u32, gid: u32) -> std::io::Result<()> {
        use nix::unistd::{Gid, Uid, chown};
        for file in self.join_files() {
            chown(&file, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)))?;
        }
        Ok(())
    }

    /// `signal` to every process in it (TERM before the grace period: a process that left
    /// the group gets its chance to end as the group does).
    pub fn signal(&self, signal: Signal) {
        for pid in self.0.procs() {
            crate::services::proc_scan::signal(pid, signal);
        }
    }

    /// Kills everything in it, off the async threads (v1 freezes, kills, thaws and waits).
    pub(super) async fn kill(&self) {
        let cgroup = self.0.clone();
        let _ = tokio::task::spawn_blocking(move || cgroup.kill()).await;
    }

    /// Kills everything in it and removes it.
    pub async fn end(self) {
        let cgroup = self.0;
        let _ = tokio::task::spawn_blocking(move || {
            let _ = cgroup.kill();
            cgroup.remove()
        })
        .await;
    }

    /// Moves `pid` in after its spawn, for a child started where no hook runs between
    /// fork and exec (a terminal's shell: moved in before its first input is written, so
    /// anything a user starts there is inside).
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        self.0.add(pid)
    }

    /// Removes it after a spawn that failed (nothing joined it).
    pub fn discard(self) {
        let _ = self.0.remove();
    }
}
