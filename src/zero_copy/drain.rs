//! The file side of an upload: once armed, a thread of the upload's own moves the body's
//! rest from the socket into the file (socket to a pipe, pipe to the file, with
//! `splice(2)`), exactly as a program that only receives a file would. A write into a file
//! can block on the disk (write-back pressure after a large build, a slow device); on the
//! runtime's threads it would stall every connection and stream that shares them. And a
//! hand-over per batch between the runtime and a writing thread costs a wake-up each way:
//! the thread does both halves, and the runtime only learns how far the file has got.
//!
//! The thread takes at most the body's remaining bytes from the socket, so a request
//! pipelined behind the body stays there for hyper. It waits for the socket with `poll(2)`
//! (the socket stays non-blocking for the runtime) and looks every [`LOOK_AGAIN`] whether
//! its handle was dropped (the upload abandoned: the connection is then closed anyway).
//!
//! The engine's client receives a downloaded file with the same thread (`client::raw_files`):
//! the answer's body after its head is, like an upload's rest, a known count of bytes on a
//! socket bound for a file. And the sink may be a socket rather than a file ([`Sink`]): the
//! `rest` provider passes an upload's body on to its remote engine socket to socket, the
//! bytes never in the process's memory.

use super::kept_error::{KeptError, OnUnwind};
use super::low_water::{BATCH, LowWater};
use super::pipe::Pipe;
use futures::task::AtomicWaker;
use nix::fcntl::{SpliceFFlags, splice};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};

/// How long (ms) the thread waits for the socket before it looks whether it was abandoned.
const LOOK_AGAIN: u16 = 200;

/// Bytes landed between two wakes of an upload that follows the thread (`upload::Bypass`).
const FOLLOWER_RUN: u64 = 8 * 1024 * 1024;

/// How far the drain thread has got, shared with the connection's stream.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    /// The body offset up to which the file holds every byte the thread took.
    landed: AtomicU64,
    /// The thread is done: the whole body landed, or the peer ended it early.
    over: AtomicBool,
    failed: AtomicBool,
    /// Why the drain stopped (the disk's or the socket's error).
    error: KeptError,
    /// Nobody waits any more (the handle was dropped): the thread stops.
    abandoned: AtomicBool,
    /// The connection's stream, waiting to hand hyper filler.
    stream: AtomicWaker,
    /// An upload following the thread past hyper (`upload::BYPASS_FROM`). A waker of its
    /// own: hyper may still read once after the upload stopped asking it, and a
    /// registration of that read must not take the upload's place.
    follower: AtomicWaker,
    /// The offset at which the follower was last woken (only the thread touches it).
    followed: AtomicU64,
}

impl Drain {
    /// Ready with how far the file holds the body once that is beyond `offset`, or the
    /// thread is over (the peer ended the body at the offset answered); or with the
    /// drain's error.
    pub(crate) fn poll_beyond(&self, cx: &mut Context<'_>, offset: u64) -> Poll<io::Result<u64>> {
        self.poll_beyond_with(&self.stream, cx, offset)
    }

    /// [`Self::poll_beyond`] for the upload that follows the thread past hyper.
    pub(super) fn poll_followed_beyond(
        &self,
        cx: &mut Context<'_>,
        offset: u64,
    ) -> Poll<io::Result<u64>> {
        self.poll_beyond_with(&self.follower, cx, offset)
    }

    fn poll_beyond_with(
        &self,
        waiter: &AtomicWaker,
        cx: &mut Context<'_>,
        offset: u64,
    ) -> Poll<io::Result<u64>> {
        if let Some(state) = self.state(offset) {
            return Poll::Ready(state);
        }
        waiter.register(cx.waker());
        // Looked at again: the thread may have moved on between the look and the register.
        self.state(offset).map_or(Poll::Pending, Poll::Ready)
    }

    fn wake(&self) {
        self.stream.wake();
        self.follower.wake();
    }

    fn state(&self, offset: u64) -> Option<io::Result<u64>> {
        if self.failed.load(Ordering::Acquire) {
            return Some(Err(self.error()));
        }
        // `over` first: once it is set, `landed` is final.
        let over = self.over.load(Ordering::Acquire);
        let landed = self.landed.load(Ordering::Acquire);
        (landed > offset || over).then_some(Ok(landed))
    }

    /// The drain's error, as often as asked.
    pub(super) fn error(&self) -> io::Error {
        self.error.told("the upload's write into the file failed")
    }

    /// The drain is over with `error`: every wait ends with it.
    fn stop(&self, error: io::Error) {
        self.error.keep(error);
        self.failed.store(true, Ordering::Release);
        self.wake();
    }

    /// Held by the thread: stops the drain if it unwinds.
    fn stopped_if_it_unwinds(&self) -> OnUnwind<impl FnMut() + '_> {
        OnUnwind(|| self.stop(io::Error::other("the upload's drain thread stopped")))
    }

    fn landed(&self, offset: u64) {
        self.landed.store(offset, Ordering::Release);
        self.stream.wake();
        // The follower only counts placed bytes on to the writer (which takes them in runs
        // of 16 MiB): a wake of its task per batch (a socket's worth, often 64-256 KiB)
        // took a core from the thread and the sender for nothing. The end and a failure
        // always wake it.
        if offset >= self.followed.load(Ordering::Relaxed) + FOLLOWER_RUN {
            self.followed.store(offset, Ordering::Relaxed);
            self.follower.wake();
        }
    }

    fn end(&self) {
        self.over.store(true, Ordering::Release);
        self.wake();
    }
}

/// Where a drain puts the bytes.
#[derive(Debug)]
pub(crate) enum Sink {
    /// A file: each byte at its offset.
    File(File),
    /// A connected socket (a descriptor of its own): the bytes in order, offsets only count.
    Socket(OwnedFd),
}

/// The stream's end of a drain: the sink until the thread starts, and how far it got.
#[derive(Debug)]
pub(crate) struct DrainHandle {
    pub(crate) drain: Arc<Drain>,
    /// The sink, until the stream's first read of the armed body starts the thread (a body
    /// hyper read whole with its head needs neither a thread nor a pipe).
    unstarted: Option<Sink>,
}

impl DrainHandle {
    /// A drain into `file` (a descriptor of its own); nothing runs until [`Self::start`].
    pub(crate) fn new(file: File) -> DrainHandle {
        DrainHandle::into_sink(Sink::File(file))
    }

    pub(crate) fn into_sink(sink: Sink) -> DrainHandle {
        DrainHandle {
            drain: Arc::new(Drain::default()),
            unstarted: Some(sink),
        }
    }

    pub(super) fn started(&self) -> bool {
        self.unstarted.is_none()
    }

    /// Starts the thread: it takes the body's `len` next bytes from `socket` into the
    /// sink from body offset `offset` on. Once only (later calls do nothing). An error
    /// means no thread runs and nothing was taken from the socket.
    pub(crate) fn start(
        &mut self,
        socket: BorrowedFd<'_>,
        offset: u64,
        len: u64,
    ) -> io::Result<()> {
        let Some(sink) = self.unstarted.take() else {
            return Ok(());
        };
        self.drain.landed.store(offset, Ordering::Release);
        self.drain.followed.store(offset, Ordering::Relaxed);
        let drain = self.drain.clone();
        #[cfg(test)]
        if REFUSE_NEXT_START.with(|refuse| refuse.replace(false)) {
            return Err(io::Error::from_raw_os_error(nix::libc::EMFILE));
        }
        let socket = socket.try_clone_to_owned()?;
        let pipe = Pipe::new()?;
        std::thread::Builder::new()
            .name("svc-upload".into())
            .spawn(move || run(&socket, &pipe, &sink, &drain, offset, len))?;
        Ok(())
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: the next start on this thread fails as it would in a process out of
    /// descriptors (which a test cannot provoke without starving the others).
    pub(super) static REFUSE_NEXT_START: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Drop for DrainHandle {
    fn drop(&mut self) {
        self.drain.abandoned.store(true, Ordering::Release);
    }
}

fn run(socket: &OwnedFd, pipe: &Pipe, sink: &Sink, drain: &Drain, at: u64, len: u64) {
    let _told_if_it_panics = drain.stopped_if_it_unwinds();
    let mut low_water = LowWater::new(socket.as_fd());
    let moved = take(socket, pipe, sink, drain, &mut low_water, at, len);
    // Put back before the end is told: the runtime may read the socket as soon as it
    // learns the drain is over.
    drop(low_water);
    match moved {
        Ok(()) => drain.end(),
        Err(e) => drain.stop(e),
    }
}

/// Moves the body's `len` next bytes (fewer if the peer ends it early) from the socket to
/// the sink, telling the drain how far they landed.
fn take(
    socket: &OwnedFd,
    pipe: &Pipe,
    sink: &Sink,
    drain: &Drain,
    low_water: &mut LowWater<'_>,
    mut at: u64,
    len: u64,
) -> io::Result<()> {
    let mut left = len;
    while left > 0 && !drain.abandoned.load(Ordering::Acquire) {
        let want = (left as usize).min(pipe.capacity);
        // The pipe is empty here (each batch is written out whole), so nothing moved means
        // the socket has nothing yet.
        match splice(
            socket,
            None,
            &pipe.write,
            None,
            want,
            SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK,
        ) {
            Ok(0) => break, // the peer ended the body early: hyper sees it short
            Ok(n) => {
                match sink {
                    Sink::File(file) => drain_into(pipe, file, at, n)?,
                    Sink::Socket(out) => pass_on(pipe, out, n, drain)?,
                }
                at += n as u64;
                left -= n as u64;
                drain.landed(at);
            }
            Err(nix::errno::Errno::EAGAIN) => {
                low_water.wait_for(left.min(BATCH as u64) as usize);
                let mut ready = [PollFd::new(socket.as_fd(), PollFlags::POLLIN)];
                match poll(&mut ready, PollTimeout::from(LOOK_AGAIN)) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Moves `len` bytes from the pipe into `file` at `offset`. A file that cannot take a
/// splice (one opened for appending, some file systems) gets them through a buffer.
fn drain_into(pipe: &Pipe, file: &File, offset: u64, len: usize) -> io::Result<()> {
    let mut at = i64::try_from(offset).map_err(io::Error::other)?;
    let mut left = len;
    while left > 0 {
        match splice(
            &pipe.read,
            None,
            file,
            Some(&mut at),
            left,
            SpliceFFlags::SPLICE_F_MOVE,
        ) {
            // The thread splices into the file only what it just put in the pipe: an empty
            // pipe means the count was wrong, never that more is coming.
            Ok(0) | Err(nix::errno::Errno::EAGAIN) => return Err(ran_dry()),
            Ok(n) => left -= n,
            Err(nix::errno::Errno::EINVAL) => {
                return copy_through_memory(pipe, file, at as u64, left);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Moves `len` bytes from the pipe to the socket `out` (non-blocking, as the runtime holds
/// it): when it is full, waits for room as the thread waits for bytes, so a dropped handle
/// still stops it.
fn pass_on(pipe: &Pipe, out: &OwnedFd, len: usize, drain: &Drain) -> io::Result<()> {
    let mut left = len;
    while left > 0 {
        match splice(
            &pipe.read,
            None,
            out,
            None,
            left,
            SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK,
        ) {
            Ok(0) => return Err(ran_dry()),
            Ok(n) => left -= n,
            // The pipe holds `left` bytes: no room in the socket.
            Err(nix::errno::Errno::EAGAIN) => wait_for_room(out, drain)?,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn wait_for_room(out: &OwnedFd, drain: &Drain) -> io::Result<()> {
    if drain.abandoned.load(Ordering::Acquire) {
        return Err(io::Error::other("the upload was abandoned"));
    }
    let mut room = [PollFd::new(out.as_fd(), PollFlags::POLLOUT)];
    match poll(&mut room, PollTimeout::from(LOOK_AGAIN)) {
        Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn copy_through_memory(
    pipe: &Pipe,
    file: &File,
    mut offset: u64,
    mut left: usize,
) -> io::Result<()> {
    let mut buffer = vec![0u8; left.min(256 * 1024)];
    while left > 0 {
        let want = left.min(buffer.len());
        let n = match nix::unistd::read(&pipe.read, &mut buffer[..want]) {
            Ok(0) | Err(nix::errno::Errno::EAGAIN) => return Err(ran_dry()),
            Ok(n) => n,
            Err(e) => return Err(e.into()),
        };
        file.write_all_at(&buffer[..n], offset)?;
        offset += n as u64;
        left -= n;
    }
    Ok(())
}

fn ran_dry() -> io::Error {
    io::Error::other("the pipe ran dry before the file got its bytes")
}

#[cfg(test)]
#[path = "drain_tests.rs"]
mod tests;
