//! What a child does to itself between fork and exec, for the supervisor's children and
//! the terminals' shells alike: become a child subreaper
//! ([`supervisor::trees`](crate::services::supervisor::trees)), enter a view that hides
//! the server's files ([`namespaces::hidden`](crate::services::namespaces::hidden)), or
//! walk into a sandbox's machine ([`namespaces::entry`](crate::services::namespaces::entry)).
//! The supervisor's children take these steps in a child that shares the server's memory
//! ([`spawn`](crate::services::spawn), no fork); a terminal's shell and the trials in a
//! forked child (`pre_exec`). Either way the steps make system calls only.

use crate::services::cgroup::Join;
use crate::services::namespaces::hidden::Hidden;
use std::ffi::CString;
use std::sync::Arc;

/// A step defined where its data lives (a machine's way in,
/// [`namespaces::entry`](crate::services::namespaces::entry)), taken in the child.
pub trait InChild: std::fmt::Debug + Send + Sync {
    /// In the child, between fork and exec: system calls only, on what was made before the
    /// fork.
    fn run_in_child(&self) -> std::io::Result<()>;
}

/// The steps one child takes. Past the soft open-files limit the process started with
/// ([`open_files`](crate::services::open_files)), nothing is added when none is asked.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    /// The cgroup to join, first (its files are host paths).
    pub join_cgroup: Option<Join>,
    /// Descriptors the program inherits: opened close-on-exec by the parent, so that no
    /// other child gets them, and kept open across this child's exec only.
    pub keep: Vec<Arc<std::os::fd::OwnedFd>>,
    /// The uid and gid the child becomes, with no supplementary group, after the join (a
    /// cgroup's files are root's): a root engine's bwrap runs as
    /// [`ROOT_HOST_ID`](crate::services::namespaces::ROOT_HOST_ID).
    pub become_id: Option<u32>,
    pub subreaper: bool,
    /// The hiding to join and the working directory to go back to in it.
    pub hide: Option<(&'static Hidden, CString)>,
    /// The machine the child walks into, last (its paths are the machine's after that).
    pub enter: Option<Arc<dyn InChild>>,
}

impl Steps {
    /// `hidden`'s hiding for a child that works in `cwd` (else where the server does).
    pub fn hide(
        hidden: Option<&'static Hidden>,
        cwd: Option<&std::path::Path>,
    ) -> Option<(&'static Hidden, CString)> {
        hidden.map(|h| (h, crate::services::namespaces::hidden::cwd_for_child(cwd)))
    }

    fn any(&self) -> bool {
        crate::services::open_files::raised()
            || self.join_cgroup.is_some()
            || !self.keep.is_empty()
            || self.become_id.is_some()
            || self.subreaper
            || self.hide.is_some()
            || self.enter.is_some()
    }

    /// In the child. Only system calls on memory made before the fork, and identities
    /// changed per thread (a child that shares the parent's memory must not ask the C
    /// library, which would change every thread of the parent's with it: see
    /// [`spawn`](crate::services::spawn)).
    pub(crate) fn run(&self) -> std::io::Result<()> {
        crate::services::open_files::restore_in_child()?;
        if let Some(join) = &self.join_cgroup {
            join.run()?;
        }
        for fd in &self.keep {
            use nix::fcntl::{FcntlArg, FdFlag, fcntl};
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty()))?;
        }
        if let Some(id) = self.become_id {
            become_id(id)?;
        }
        if self.subreaper {
            nix::sys::prctl::set_child_subreaper(true)?;
        }
        if let Some((hidden, cwd)) = &self.hide {
            hidden.enter(cwd)?;
        }
        if let Some(step) = &self.enter {
            step.run_in_child()?;
        }
        Ok(())
    }
}

/// Becomes `id` as user and group, with no supplementary group: per thread, by raw system
/// calls (see [`Steps::run`]). A refused `setgroups` (a machine that denies it) is left:
/// it leaves none anyway.
pub(crate) fn become_id(id: u32) -> std::io::Result<()> {
    let _ = rustix::thread::set_thread_groups(&[]);
    let gid = rustix::process::Gid::from_raw(id);
    rustix::thread::set_thread_res_gid(gid, gid, gid)?;
    let uid = rustix::process::Uid::from_raw(id);
    rustix::thread::set_thread_res_uid(uid, uid, uid)?;
    Ok(())
}

/// Adds `steps` to `command`'s child; a failing step fails the spawn, so the program never
/// runs without them.
pub fn apply_std(command: &mut std::process::Command, steps: Steps) {
    use std::os::unix::process::CommandExt;
    if !steps.any() {
        return;
    }
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: `Steps::run` makes system calls only (setrlimit, open,
    // write, fcntl, prctl, setns, chdir, chroot, setgroups, setresgid, setresuid), on data
    // made before the fork, and builds its errors from
    // an errno (no allocation).
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || steps.run());
    }
}

/// The same for a terminal's shell (pty-process runs it after making the session).
pub fn apply_pty(command: pty_process::Command, steps: Steps) -> pty_process::Command {
    if !steps.any() {
        return command;
    }
    // SAFETY: as in `apply_std`.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || steps.run())
    }
}

/// Spawns `true` with `steps`, to learn at start whether this machine allows them rather
/// than from every child's failed spawn later.
pub fn trial(steps: Steps) -> Result<(), String> {
    let mut command = std::process::Command::new("true");
    command
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    apply_std(&mut command, steps);
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a trial child ended with {status}")),
        Err(e) => Err(format!("a trial child could not start ({e})")),
    }
}
