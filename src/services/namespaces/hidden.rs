//! Files a child must not read, hidden from it in namespaces of its own: for a server that
//! is not root, whose children run as its own user and could read whatever it reads (its
//! config file with identity tokens). Root has a better answer (`process.run_as`: another
//! user); an ordinary user has only this one.
//!
//! Once, at start, util-linux's `unshare` makes a user namespace (the server's ids are root
//! there, the only ids an unprivileged map may name) and a mount namespace, binds
//! `/dev/null` over each hidden file, then makes a second user namespace that maps the
//! server's ids back to themselves and a mount namespace, and waits; the server keeps descriptors of that
//! second pair and lets the helper go. The second pair is what holds: mounts that reach a
//! namespace owned by a less privileged user namespace are locked by the kernel, so a child
//! there (which could make namespaces of its own and hold every capability over them) can
//! neither unmount the cover nor bind-mount what lies under it.
//!
//! Every child then joins the pair between fork and exec (`setns`, as `nsenter` does: the
//! same user may join a user namespace it owns) and goes back to its working directory. The
//! child does not write its own id maps: the server is not dumpable, nor is a child before
//! its `exec`, and making it dumpable would open a copy of the server's memory to its user
//! for that moment. Its ids, pid and files are otherwise the same; what it notices: files of
//! other users (root's `/usr`) show as `nobody`, and set-uid programs (`sudo`) do not raise
//! privilege.

use nix::sched::CloneFlags;
use std::ffi::{CStr, CString};
use std::io::{BufRead, BufReader, Read};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The hiding every child joins, once [`install`]ed.
static HIDDEN: OnceLock<&'static Hidden> = OnceLock::new();

/// The namespaces every child joins, and what they hide.
#[derive(Debug)]
pub struct Hidden {
    user: OwnedFd,
    mount: OwnedFd,
}

/// Run by `unshare` in the first pair, as root there (util-linux's `mount` refuses anyone
/// else): cover each file named after the server's uid and gid, make the second pair with
/// the server's ids mapped back to themselves (which locks the covers), say so and wait for
/// stdin's end.
const MAKE: &str = r#"uid=$1 gid=$2; shift 2
for file; do mount --bind /dev/null "$file" || exit 1; done
exec unshare --map-user="$uid" --map-group="$gid" --mount --propagation unchanged -- sh -c 'echo ready; exec cat >/dev/null'"#;

/// Makes the namespaces that hide `files` (kept for the life of the process: every child's
/// spawn reads them after its fork); answers why not (no `unshare`, unprivileged user
/// namespaces turned off, a file that cannot be named). Children join them once
/// [`install`]ed: try one first (`before_exec::trial`).
pub fn make(files: &[&Path]) -> Result<&'static Hidden, String> {
    Ok(Box::leak(Box::new(Hidden::make(files)?)))
}

/// Every later child that asks ([`for_children`]) joins `hidden`.
pub fn install(hidden: &'static Hidden) {
    let _ = HIDDEN.set(hidden);
}

/// The hiding every child takes, when one was installed.
pub fn for_children() -> Option<&'static Hidden> {
    HIDDEN.get().copied()
}

impl Hidden {
    fn make(files: &[&Path]) -> Result<Hidden, String> {
        let mut real = Vec::new();
        for file in files {
            // The cover lands on what the path names now: a link is followed here, once.
            real.push(
                std::fs::canonicalize(file)
                    .map_err(|e| format!("{} cannot be resolved ({e})", file.display()))?,
            );
        }
        let mut helper = Command::new("unshare")
            .args(["--map-root-user", "--mount", "--", "sh", "-c", MAKE, "sh"])
            .arg(nix::unistd::geteuid().to_string())
            .arg(nix::unistd::getegid().to_string())
            .args(&real)
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("util-linux `unshare` cannot be run ({e})"))?;
        let mut said = String::new();
        let _ = BufReader::new(helper.stdout.as_mut().expect("piped")).read_line(&mut said);
        let namespaces = if said.trim() == "ready" {
            let ns = |kind: &str| {
                std::fs::File::open(format!("/proc/{}/ns/{kind}", helper.id()))
                    .map(OwnedFd::from)
                    .map_err(|e| format!("the helper's {kind} namespace cannot be opened ({e})"))
            };
            ns("user").and_then(|user| Ok((user, ns("mnt")?)))
        } else {
            let mut why = String::new();
            let _ = helper
                .stderr
                .as_mut()
                .expect("piped")
                .read_to_string(&mut why);
            Err(format!(
                "this machine refuses the namespaces ({})",
                why.trim().lines().last().unwrap_or("the helper ended")
            ))
        };
        drop(helper.stdin.take());
        let _ = helper.kill();
        let _ = helper.wait();
        let (user, mount) = namespaces?;
        Ok(Hidden { user, mount })
    }

    /// In the child, between fork and exec: joins the pair, then goes back to `cwd` (a
    /// mount namespace is joined at its root). System calls only.
    pub(crate) fn enter(&self, cwd: &CStr) -> std::io::Result<()> {
        nix::sched::setns(&self.user, CloneFlags::CLONE_NEWUSER)?;
        nix::sched::setns(&self.mount, CloneFlags::CLONE_NEWNS)?;
        nix::unistd::chdir(cwd)?;
        Ok(())
    }
}

/// The working directory a child goes back to after [`Hidden::enter`]: its own, else the
/// server's (which it would have inherited), else `/` (a directory that cannot be named
/// fails the spawn anyway). Made before the fork.
pub fn cwd_for_child(cwd: Option<&Path>) -> CString {
    use std::os::unix::ffi::OsStrExt;
    let path = match cwd {
        Some(path) => std::path::absolute(path).ok(),
        None => std::env::current_dir().ok(),
    };
    path.and_then(|p| CString::new(p.as_os_str().as_bytes()).ok())
        .unwrap_or_else(|| c"/".to_owned())
}
