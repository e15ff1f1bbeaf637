//! The cgroup v1 backend: each controller is a hierarchy of its own, so a sandbox's
//! cgroup is one folder in each usable hierarchy among `pids`, `memory`, `cpu` and
//! `freezer` (in that order; the first usable one holds the primary folder).

use super::{Cgroups, Layout, SUBTREE, Support, settle, write};
use std::io;
use std::path::{Path, PathBuf};

/// The controllers used, each with the file that shows it works in a folder below the
/// hierarchy's root (`cpu.cfs_quota_us` is missing without CFS bandwidth control).
const CONTROLLERS: [(&str, &str); 4] = [
    ("pids", "pids.max"),
    ("memory", "memory.limit_in_bytes"),
    ("cpu", "cpu.cfs_quota_us"),
    ("freezer", "freezer.state"),
];

/// The v1 support for a process whose `/proc/self/mountinfo` reads `mountinfo` and whose
/// `/proc/self/cgroup` reads `self_cgroup`. A controller is usable where its
/// `svc-sandboxes` folder can be made and processes moved in; the others are left out
/// (their limits are not enforced), and none usable is a reason.
pub fn detect_v1_in(mountinfo: &str, self_cgroup: &str) -> Support {
    let mounts = mounts(mountinfo);
    if mounts.is_empty() {
        return Support::Unavailable("no cgroup v1 hierarchy is mounted".into());
    }
    let mut parents: Vec<PathBuf> = Vec::new();
    let mut at = [None; CONTROLLERS.len()];
    let mut refused = Vec::new();
    for (slot, (controller, file)) in CONTROLLERS.iter().enumerate() {
        match usable(&mounts, self_cgroup, controller, file) {
            Ok(parent) => {
                // Co-mounted controllers (`cpu,memory`) share one folder.
                let index = match parents.iter().position(|p| *p == parent) {
                    Some(index) => index,
                    None => {
                        parents.push(parent);
                        parents.len() - 1
                    }
                };
                at[slot] = Some(index);
            }
            Err(why) => refused.push(format!("{controller}: {why}")),
        }
    }
    if parents.is_empty() {
        return Support::Unavailable(format!(
            "no usable cgroup v1 hierarchy ({})",
            refused.join("; ")
        ));
    }
    let [pids, memory, cpu, freezer] = at;
    Support::Available(Cgroups {
        parents,
        layout: Layout {
            v1: true,
            cpu,
            memory,
            pids,
            freezer,
        },
    })
}

/// A `cgroup` (v1) mount: where, the hierarchy's folder mounted there, its controllers.
struct Mount {
    point: PathBuf,
    root: String,
    controllers: Vec<String>,
}

/// The v1 mounts in `mountinfo`: `id parent dev root point options [tags] - cgroup
/// source super-options`, the controllers among the super options.
fn mounts(mountinfo: &str) -> Vec<Mount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let mut tail = tail.split_whitespace();
            if tail.next()? != "cgroup" {
                return None;
            }
            let options = tail.nth(1)?;
            let mut head = head.split_whitespace();
            let root = unescape(head.nth(3)?);
            let point = PathBuf::from(unescape(head.next()?));
            Some(Mount {
                point,
                root,
                controllers: options.split(',').map(str::to_owned).collect(),
            })
        })
        .collect()
}

/// mountinfo's octal escapes (`\040` a space, `\134` a backslash) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let d = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(d, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `controller`'s `svc-sandboxes` folder, made if needed, or why it is not usable.
fn usable(
    mounts: &[Mount],
    self_cgroup: &str,
    controller: &str,
    file: &str,
) -> Result<PathBuf, String> {
    let mount = mounts
        .iter()
        .find(|m| m.controllers.iter().any(|c| c == controller))
        .ok_or_else(|| "not mounted".to_owned())?;
    // `id:controllers:path`, the controllers as mounted (`cpu,cpuacct`).
    let path = self_cgroup
        .lines()
        .find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let _id = fields.next()?;
            let listed = fields.next()?.split(',').any(|c| c == controller);
            listed.then(|| fields.next()).flatten()
        })
        .ok_or_else(|| format!("this process is in no {controller} group"))?
        .trim();
    // The path is from the hierarchy's root; the mount may show only a part of it (a
    // container's bind mount). Within a cgroup namespace it is already from the mount's.
    let path = Path::new(path);
    let relative = path.strip_prefix(&mount.root).unwrap_or(path);
    // Never absolute: joining one would replace the mount point.
    let own = mount
        .point
        .join(relative.strip_prefix("/").unwrap_or(relative));
    let parent = own.join(SUBTREE);
    if let Err(e) = std::fs::create_dir(&parent)
        && e.kind() != io::ErrorKind::AlreadyExists
    {
        return Err(format!("cannot make {}: {e}", parent.display()));
    }
    // Opened for writing, nothing written: a folder processes cannot be moved into would
    // give commands that fail to start.
    let procs = parent.join("cgroup.procs");
    if let Err(e) = std::fs::OpenOptions::new().write(true).open(&procs) {
        return Err(format!(
            "cannot move processes into {}: {e}",
            parent.display()
        ));
    }
    if !parent.join(file).is_file() {
        return Err(format!("no {file} in {}", parent.display()));
    }
    Ok(parent)
}

/// `freezer.state`, then waits for it to read `FROZEN` (or `THAWED`): it reads
/// `FREEZING` until every process is frozen.
pub(super) fn freeze(dir: &Path, frozen: bool) -> io::Result<()> {
    let want = if frozen { "FROZEN" } else { "THAWED" };
    let state = dir.join("freezer.state");
    write(&state, want)?;
    settle(
        || format!("{} did not read `{want}`", state.display()),
        || Ok(std::fs::read_to_string(&state)?.trim() == want),
    )
}
