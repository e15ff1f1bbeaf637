//! The cgroup v2 backend: one folder per sandbox in the unified hierarchy.

use super::{Cgroups, Layout, SUBTREE, Support, settle, write};
use std::io;
use std::path::Path;

/// The v2 support under `mount` for a process whose `/proc/self/cgroup` reads
/// `self_cgroup`.
pub fn detect_in(mount: &Path, self_cgroup: &str) -> Support {
    if !mount.join("cgroup.controllers").is_file() {
        return Support::Unavailable(format!(
            "no cgroup v2 hierarchy at {} (no cgroup.controllers: cgroup v1 or none)",
            mount.display()
        ));
    }
    // The unified hierarchy's line is `0::<path>`.
    let Some(relative) = self_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(|p| p.trim().trim_start_matches('/'))
    else {
        return Support::Unavailable("this process is in no cgroup v2 group".into());
    };
    let own = mount.join(relative);
    let parent = own.join(SUBTREE);
    if let Err(e) = std::fs::create_dir(&parent)
        && e.kind() != io::ErrorKind::AlreadyExists
    {
        return Support::Unavailable(format!("cannot make a cgroup under {}: {e}", own.display()));
    }
    // A process moves from the engine's cgroup into a sandbox's only if it may write the
    // common ancestor's `cgroup.procs` (the kernel's delegation rule): opened for writing
    // here (nothing written), so a machine that would refuse every move gives no cgroups
    // rather than commands that fail to start.
    if let Err(e) = std::fs::OpenOptions::new()
        .write(true)
        .open(own.join("cgroup.procs"))
    {
        return Support::Unavailable(format!(
            "cannot move processes out of {}: {e}",
            own.display()
        ));
    }
    // Hand `cpu`, `memory` and `pids` down to the sandboxes; each may fail on its own (not
    // offered by the parent, or the engine's cgroup holds processes), which only means
    // that limit is not enforced.
    let enabled = |controller: &str| {
        let add = format!("+{controller}");
        (available(&own, controller)
            && write(&own.join("cgroup.subtree_control"), &add).is_ok()
            && write(&parent.join("cgroup.subtree_control"), &add).is_ok()
            && available(&parent, controller))
        .then_some(0)
    };
    let layout = Layout {
        v1: false,
        cpu: enabled("cpu"),
        memory: enabled("memory"),
        pids: enabled("pids"),
        // Kernels before 5.2 have no v2 freezer.
        freezer: parent.join("cgroup.freeze").is_file().then_some(0),
    };
    Support::Available(Cgroups {
        parents: vec![parent],
        layout,
    })
}

/// Whether `controller` is listed in `dir/cgroup.controllers`.
fn available(dir: &Path, controller: &str) -> bool {
    std::fs::read_to_string(dir.join("cgroup.controllers"))
        .is_ok_and(|text| text.split_whitespace().any(|c| c == controller))
}

/// `cgroup.freeze`, then waits for `cgroup.events` to say `frozen 1` (or `0`).
pub(super) fn freeze(dir: &Path, frozen: bool) -> io::Result<()> {
    write(&dir.join("cgroup.freeze"), if frozen { "1" } else { "0" })?;
    let want = if frozen { "frozen 1" } else { "frozen 0" };
    settle(
        || format!("{} did not report `{want}`", dir.display()),
        || {
            let events = std::fs::read_to_string(dir.join("cgroup.events"))?;
            Ok(events.lines().any(|l| l.trim() == want))
        },
    )
}
