//! Machines of their own for untrusted processes: one set of Linux namespaces (user, pid,
//! mount, ipc, uts, and network on request) made by bubblewrap (`bwrap`), kept alive by a
//! small init, and entered by every process started in it with util-linux's `nsenter`.
//!
//! Why this shape:
//! - **bubblewrap makes the set** because it is the field's own tool for unprivileged
//!   sandboxes (Flatpak's, and what Claude Code uses on Linux): the mounts, `/proc`, `/dev`
//!   and the pivot into a new root are its well-reviewed code, not ours.
//! - **One set per machine, for its whole life**: bwrap's pid 1 reaps whatever is left in
//!   the background, so a process one command leaves is seen by the next (`ps`), and
//!   killing that pid 1 makes the kernel kill everything in the namespace: nothing can
//!   survive the end by double-forking or `setsid`, as it can with process groups.
//! - **`nsenter` joins it** (`setns` to the set of the init, then a fork into the pid
//!   namespace): every command, terminal and interpreter is then a child of the engine as
//!   before (pipes, exit status, process group, signals), just inside.
//! - **Who is who** ([`Ids`]): inside, `root` (uid 0) and `user` (uid 1000). When the engine
//!   runs as root they are the unprivileged host ids [`ROOT_HOST_ID`] and [`USER_HOST_ID`]
//!   (the engine writes the two-line uid map itself; bwrap runs as [`ROOT_HOST_ID`]), so
//!   no process of a sandbox is ever host root: it owns none of the host's files it can
//!   see (`/usr`, the devices), and its capabilities hold only over its own namespaces.
//!   When the engine runs as an ordinary user, the only id it may map is its own: `user`
//!   is the engine's uid and there is no `root` inside.
//!
//! What a machine sees is built by [`launch`]: its own folders at `/home/user` and `/tmp`,
//! the system read-only, an `/etc` of its own ([`etc`]), its own `/proc` and a minimal
//! `/dev`; [`View`] maps the paths a caller names to the host folders behind them.

pub mod entry;
pub mod etc;
pub mod hidden;
pub mod launch;
mod view;

#[cfg(test)]
mod tests;

pub use entry::Entry;
pub use launch::{Network, Plan, start};
pub use view::{View, ViewError};

use crate::services::proc_scan::ns_inode;
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The home of the sandbox's user: the default working directory and `HOME`.
pub const HOME: &str = "/home/user";
/// The sandbox's own temp folder.
pub const TMP: &str = "/tmp";
/// The processes a machine itself runs in its sandbox's cgroup (bwrap's outer process, its
/// pid 1 and the keeper): born there with the machine, and added to the cgroup's process
/// limit so that a sandbox's `max_processes` counts its own processes only.
pub const OWN_PROCESSES: u32 = 3;
/// The default user's name and ids inside.
pub const USER: &str = "user";
pub const USER_ID: u32 = 1000;
/// The host ids the sandbox's `root` and `user` are when the engine runs as root: a range
/// no account of a usual machine holds (as Docker's `userns-remap` uses).
pub const ROOT_HOST_ID: u32 = 100_000;
pub const USER_HOST_ID: u32 = 101_000;

/// Who a process of a machine runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Identity {
    Root,
    User,
}

impl Identity {
    /// The id inside.
    pub fn id(self) -> u32 {
        match self {
            Identity::Root => 0,
            Identity::User => USER_ID,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Identity::Root => "root",
            Identity::User => USER,
        }
    }

    /// `"root"` or `"user"`; anything else is no identity of a machine.
    pub fn parse(name: &str) -> Option<Identity> {
        match name {
            "root" => Some(Identity::Root),
            USER => Some(Identity::User),
            _ => None,
        }
    }
}

/// The host ids behind the identities of a machine (uid and gid alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    /// `None`: the engine is not root and may map no second id, so there is no root inside.
    pub root: Option<u32>,
    pub user: u32,
}

impl Ids {
    /// The ids for an engine running as `uid`.
    pub fn for_engine(uid: u32) -> Ids {
        if uid == 0 {
            Ids {
                root: Some(ROOT_HOST_ID),
                user: USER_HOST_ID,
            }
        } else {
            Ids {
                root: None,
                user: uid,
            }
        }
    }

    /// The host id of `who`, if the machine has it.
    pub fn host(self, who: Identity) -> Option<u32> {
        match who {
            Identity::Root => self.root,
            Identity::User => Some(self.user),
        }
    }

    /// The name the machine's `/etc/passwd` gives the owner whose host uid is `uid`: `root`,
    /// `user`, or `nobody` for an id the machine does not map (the kernel shows it as the
    /// overflow id 65534, which is `nobody` there).
    pub fn user_name(self, uid: u32) -> &'static str {
        self.inside(uid, self.user).map_or("nobody", Identity::name)
    }

    /// The name the machine's `/etc/group` gives the host gid `gid` (`nogroup` unmapped).
    /// `engine_gid` is the engine's own gid, which an ordinary engine's machine maps to
    /// `user` (bwrap `--gid 1000`); a root engine maps the same ids for groups as for users.
    pub fn group_name(self, gid: u32, engine_gid: u32) -> &'static str {
        let user = if self.root.is_some() {
            self.user
        } else {
            engine_gid
        };
        self.inside(gid, user).map_or("nogroup", Identity::name)
    }

    fn inside(self, id: u32, user: u32) -> Option<Identity> {
        if Some(id) == self.root {
            Some(Identity::Root)
        } else if id == user {
            Some(Identity::User)
        } else {
            None
        }
    }
}

/// The programs machines are made and entered with, found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tools {
    pub bwrap: PathBuf,
    /// Enters a machine for an engine that may not enter it directly ([`Entry`]).
    pub nsenter: PathBuf,
    pub ids: Ids,
    /// This engine enters machines itself ([`Entry`]) rather than through `nsenter`: found
    /// by a trial on the probe machine ([`support`]).
    pub direct_entry: bool,
}

/// Whether this machine can make machines.
#[derive(Debug, Clone)]
pub enum Support {
    Available(Arc<Tools>),
    /// Why not, and how to fix it.
    Unavailable(String),
}

impl Support {
    pub fn tools(&self) -> Option<&Arc<Tools>> {
        match self {
            Support::Available(tools) => Some(tools),
            Support::Unavailable(_) => None,
        }
    }
}

/// The tools on `PATH` (the engine's), or what is missing.
pub fn find_tools() -> Result<Tools, String> {
    let path = std::env::var("PATH").unwrap_or_default();
    let find = |name: &str| {
        crate::services::search_path::resolve(name, &path, Path::new("/")).ok_or_else(|| {
            format!(
                "`{name}` is not installed (on Debian: `apt-get install {}`)",
                package_of(name)
            )
        })
    };
    let uid = std::os::unix::fs::MetadataExt::uid(
        &std::fs::metadata("/proc/self").map_err(|e| format!("cannot read /proc/self: {e}"))?,
    );
    let ids = Ids::for_engine(uid);
    Ok(Tools {
        bwrap: find("bwrap")?,
        nsenter: find("nsenter")?,
        ids,
        direct_entry: false,
    })
}

fn package_of(program: &str) -> &'static str {
    match program {
        "bwrap" => "bubblewrap",
        _ => "util-linux",
    }
}

/// Where a root engine keeps its machines' folders (`home`, `tmp`, `etc`): bwrap runs as
/// [`ROOT_HOST_ID`] and reaches its bind sources by path, so they must lie on a path that
/// id may traverse, which the engine's state folder (0700, often under `/root`) is not.
/// `/run/svc-machines` (0711; `/run` is root's alone, so nobody can plant a link there),
/// made once; each machine's folder in it is 0710 with group [`ROOT_HOST_ID`], so other
/// users of the host cannot enter it.
pub const MACHINES_ROOT: &str = "/run/svc-machines";

/// [`MACHINES_ROOT`], made and checked (a directory of root's, not a link).
pub fn machines_root() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let root = PathBuf::from(MACHINES_ROOT);
    match std::fs::create_dir(&root) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&root)?;
    if !meta.is_dir() || meta.uid() != 0 {
        return Err(std::io::Error::other(format!(
            "{MACHINES_ROOT} is not a directory of root's"
        )));
    }
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o711))?;
    Ok(root)
}

/// Makes `dir` (in [`machines_root`]) enterable by bwrap and nobody else.
pub fn machine_folder(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(dir)?;
    std::os::unix::fs::chown(dir, None, Some(ROOT_HOST_ID))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o710))
}

/// How process `host` (a host pid) is numbered in its own pid namespace: its pid and its
/// process group there (the group is 0 when its leader is outside the namespace). `None`
/// when it is gone or has no namespace below the host's.
pub fn inner_ids(host: u32) -> Option<(u32, u32)> {
    let status = std::fs::read_to_string(format!("/proc/{host}/status")).ok()?;
    // `NSpid: 4702 12`: the host's number first, the innermost namespace's last.
    let innermost = |key: &str| -> Option<u32> {
        let line = status.lines().find_map(|l| l.strip_prefix(key))?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 2 {
            return None;
        }
        fields.last()?.parse().ok()
    };
    Some((innermost("NSpid:")?, innermost("NSpgid:")?))
}

/// The host pids of the children of process `host` (`/proc/PID/task/PID/children`).
pub fn children(host: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{host}/task/{host}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// One running machine: its init (pid 1 inside, by its host pid and start time) and its
/// pid namespace. The namespace's number alone names nothing for long: the kernel gives a
/// dead namespace's number to the next one made, often at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// The host pid of the machine's pid 1.
    pub pid: u32,
    /// The host pid of what keeps pid 1 running (`sleep infinity`): with pid 1, not a
    /// process of the machine's users.
    pub keeper: u32,
    /// The inode of its pid namespace.
    pub pidns: u64,
    /// It has a network namespace of its own (loopback only).
    pub own_network: bool,
    /// Its init's start time (`ProcStat::started`); 0 in records of engines before it was
    /// kept, which are then known by pid and namespace only.
    #[serde(default)]
    pub started: u64,
}

impl Machine {
    /// Its init still runs: the same process (pid and start time) in the same namespace.
    pub fn alive(&self) -> bool {
        crate::services::proc_scan::stat(self.pid)
            .is_some_and(|s| !s.is_dead() && (self.started == 0 || s.started == self.started))
            && ns_inode(self.pid, "pid") == Some(self.pidns)
    }

    /// A pidfd of its init (readable once the init has exited), opened while the init is
    /// still this machine's; `None` when it already ended or the kernel gives no pidfds.
    pub fn exit_fd(&self) -> Option<std::os::fd::OwnedFd> {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.pid).ok()?)?;
        let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()?;
        // Opened before this check, so the descriptor names the process it vouches for.
        self.alive().then_some(fd)
    }

    /// Runs `look` with the machine's pid namespace while its init runs, else with `None`.
    /// Its init is asked again afterwards: had it ended meanwhile, the number may already be
    /// another machine's, and `look` runs once more without it.
    pub fn while_alive<T>(&self, look: impl Fn(Option<u64>) -> T) -> T {
        if !self.alive() {
            return look(None);
        }
        let seen = look(Some(self.pidns));
        if self.alive() { seen } else { look(None) }
    }

    /// Pid 1 or its keeper: the machine itself, never listed, signalled or paused.
    pub fn is_init(&self, pid: u32) -> bool {
        pid == self.pid || pid == self.keeper
    }

    /// Every process inside, by host pid (the init included); none once its init ended.
    pub fn members(&self) -> Vec<u32> {
        self.while_alive(|pidns| {
            let Some(pidns) = pidns else {
                return Vec::new();
            };
            crate::services::proc_scan::pids()
                .into_iter()
                .filter(|pid| ns_inode(*pid, "pid") == Some(pidns))
                .collect()
        })
    }

    /// Ends it: KILL to its pid 1, after which the kernel kills every process inside.
    pub fn end(&self) {
        if self.alive() {
            crate::services::proc_scan::signal(self.pid, Signal::SIGKILL);
        }
    }

    /// The machine's root as the engine reaches it.
    pub fn root(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.pid))
    }

    /// `program args` made to run inside as `who`, in the working directory `wd` (a path
    /// of the machine): `nsenter` joins the set and forks into the pid namespace, and the
    /// program replaces the child. (An identity the machine lacks, [`Ids::host`] `None`,
    /// fails in `nsenter`: check it first to say so.)
    pub fn enter(
        &self,
        tools: &Tools,
        who: Identity,
        wd: &str,
        program: String,
        args: Vec<String>,
    ) -> (String, Vec<String>) {
        let id = who.id().to_string();
        let mut all = vec![
            format!("--target={}", self.pid),
            "--user".to_owned(),
            "--mount".to_owned(),
            "--pid".to_owned(),
            "--ipc".to_owned(),
            "--uts".to_owned(),
        ];
        if self.own_network {
            all.push("--net".to_owned());
        }
        all.extend([
            format!("--setuid={id}"),
            format!("--setgid={id}"),
            format!("--wdns={wd}"),
            "--".to_owned(),
            program,
        ]);
        all.extend(args);
        (tools.nsenter.display().to_string(), all)
    }
}

/// Whether this machine can make machines: the tools are there and a probe machine was
/// made and ended (user namespaces may be off, or refused by a security module). Found
/// out once per process.
pub async fn support() -> &'static Support {
    static SUPPORT: tokio::sync::OnceCell<Support> = tokio::sync::OnceCell::const_new();
    SUPPORT.get_or_init(probe).await
}

async fn probe() -> Support {
    let tools = match find_tools() {
        Ok(tools) => tools,
        Err(why) => return Support::Unavailable(why),
    };
    let scratch =
        std::env::temp_dir().join(format!("svc-ns-probe-{}", uuid::Uuid::new_v4().simple()));
    let (home, tmp, etc) = (
        scratch.join("home"),
        scratch.join("tmp"),
        scratch.join("etc"),
    );
    let supported = probe_in(tools, &home, &tmp, &etc).await;
    let _ = std::fs::remove_dir_all(&scratch);
    supported
}

async fn probe_in(tools: Tools, home: &Path, tmp: &Path, etc: &Path) -> Support {
    for dir in [home, tmp] {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return Support::Unavailable(format!("no folder to try a sandbox in: {e}"));
        }
    }
    let plan = Plan {
        hostname: "probe",
        home,
        tmp,
        etc,
        network: Network::Host,
        join_cgroup: &[],
    };
    match start(&tools, &plan).await {
        Ok(machine) => {
            let direct_entry = tokio::task::spawn_blocking({
                let machine = machine.clone();
                move || entry::trial(&machine)
            })
            .await
            .unwrap_or(false);
            machine.end();
            Support::Available(Arc::new(Tools {
                direct_entry,
                ..tools
            }))
        }
        Err(e) => Support::Unavailable(format!(
            "{e}; sandboxes need user namespaces (on Debian `sysctl kernel.unprivileged_userns_clone=1`; \
             under AppArmor a profile allowing `userns` for bwrap)"
        )),
    }
}
