//! Starting a machine: bwrap builds the namespaces and the view, its pid 1 stays as the
//! machine's init (it reaps what is orphaned inside), and `sleep infinity` keeps it
//! running until the machine is ended.
//!
//! The view: `/usr` and the host's `/bin`, `/sbin`, `/lib*` (links where the host has
//! links) and `/opt` read-only; the machine's own folders at `/home/user` and `/tmp`;
//! `/etc` with the generated account files and [`etc::FROM_HOST`]; a new `/proc` and
//! bwrap's minimal `/dev` (null, zero, full, random, urandom, tty, ptmx, pts, shm); the
//! root itself read-only. Nothing else of the host exists inside.
//!
//! The engine's folders may be closed to other users (its state folder is 0700), and a
//! root engine runs bwrap as [`ROOT_HOST_ID`](super::ROOT_HOST_ID): so the engine opens the
//! folders and files and hands bwrap descriptors (`--bind-fd`, `--ro-bind-data`, named by
//! their numbers). Between fork and exec ([`before_exec`]) the child joins the cgroup,
//! keeps those descriptors open across the exec, and (a root engine's) becomes
//! `ROOT_HOST_ID`: bwrap is the engine's direct child, with no shell or `setpriv` before it
//! (each was an exec on every create).
//!
//! [`before_exec`]: crate::services::before_exec

use super::{HOME, Machine, TMP, Tools, USER_ID, etc};
use crate::services::before_exec;
use crate::services::cgroup::Join;
use crate::services::proc_scan::ns_inode;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a machine may take to be ready.
const READY_WAIT: Duration = Duration::from_secs(10);
/// How often readiness is looked at: on a thread of its own, since a tokio timer sleeps at
/// least a millisecond (and measured 1 to 2 per look).
const TICK: Duration = Duration::from_micros(200);
/// Host folders seen at the same place inside, read-only (links stay links): a program
/// in one of them is the host's.
pub const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
];

/// The network a machine has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// The host's: a server inside is reached on the host's loopback.
    Host,
    /// Its own namespace with only a loopback.
    Loopback,
}

/// What to make.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    /// The machine's host name (a sandbox's id).
    pub hostname: &'a str,
    /// The host folders behind `/home/user` and `/tmp`.
    pub home: &'a Path,
    pub tmp: &'a Path,
    /// A folder of the engine's where the generated `/etc` files are written (never seen
    /// inside as a folder).
    pub etc: &'a Path,
    pub network: Network,
    /// The cgroup the machine is born in ([`Cgroup::join_files`]; none: no cgroup): its
    /// launcher joins it between fork and exec, so the init and everything it reaps is
    /// counted there from the start, without moving a running process (which costs the
    /// kernel a grace period).
    ///
    /// [`Cgroup::join_files`]: crate::services::cgroup::Cgroup::join_files
    pub join_cgroup: &'a [std::path::PathBuf],
}

/// What bwrap is handed by descriptor, opened by the engine (close-on-exec until the
/// child keeps them).
struct Handed {
    home: Arc<OwnedFd>,
    tmp: Arc<OwnedFd>,
    /// `/etc/passwd`, `group`, `hostname` and `hosts`, in [`ETC_FILES`]'s order.
    etc: Vec<Arc<OwnedFd>>,
}

/// The generated `/etc` files handed to bwrap.
const ETC_FILES: [&str; 4] = ["passwd", "group", "hostname", "hosts"];

impl Handed {
    fn open(plan: &Plan<'_>) -> io::Result<Handed> {
        let open = |path: &Path| -> io::Result<Arc<OwnedFd>> {
            Ok(Arc::new(std::fs::File::open(path)?.into()))
        };
        Ok(Handed {
            home: open(plan.home)?,
            tmp: open(plan.tmp)?,
            etc: ETC_FILES
                .iter()
                .map(|name| open(&plan.etc.join(name)))
                .collect::<io::Result<_>>()?,
        })
    }

    fn all(&self) -> Vec<Arc<OwnedFd>> {
        [self.home.clone(), self.tmp.clone()]
            .into_iter()
            .chain(self.etc.iter().cloned())
            .collect()
    }
}

/// A descriptor's number, as bwrap's arguments name it.
fn number(fd: &Arc<OwnedFd>) -> String {
    fd.as_raw_fd().to_string()
}

/// Makes the machine of `plan` and answers once its view is complete.
pub async fn start(tools: &Tools, plan: &Plan<'_>) -> io::Result<Machine> {
    prepare(tools, plan)?;
    let handed = Handed::open(plan)?;
    let mut command = tokio::process::Command::new(&tools.bwrap);
    command
        .args(program(tools, plan, &handed))
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: a signal to the engine's group (a terminal's Ctrl-C) is not one
        // to the machines, which outlive the engine.
        .process_group(0)
        .kill_on_drop(false);
    let steps = before_exec::Steps {
        join_cgroup: Join::new(plan.join_cgroup),
        keep: handed.all(),
        become_id: tools.ids.root,
        ..before_exec::Steps::default()
    };
    before_exec::apply_std(command.as_std_mut(), steps);
    let mut child = command.spawn()?;
    // bwrap has its copies now.
    drop(handed);
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    let mut stderr = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("no stderr"))?;
    let mut stdin = child.stdin.take();
    let started = async {
        let pid = child_pid(&mut stdout).await?;
        if let Some(root) = tools.ids.root {
            // The user namespace waits (`--userns-block-fd 0`) until its ids are mapped:
            // root inside is ROOT_HOST_ID (bwrap's own id), the user USER_HOST_ID.
            let map = format!("0 {root} 1\n{USER_ID} {} 1\n", tools.ids.user);
            std::fs::write(format!("/proc/{pid}/uid_map"), &map)?;
            std::fs::write(format!("/proc/{pid}/gid_map"), &map)?;
            if let Some(mut stdin) = stdin.take() {
                stdin.write_all(b"1").await?;
            }
        }
        let deadline = std::time::Instant::now() + READY_WAIT;
        let keeper = tokio::task::spawn_blocking(move || ready(pid, deadline))
            .await
            .map_err(io::Error::other)??;
        let pidns = ns_inode(pid, "pid")
            .ok_or_else(|| io::Error::other("the machine's init has no pid namespace"))?;
        let started = crate::services::proc_scan::stat(pid)
            .ok_or_else(|| io::Error::other("the machine's init ended at its start"))?
            .started;
        io::Result::Ok(Machine {
            pid,
            keeper,
            pidns,
            own_network: plan.network == Network::Loopback,
            started,
        })
    };
    let started = tokio::time::timeout(READY_WAIT, started).await;
    match started {
        Ok(Ok(machine)) => {
            drop(stdin);
            // bwrap's outer process waits for the machine's init; reaped here while this
            // engine runs (an engine restart leaves it to the system's init).
            tokio::spawn(async move {
                let mut said = String::new();
                let _ = stderr.read_to_string(&mut said).await;
                let status = child.wait().await;
                tracing::debug!(?status, said = %said.trim(), "a machine's bwrap ended");
            });
            Ok(machine)
        }
        failed => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            let mut said = String::new();
            let _ = tokio::time::timeout(Duration::from_secs(1), stderr.read_to_string(&mut said))
                .await;
            let why = match failed {
                Ok(Err(e)) => e.to_string(),
                _ => format!("not ready within {} s", READY_WAIT.as_secs()),
            };
            Err(io::Error::other(format!(
                "bubblewrap could not make the sandbox's namespaces: {why}{}",
                if said.trim().is_empty() {
                    String::new()
                } else {
                    format!(" ({})", said.trim())
                }
            )))
        }
    }
}

/// The generated `/etc` files, and the folders owned so that the machine's user may write
/// its home and anyone its `/tmp` (sticky, as on any machine).
fn prepare(tools: &Tools, plan: &Plan<'_>) -> io::Result<()> {
    std::fs::create_dir_all(plan.etc)?;
    for (name, content) in etc::generated(plan.hostname) {
        std::fs::write(plan.etc.join(name), content)?;
    }
    if tools.ids.root.is_some() {
        let user = Some(tools.ids.user);
        std::os::unix::fs::chown(plan.home, user, user)?;
    }
    std::fs::set_permissions(plan.tmp, std::fs::Permissions::from_mode(0o1777))?;
    Ok(())
}

/// bwrap's arguments (it runs as ROOT_HOST_ID for a root engine), naming the descriptors
/// of `handed`.
fn program(tools: &Tools, plan: &Plan<'_>, handed: &Handed) -> Vec<String> {
    let mut args = Vec::new();
    let mut add = |items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
    add(&["--unshare-user"]);
    if tools.ids.root.is_some() {
        add(&["--userns-block-fd", "0"]);
    } else {
        let id = USER_ID.to_string();
        add(&["--uid", &id, "--gid", &id]);
    }
    add(&[
        "--info-fd",
        "1",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]);
    if plan.network == Network::Loopback {
        add(&["--unshare-net"]);
    }
    add(&["--hostname", plan.hostname]);
    for dir in SYSTEM {
        match std::fs::read_link(dir) {
            Ok(target) => add(&["--symlink", &target.display().to_string(), dir]),
            Err(_) if Path::new(dir).is_dir() => add(&["--ro-bind", dir, dir]),
            Err(_) => {}
        }
    }
    let (home, tmp) = (number(&handed.home), number(&handed.tmp));
    add(&[
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        // Made before its mount point is: bwrap would make it with the engine's umask.
        "--perms",
        "0755",
        "--dir",
        "/home",
        "--bind-fd",
        &home,
        HOME,
        "--bind-fd",
        &tmp,
        TMP,
    ]);
    for (name, fd) in ETC_FILES.iter().zip(&handed.etc) {
        let inside = format!("/etc/{name}");
        add(&["--perms", "0644", "--ro-bind-data", &number(fd), &inside]);
    }
    for item in etc::FROM_HOST {
        add(&["--ro-bind-try", item, item]);
    }
    add(&[
        "--remount-ro",
        "/",
        "--chdir",
        HOME,
        "--new-session",
        "--",
        "sleep",
        "infinity",
    ]);
    args
}

/// The host pid of the machine's pid 1, from bwrap's `--info-fd` JSON.
async fn child_pid(stdout: &mut tokio::process::ChildStdout) -> io::Result<u32> {
    #[derive(serde::Deserialize)]
    struct Info {
        #[serde(rename = "child-pid")]
        child_pid: u32,
    }
    let mut text = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = stdout.read(&mut buf).await?;
        if n == 0 {
            return Err(io::Error::other(
                "bwrap ended before it said its child's pid",
            ));
        }
        text.extend_from_slice(&buf[..n]);
        if let Ok(info) = serde_json::from_slice::<Info>(&text) {
            return Ok(info.child_pid);
        }
    }
}

/// Waits until pid 1 has forked the init's command, which bwrap does once every mount is
/// in place; answers that command's host pid. An error once `deadline` passes or the init
/// ends.
fn ready(pid: u32, deadline: std::time::Instant) -> io::Result<u32> {
    let children = format!("/proc/{pid}/task/{pid}/children");
    loop {
        match std::fs::read_to_string(&children) {
            Ok(text) if !text.trim().is_empty() => {
                return text
                    .split_whitespace()
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| io::Error::other(format!("{children} reads `{text}`")));
            }
            Ok(_) if std::time::Instant::now() >= deadline => {
                return Err(io::Error::other(
                    "the machine's init did not start its command",
                ));
            }
            Ok(_) => std::thread::sleep(TICK),
            Err(e) => return Err(io::Error::other(format!("the machine's init ended: {e}"))),
        }
    }
}
