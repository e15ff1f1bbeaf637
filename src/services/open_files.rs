//! The open-files limit. A server or engine holds a descriptor or three for every
//! connection, child and sandbox, and the usual soft limit (1,024) would stop an engine at
//! about 330 sandboxes long before memory does. So `svc serve` and the engine raise their
//! soft limit to the hard one at start; their children get back the soft limit they
//! started with, because programs written for `select` fail on a descriptor past 1,023
//! (the same reasoning as systemd's `DefaultLimitNOFILE`).

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use std::sync::atomic::{AtomicU64, Ordering};

/// The soft limit the process started with, once it has been raised (0 before).
static STARTED_WITH: AtomicU64 = AtomicU64::new(0);
/// The hard limit at the time, given again with the soft one.
static HARD: AtomicU64 = AtomicU64::new(0);

/// What [`raise`] did: the soft limit before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raised {
    pub before: u64,
    pub after: u64,
}

/// Raises the soft limit to the hard one, once, before children are spawned; a process
/// already at its hard limit is left as it is (and so are its children).
pub fn raise() -> std::io::Result<Raised> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft >= hard {
        return Ok(Raised {
            before: soft,
            after: soft,
        });
    }
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    HARD.store(hard, Ordering::SeqCst);
    STARTED_WITH.store(soft, Ordering::SeqCst);
    Ok(Raised {
        before: soft,
        after: hard,
    })
}

/// Whether a child has a limit to put back.
pub(crate) fn raised() -> bool {
    STARTED_WITH.load(Ordering::Relaxed) != 0
}

/// In a child, before its program: the soft limit the process started with. One system
/// call on two integers, so it may run between fork and exec.
pub(crate) fn restore_in_child() -> std::io::Result<()> {
    let soft = STARTED_WITH.load(Ordering::Relaxed);
    if soft == 0 {
        return Ok(());
    }
    setrlimit(Resource::RLIMIT_NOFILE, soft, HARD.load(Ordering::Relaxed))?;
    Ok(())
}
