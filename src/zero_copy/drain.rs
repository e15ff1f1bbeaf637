//! The file side of an upload: a thread of its own moves what the connection spliced into a
//! pipe on into the file. A write into a file can block on the disk (write-back pressure
//! after a large build, a slow device); on the runtime's threads it would stall every
//! connection and stream that shares them, so the runtime only ever moves bytes from the
//! socket into the pipe (memory, never blocking) and the drain thread does the rest.
//!
//! Two pipes take turns, one batch in each at most: while the thread writes one batch into
//! the file, the stream splices the next into the other pipe. The stream splices into a
//! pipe only once the drain has landed the batch it held before ([`DrainHandle::poll_ready`]),
//! so a pipe is empty whenever the stream splices into it, and a splice that moves nothing
//! means the socket has nothing (a full pipe would look the same, and the socket's
//! readiness would be cleared wrongly).

use futures::task::AtomicWaker;
use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// The pipe is asked for this much room (the kernel's default limit for an unprivileged
/// process); a smaller pipe only means smaller batches.
const PIPE_SIZE: i32 = 1024 * 1024;

/// An upload's pipe between socket and file.
#[derive(Debug)]
pub(super) struct Pipe {
    pub(super) read: OwnedFd,
    pub(super) write: OwnedFd,
    /// What the pipe holds at most.
    pub(super) capacity: usize,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
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

/// Which side of an upload waits for the drain (each keeps its own waker: both may wait at
/// once).
#[derive(Debug, Clone, Copy)]
pub(super) enum Waiter {
    /// The connection's stream, before it splices the next batch.
    Stream,
    /// The request body, before it reports placed bytes as in the file.
    Upload,
}

/// What the drain thread has done, shared with the stream and the upload.
#[derive(Debug, Default)]
pub(super) struct Drain {
    /// The body offset up to which the file holds every placed byte.
    landed: AtomicU64,
    failed: AtomicBool,
    /// Why the drain stopped (the disk's error).
    error: Mutex<Option<io::Error>>,
    stream: AtomicWaker,
    upload: AtomicWaker,
}

impl Drain {
    /// Ready once the file holds the body up to `offset`, or with the drain's error.
    pub(super) fn poll_landed(
        &self,
        cx: &mut Context<'_>,
        waiter: Waiter,
        offset: u64,
    ) -> Poll<io::Result<()>> {
        if let Some(done) = self.state(offset) {
            return Poll::Ready(done);
        }
        match waiter {
            Waiter::Stream => self.stream.register(cx.waker()),
            Waiter::Upload => self.upload.register(cx.waker()),
        }
        // Looked at again: the thread may have finished between the look and the register.
        self.state(offset).map_or(Poll::Pending, Poll::Ready)
    }

    fn state(&self, offset: u64) -> Option<io::Result<()>> {
        if self.failed.load(Ordering::Acquire) {
            return Some(Err(self.error()));
        }
        (self.landed.load(Ordering::Acquire) >= offset).then_some(Ok(()))
    }

    /// The drain's error, as often as asked (the stream and the upload both report it).
    pub(super) fn error(&self) -> io::Error {
        let error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        match error.as_ref() {
            Some(e) => e
                .raw_os_error()
                .map(io::Error::from_raw_os_error)
                .unwrap_or_else(|| io::Error::new(e.kind(), e.to_string())),
            None => io::Error::other("the upload's write into the file failed"),
        }
    }

    /// The drain is over with `error`: every wait ends with it.
    fn stop(&self, error: io::Error) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
        self.failed.store(true, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        self.stream.wake();
        self.upload.wake();
    }
}

/// The stream's end of a drain: the pipes to splice into, where to tell the thread.
#[derive(Debug)]
pub(super) struct DrainHandle {
    pipes: [Arc<Pipe>; 2],
    /// The pipe the stream splices into next.
    next: usize,
    /// For each pipe, the body offset its last batch ends at (0: none yet; the body's first
    /// bytes may have come through hyper, written by the file service itself).
    told: [u64; 2],
    pub(super) drain: Arc<Drain>,
    batches: mpsc::Sender<Batch>,
    /// The file and the thread's end of `batches`, until the first batch starts the thread
    /// (a body hyper read whole with its head never needs one).
    unstarted: Option<(File, mpsc::Receiver<Batch>)>,
}

/// `len` bytes in pipe `pipe`, for the file at body offset `offset`.
#[derive(Debug, Clone, Copy)]
struct Batch {
    pipe: usize,
    offset: u64,
    len: usize,
}

impl DrainHandle {
    /// A drain into `file` (a descriptor of its own). Its thread starts at the first batch
    /// and ends once the handle is dropped and every batch told to it has landed, or at its
    /// first error.
    pub(super) fn new(file: File) -> io::Result<DrainHandle> {
        let (batches, told) = mpsc::channel::<Batch>();
        Ok(DrainHandle {
            pipes: [Arc::new(Pipe::new()?), Arc::new(Pipe::new()?)],
            next: 0,
            told: [0, 0],
            drain: Arc::new(Drain::default()),
            batches,
            unstarted: Some((file, told)),
        })
    }

    /// Ready once the next pipe is empty (the drain landed the batch it held), or with the
    /// drain's error.
    pub(super) fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.drain
            .poll_landed(cx, Waiter::Stream, self.told[self.next])
    }

    /// The pipe to splice into next (empty once [`DrainHandle::poll_ready`] said so).
    pub(super) fn next_pipe(&self) -> &Pipe {
        &self.pipes[self.next]
    }

    /// The stream spliced `len` bytes into the next pipe, the body's bytes from `offset` on.
    pub(super) fn landing(&mut self, offset: u64, len: usize) {
        let batch = Batch {
            pipe: self.next,
            offset,
            len,
        };
        self.told[self.next] = offset + len as u64;
        self.next = 1 - self.next;
        if let Some((file, told)) = self.unstarted.take() {
            let (pipes, drain) = (self.pipes.clone(), self.drain.clone());
            let started = std::thread::Builder::new()
                .name("svc-upload".into())
                .spawn(move || run(&pipes, &file, &drain, told));
            if let Err(e) = started {
                self.drain.stop(e);
                return;
            }
        }
        // A thread that stopped has recorded why; the stream and the upload find it there.
        let _ = self.batches.send(batch);
    }
}

fn run(pipes: &[Arc<Pipe>; 2], file: &File, drain: &Drain, told: mpsc::Receiver<Batch>) {
    let _told_if_it_panics = StopOnPanic(drain);
    for batch in told {
        if let Err(e) = drain_into(&pipes[batch.pipe], file, batch.offset, batch.len) {
            drain.stop(e);
            return;
        }
        drain
            .landed
            .store(batch.offset + batch.len as u64, Ordering::Release);
        drain.wake();
    }
}

/// Stops the drain if the thread unwinds (it has no panicking path today): the stream and
/// the upload then fail with an error instead of waiting for batches that never land.
struct StopOnPanic<'a>(&'a Drain);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0
                .stop(io::Error::other("the upload's drain thread stopped"));
        }
    }
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
            // The stream tells a batch once its bytes are in the pipe: an empty pipe means
            // the count was wrong, never that more is coming.
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
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::{Duration, Instant};

    /// Puts `bytes` into the handle's pipe, as the stream's splice would.
    fn push(handle: &mut DrainHandle, offset: u64, bytes: &[u8]) {
        let written = nix::unistd::write(&handle.next_pipe().write, bytes).unwrap();
        assert_eq!(written, bytes.len());
        handle.landing(offset, bytes.len());
    }

    fn wait_for(drain: &Drain, offset: u64) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(state) = drain.state(offset) {
                return state;
            }
            assert!(Instant::now() < deadline, "the drain never got to {offset}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn batches_land_at_their_offsets() {
        let mut file = tempfile::tempfile().unwrap();
        let mut handle = DrainHandle::new(file.try_clone().unwrap()).unwrap();
        push(&mut handle, 3, b"defg");
        wait_for(&handle.drain, 7).unwrap();
        push(&mut handle, 7, b"hij");
        wait_for(&handle.drain, 10).unwrap();
        file.write_all_at(b"abc", 0).unwrap();
        let mut all = String::new();
        file.read_to_string(&mut all).unwrap();
        assert_eq!(all, "abcdefghij");
    }

    #[test]
    fn a_file_that_refuses_splice_gets_its_bytes_through_memory() {
        // splice(2) refuses a file opened for appending (EINVAL): the fallback path.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("appended");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        let mut handle = DrainHandle::new(file).unwrap();
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        push(&mut handle, 0, &bytes[..60_000]);
        wait_for(&handle.drain, 60_000).unwrap();
        push(&mut handle, 60_000, &bytes[60_000..120_000]);
        wait_for(&handle.drain, 120_000).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), &bytes[..120_000]);
    }

    #[test]
    fn a_batch_the_pipe_does_not_hold_fails_the_drain_and_says_so_to_every_asker() {
        let file = tempfile::tempfile().unwrap();
        let mut handle = DrainHandle::new(file).unwrap();
        push(&mut handle, 0, b"abc");
        // Told 10 bytes more than the pipe has: the thread must not wait for them forever.
        handle.landing(3, 10);
        let first = wait_for(&handle.drain, 13).unwrap_err();
        let again = handle.drain.error();
        assert_eq!(first.kind(), again.kind());
        assert!(first.to_string().contains("ran dry"), "{first}");
    }

    #[test]
    fn a_drain_thread_that_unwinds_stops_the_drain_rather_than_leave_it_waited_for() {
        let drain = Arc::new(Drain::default());
        let thread_drain = drain.clone();
        let unwound = std::thread::spawn(move || {
            let _guard = StopOnPanic(&thread_drain);
            panic!("a drain thread that unwinds");
        })
        .join();
        assert!(unwound.is_err());
        let e = drain.state(1).expect("stopped").unwrap_err();
        assert!(e.to_string().contains("drain thread stopped"), "{e}");
        // A thread that ends normally leaves the drain as it was.
        let calm = Arc::new(Drain::default());
        let thread_calm = calm.clone();
        std::thread::spawn(move || drop(StopOnPanic(&thread_calm)))
            .join()
            .unwrap();
        assert!(calm.state(1).is_none());
    }

    #[test]
    fn the_thread_ends_when_the_handle_is_dropped() {
        let file = tempfile::tempfile().unwrap();
        let mut handle = DrainHandle::new(file).unwrap();
        let drain = handle.drain.clone();
        push(&mut handle, 0, b"abc");
        drop(handle);
        wait_for(&drain, 3).unwrap();
        // The thread held the other references: once it is gone only this one is left.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&drain) > 1 {
            assert!(Instant::now() < deadline, "the drain thread never ended");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
