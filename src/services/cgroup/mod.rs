//! cgroups for sandboxes: where the machine allows one, every process of a sandbox runs in
//! a cgroup of its own, which enforces `cpu`, `memory` and a number of processes (`pids`,
//! so a fork bomb stays inside), freezes the whole sandbox at once, lists its processes
//! and kills them all.
//!
//! Two backends, because machines differ and both kinds are common:
//! - cgroup **v2** ([`detect_in`]): one folder `<own cgroup>/svc-sandboxes/<name>` in the
//!   unified hierarchy: `cpu.max`, `memory.max`, `pids.max`, `cgroup.freeze`,
//!   `cgroup.procs`, `cgroup.kill`. Controllers can only be handed down from a cgroup that
//!   holds no process of its own (the kernel's "no internal processes" rule), and the
//!   engine lives in its own cgroup: when handing one down fails for that reason, sandboxes
//!   still get cgroups (for freezing, listing and killing), and that limit is reported as
//!   not enforced.
//! - cgroup **v1** ([`detect_v1_in`]), tried when there is no unified hierarchy with
//!   `cgroup.controllers` (older distributions, many containers and VMs): each controller
//!   is a hierarchy of its own, so a sandbox's cgroup is one folder
//!   `<hierarchy><own path>/svc-sandboxes/<name>` in each usable hierarchy among `pids`,
//!   `memory`, `cpu` and `freezer`: `pids.max`, `memory.limit_in_bytes`,
//!   `cpu.cfs_quota_us`, `freezer.state`. v1 has no `cgroup.kill`: the processes are
//!   frozen, killed one by one and thawed, until none is left.
//!
//! A cgroup is stored (for adoption by the next engine) as one path, its *primary* folder:
//! the v2 folder, or the v1 folder in the first usable hierarchy; the others are found
//! again from its name ([`Cgroups::open`]).
//!
//! Where the machine allows neither, [`detect`] says why (both reasons), and the caller
//! falls back to process groups and signals and reports the limits as not enforced.

mod v1;
mod v2;

#[cfg(test)]
mod tests;

pub use v1::detect_v1_in;
pub use v2::detect_in;

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the unified hierarchy is mounted.
pub const MOUNT: &str = "/sys/fs/cgroup";
/// The folder under this process's cgroup that holds the sandboxes' cgroups.
pub const SUBTREE: &str = "svc-sandboxes";
/// The CPU bandwidth period (`cpu.max`, `cpu.cfs_period_us`), in microseconds.
const CPU_PERIOD_US: u64 = 100_000;
/// Linux's ceiling on process ids on 64-bit machines (`PID_MAX_LIMIT`): the kernel refuses
/// a larger `pids.max`, and a limit at it is no limit, since no more processes can exist.
const PID_MAX_LIMIT: u32 = 4 * 1024 * 1024;
/// How long [`Cgroup::freeze`] waits for the kernel to report the group frozen, and
/// [`Cgroup::kill`] for it to be empty.
const SETTLE: Duration = Duration::from_secs(2);

/// What this machine offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    Available(Cgroups),
    /// Why there are no cgroups for sandboxes here.
    Unavailable(String),
}

impl Support {
    /// The cgroups, when the machine offers them.
    pub fn cgroups(&self) -> Option<&Cgroups> {
        match self {
            Support::Available(cgroups) => Some(cgroups),
            Support::Unavailable(_) => None,
        }
    }
}

/// Where sandboxes' cgroups are made, and which limits they can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroups {
    /// The `svc-sandboxes` folders: one on v2, one per usable hierarchy on v1; the first
    /// holds the primary folders.
    parents: Vec<PathBuf>,
    layout: Layout,
}

/// Which folder of a cgroup (an index into its folders) does what; `None`: not enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    v1: bool,
    cpu: Option<usize>,
    memory: Option<usize>,
    pids: Option<usize>,
    freezer: Option<usize>,
}

/// The limits of one cgroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Whole CPUs.
    pub cpus: Option<u32>,
    /// Megabytes.
    pub memory_mb: Option<u64>,
    /// Processes (and threads) at once: a fork past it fails.
    pub pids: Option<u32>,
}

/// One sandbox's cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    /// The primary folder first; v1: one per hierarchy.
    dirs: Vec<PathBuf>,
    layout: Layout,
}

/// This machine's support: the unified hierarchy if there is one, else the v1 hierarchies.
pub fn detect() -> Support {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let v2 = match detect_in(Path::new(MOUNT), &own) {
        Support::Available(cgroups) => return Support::Available(cgroups),
        Support::Unavailable(why) => why,
    };
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    match detect_v1_in(&mountinfo, &own) {
        Support::Available(cgroups) => Support::Available(cgroups),
        Support::Unavailable(v1) => Support::Unavailable(format!("{v2}; {v1}")),
    }
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value)
}

/// Polls `done` until it holds, or fails saying `what` past [`SETTLE`].
fn settle(what: impl Fn() -> String, done: impl Fn() -> io::Result<bool>) -> io::Result<()> {
    let deadline = Instant::now() + SETTLE;
    loop {
        if done()? {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(io::Error::other(what()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Cgroups {
    /// The CPU limit is enforced in the cgroups made here.
    pub fn cpu(&self) -> bool {
        self.layout.cpu.is_some()
    }

    /// The memory limit is enforced in the cgroups made here.
    pub fn memory(&self) -> bool {
        self.layout.memory.is_some()
    }

    /// The processes limit is enforced in the cgroups made here.
    pub fn pids(&self) -> bool {
        self.layout.pids.is_some()
    }

    /// [`Cgroup::freeze`] can work here (else it fails and the caller uses signals).
    pub fn freezer(&self) -> bool {
        self.layout.freezer.is_some()
    }

    /// 1 or 2: which cgroup version the sandboxes' cgroups are.
    pub fn version(&self) -> u8 {
        if self.layout.v1 { 1 } else { 2 }
    }

    /// The folder that holds the cgroups' primary folders.
    pub fn parent(&self) -> &Path {
        &self.parents[0]
    }

    /// Makes the cgroup `name` with `limits` (only those enforced here are written); on
    /// any failure nothing is left.
    pub fn create(&self, name: &str, limits: &Limits) -> io::Result<Cgroup> {
        if name.is_empty() || name.contains(['/', '\0']) || name.starts_with('.') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a cgroup name"),
            ));
        }
        let mut cgroup = Cgroup {
            dirs: Vec::new(),
            layout: self.layout,
        };
        for parent in &self.parents {
            let dir = parent.join(name);
            if let Err(e) = std::fs::create_dir(&dir) {
                // Only the folders made here go: one already there is someone else's.
                let _ = cgroup.remove();
                return Err(e);
            }
            cgroup.dirs.push(dir);
        }
        if let Err(e) = cgroup.limit(limits) {
            let _ = cgroup.remove();
            return Err(e);
        }
        Ok(cgroup)
    }

    /// The cgroup whose primary folder is `path`, made earlier (by a previous engine), if
    /// it is still there and is one of ours. Its other folders are found from its name; a
    /// v1 one that is gone is left out (what it enforced is no longer enforced).
    pub fn open(&self, path: &Path) -> Option<Cgroup> {
        let name = path.file_name()?;
        if path.parent() != Some(self.parent()) || !path.is_dir() {
            return None;
        }
        let kept: Vec<usize> = (0..self.parents.len())
            .filter(|&i| self.parents[i].join(name).is_dir())
            .collect();
        let moved = |at: Option<usize>| at.and_then(|i| kept.iter().position(|&k| k == i));
        Some(Cgroup {
            dirs: kept.iter().map(|&i| self.parents[i].join(name)).collect(),
            layout: Layout {
                v1: self.layout.v1,
                cpu: moved(self.layout.cpu),
                memory: moved(self.layout.memory),
                pids: moved(self.layout.pids),
                freezer: moved(self.layout.freezer),
            },
        })
    }
}

impl Cgroup {
    /// Its primary folder: the one to store, and to give [`Cgroups::open`].
    pub fn path(&self) -> &Path {
        &self.dirs[0]
    }

    /// Writes the limits this cgroup's layout enforces.
    fn limit(&self, limits: &Limits) -> io::Result<()> {
        let v1 = self.layout.v1;
        if let (Some(at), Some(cpus)) = (self.layout.cpu, limits.cpus) {
            let dir = &self.dirs[at];
            let quota = u64::from(cpus) * CPU_PERIOD_US;
            if v1 {
                write(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
            } else {
                write(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
            }
        }
        if let (Some(at), Some(mb)) = (self.layout.memory, limits.memory_mb) {
            let dir = &self.dirs[at];
            let bytes = mb.saturating_mul(1024 * 1024).to_string();
            // Without the swap limit the memory one could be dodged into swap; not every
            // kernel has it (v1: only with swap accounting on), so its failure is ignored.
            if v1 {
                write(&dir.join("memory.limit_in_bytes"), &bytes)?;
                let memsw = dir.join("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    let _ = write(&memsw, &bytes);
                }
            } else {
                write(&dir.join("memory.max"), &bytes)?;
                let _ = write(&dir.join("memory.swap.max"), "0");
            }
        }
        if let (Some(at), Some(pids)) = (self.layout.pids, limits.pids) {
            let pids = if pids >= PID_MAX_LIMIT {
                "max".to_owned()
            } else {
                pids.to_string()
            };
            write(&self.dirs[at].join("pids.max"), &pids)?;
        }
        Ok(())
    }

    /// The processes in it now (on v1, in any of its hierarchies).
    pub fn procs(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self
            .dirs
            .iter()
            .flat_map(|dir| {
                std::fs::read_to_string(dir.join("cgroup.procs"))
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// The files a process writes itself (`0`) into to join it ([`Join`]): on
    /// v1, `tasks`, one per hierarchy; on v2, `cgroup.procs`.
    ///
    /// Why `tasks` on v1: a write to `cgroup.procs` moves a whole thread group and takes
    /// the kernel's global `cgroup_threadgroup_rwsem` for writing, which waits for an RCU
    /// grace period whenever no other move happened lately: 7 to 38 ms measured here for
    /// the first join after a quiet moment, paid by a sandbox's create and by any command
    /// after a pause in the work. A write of `0` to `tasks` moves the writing thread alone,
    /// which the kernel does without that lock; a child between fork and exec has one
    /// thread, so it is the same move (3.5 ms with the shell that made it, against 19 to 38).
    pub fn join_files(&self) -> Vec<PathBuf> {
        let file = if self.layout.v1 {
            "tasks"
        } else {
            "cgroup.procs"
        };
        self.dirs.iter().map(|dir| dir.join(file)).collect()
    }

    /// Freezes (`true`) or thaws every process in it; waits for the kernel to say so. An
    /// error where there is no freezer (the caller falls back to signals).
    pub fn freeze(&self, frozen: bool) -> io::Result<()> {
        let Some(at) = self.layout.freezer else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no freezer for this cgroup",
            ));
        };
        if self.layout.v1 {
            v1::freeze(&self.dirs[at], frozen)
        } else {
            v2::freeze(&self.dirs[at], frozen)
        }
    }

    /// Kills every process in it until it is empty: v2's `cgroup.kill`; else (v1, old
    /// kernels) KILL to each, frozen meanwhile where a freezer allows so that nothing
    /// forks between the listing and the kills, and thawed after, since a frozen process
    /// dies only once thawed.
    pub fn kill(&self) -> io::Result<()> {
        let deadline = Instant::now() + SETTLE;
        loop {
            if self.procs().is_empty() {
                return Ok(());
            }
            let killed = !self.layout.v1 && write(&self.dirs[0].join("cgroup.kill"), "1").is_ok();
            if !killed {
                let _ = self.freeze(true);
                for pid in self.procs() {
                    crate::services::proc_scan::signal(pid, nix::sys::signal::Signal::SIGKILL);
                }
                let _ = self.freeze(false);
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "{} still holds processes",
                    self.path().display()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Removes it (it must be empty): every folder that is there; the first failure is
    /// returned after all were tried.
    pub fn remove(&self) -> io::Result<()> {
        let mut failed = Ok(());
        for dir in &self.dirs {
            match std::fs::remove_dir(dir) {
                Err(e) if e.kind() != io::ErrorKind::NotFound && failed.is_ok() => failed = Err(e),
                _ => {}
            }
        }
        failed
    }
}

/// A move of the child itself into every cgroup whose join file is given (writing `0` names
/// the writer), made ready before the spawn and taken as the first of the child's steps
/// ([`before_exec`](crate::services::before_exec)): nothing the program starts is ever
/// outside, and a cgroup the child cannot join fails the spawn instead of running the
/// program outside.
#[derive(Debug, Clone)]
pub struct Join(Result<Vec<CString>, ()>);

impl Join {
    /// `None` when there is nothing to join.
    pub fn new(files: &[PathBuf]) -> Option<Join> {
        use std::os::unix::ffi::OsStrExt;
        if files.is_empty() {
            return None;
        }
        let files = files
            .iter()
            .map(|f| CString::new(f.as_os_str().as_bytes()).map_err(|_| ()))
            .collect();
        Some(Join(files))
    }

    /// In the child: writes `0` to every file. System calls only.
    pub(crate) fn run(&self) -> io::Result<()> {
        match &self.0 {
            Ok(files) => join_self(files),
            Err(()) => Err(nix::errno::Errno::EINVAL.into()),
        }
    }
}

fn join_self(files: &[CString]) -> io::Result<()> {
    use nix::fcntl::{OFlag, open};
    use nix::sys::stat::Mode;
    for file in files {
        let fd = open(
            file.as_c_str(),
            OFlag::O_WRONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        nix::unistd::write(&fd, b"0")?;
    }
    Ok(())
}
