//! Entering a machine without `nsenter`, for an engine that is root: the child joins the
//! machine between fork and exec, and is born in its pid namespace.
//!
//! Why: `nsenter` is a program of its own (an exec, then a fork into the pid namespace),
//! which cost a command about 1.5 ms, and it stays outside as the command's parent, so the
//! command's process group (and a terminal's first process group) was led from outside the
//! machine: an interactive `dash` there ended with status 2. Here the command itself is the
//! engine's child, the leader of its own group inside.
//!
//! How: a pid namespace cannot be joined by a process for itself, only for the children it
//! makes next, and joining one from outside needs `CAP_SYS_ADMIN` in the engine's own user
//! namespace as well as in the machine's. So the spawn runs on a short-lived thread that
//! has joined the machine's pid namespace (a thread's `setns` is its own: the engine's other
//! threads and its later children are untouched, and the thread ends with the spawn), and
//! the child, single-threaded after the fork, joins the user, ipc, uts, network and mount
//! namespaces, takes the machine's root and working directory and becomes its identity.
//! An engine that lacks that capability (not root, or a root without it in a container)
//! enters through `nsenter` ([`Machine::enter`]); which way holds is found once, by a trial
//! on the probe machine ([`trial`], [`Tools::direct_entry`]).

use super::{Identity, Machine, Tools};
use nix::sched::CloneFlags;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

/// Who enters which machine, and where: made before the spawn, opened by [`Entry::open`].
#[derive(Debug, Clone)]
pub struct Entry {
    machine: Machine,
    who: Identity,
    /// The working directory, a path of the machine.
    wd: String,
}

impl Machine {
    /// How `program args` starts inside as `who` in `wd` (a path of the machine): the
    /// program and arguments to spawn, and the [`Entry`] the child takes directly where this
    /// engine may ([`Tools::direct_entry`]); else through `nsenter` ([`Machine::enter`]).
    pub fn way_in(
        &self,
        tools: &Tools,
        who: Identity,
        wd: &str,
        program: String,
        args: Vec<String>,
    ) -> (String, Vec<String>, Option<Entry>) {
        if tools.direct_entry {
            let entry = Entry {
                machine: self.clone(),
                who,
                wd: wd.to_owned(),
            };
            (program, args, Some(entry))
        } else {
            let (program, args) = self.enter(tools, who, wd, program, args);
            (program, args, None)
        }
    }
}

/// An [`Entry`]'s descriptors, opened while the machine's init runs: everything the child
/// needs, so that it makes system calls only.
#[derive(Debug)]
pub struct Door {
    /// In the order they are joined: the user namespace first, which gives the child every
    /// capability over the others; the mount namespace last, after which no host path
    /// names anything.
    joins: Vec<(OwnedFd, CloneFlags)>,
    pid: OwnedFd,
    root: OwnedFd,
    wd: CString,
    id: u32,
}

/// A spawn's way into its machine, opened: the [`Door`] the child goes through, or none for
/// a spawn on the host (or through `nsenter`, whose program is the spawn's). One way for
/// every spawner (commands, terminals, the trial), so none repeats the dance.
#[derive(Debug, Default, Clone)]
pub struct Way(Option<Arc<Door>>);

impl Way {
    /// Opens `entry`'s door, if there is an entry.
    pub fn open(entry: Option<&Entry>) -> io::Result<Way> {
        Ok(Way(entry.map(Entry::open).transpose()?.map(Arc::new)))
    }

    /// Whether the child is born inside a machine (which hides the host itself).
    pub fn inside(&self) -> bool {
        self.0.is_some()
    }

    /// The step the child runs between fork and exec to go in.
    pub fn in_child(&self) -> Option<Arc<dyn crate::services::before_exec::InChild>> {
        self.0
            .clone()
            .map(|door| door as Arc<dyn crate::services::before_exec::InChild>)
    }

    /// Runs `spawn` (a fork) so that its child is born in the machine's pid namespace, or
    /// as is on the host.
    pub fn spawn<T: Send>(&self, spawn: impl FnOnce() -> T + Send) -> io::Result<T> {
        match &self.0 {
            Some(door) => door.spawn_through(spawn),
            None => Ok(spawn()),
        }
    }
}

/// Whether this process can enter `machine` directly: `true` run inside through an
/// [`Entry`] as its user, waited for, and ended with status 0.
pub fn trial(machine: &Machine) -> bool {
    let entry = Entry {
        machine: machine.clone(),
        who: Identity::User,
        wd: super::HOME.to_owned(),
    };
    let Ok(way) = Way::open(Some(&entry)) else {
        return false;
    };
    let mut command = std::process::Command::new("/usr/bin/true");
    command
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::services::before_exec::apply_std(
        &mut command,
        crate::services::before_exec::Steps {
            enter: way.in_child(),
            ..Default::default()
        },
    );
    way.spawn(|| command.status())
        .ok()
        .and_then(Result::ok)
        .is_some_and(|status| status.success())
}

impl Entry {
    /// The machine's namespaces and root, opened; an error when its init has ended (asked
    /// after opening, so the descriptors are the machine's and not a reused pid's).
    pub fn open(&self) -> io::Result<Door> {
        let pid = self.machine.pid;
        let ns = |name: &str| -> io::Result<OwnedFd> {
            Ok(File::open(format!("/proc/{pid}/ns/{name}"))?.into())
        };
        let mut joins = vec![
            (ns("user")?, CloneFlags::CLONE_NEWUSER),
            (ns("ipc")?, CloneFlags::CLONE_NEWIPC),
            (ns("uts")?, CloneFlags::CLONE_NEWUTS),
        ];
        if self.machine.own_network {
            joins.push((ns("net")?, CloneFlags::CLONE_NEWNET));
        }
        joins.push((ns("mnt")?, CloneFlags::CLONE_NEWNS));
        let door = Door {
            joins,
            pid: ns("pid")?,
            root: File::open(format!("/proc/{pid}/root"))?.into(),
            wd: CString::new(self.wd.as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?,
            id: self.who.id(),
        };
        if !self.machine.alive() {
            return Err(io::Error::other("the sandbox's machine has ended"));
        }
        Ok(door)
    }
}

impl Door {
    /// Runs `spawn` (a fork) on a thread whose children are born in the machine's pid
    /// namespace, inside the caller's tokio runtime when it has one (a tokio child is
    /// registered with it).
    fn spawn_through<T: Send>(&self, spawn: impl FnOnce() -> T + Send) -> io::Result<T> {
        let runtime = tokio::runtime::Handle::try_current().ok();
        std::thread::scope(|scope| {
            let thread = scope.spawn(|| {
                let _runtime = runtime.as_ref().map(tokio::runtime::Handle::enter);
                nix::sched::setns(self.pid.as_fd(), CloneFlags::CLONE_NEWPID)?;
                Ok(spawn())
            });
            thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

impl crate::services::before_exec::InChild for Door {
    /// Joins the machine, takes its root and working directory, and becomes its identity.
    fn run_in_child(&self) -> io::Result<()> {
        for (fd, kind) in &self.joins {
            nix::sched::setns(fd.as_fd(), *kind)?;
        }
        nix::unistd::fchdir(self.root.as_fd())?;
        nix::unistd::chroot(".")?;
        nix::unistd::chdir(self.wd.as_c_str())?;
        // No supplementary group of the engine's goes in (refused where the machine's
        // `setgroups` is denied, which leaves none anyway).
        crate::services::before_exec::become_id(self.id)?;
        Ok(())
    }
}
