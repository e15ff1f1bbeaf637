//! The pipe `splice(2)` needs between two descriptors that are not pipes (socket to file,
//! socket to socket): non-blocking, closed on exec, as large as an unprivileged process may
//! make it.

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use std::io;
use std::os::fd::OwnedFd;

/// The pipe is asked for this much room (the kernel's default limit for an unprivileged
/// process); a smaller pipe only means smaller batches.
const PIPE_SIZE: i32 = 1024 * 1024;

#[derive(Debug)]
pub(crate) struct Pipe {
    pub read: OwnedFd,
    pub write: OwnedFd,
    /// What the pipe holds at most.
    pub capacity: usize,
}

impl Pipe {
    pub fn new() -> io::Result<Pipe> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
        // A bigger pipe moves more per batch; the default (64 KiB) still works.
        let capacity = fcntl(&write, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE))
            .or_else(|_| fcntl(&write, FcntlArg::F_GETPIPE_SZ))
            .map_or(64 * 1024, |size| size as usize);
        Ok(Pipe {
            read,
            write,
            capacity,
        })
    }
}
