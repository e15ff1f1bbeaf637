//! The sending side of a large file answer (and of the engine's client's upload,
//! `client::raw_files`): a thread of the answer's own calls `sendfile(2)`
//! in a loop, exactly as a program that only sends a file would. On the runtime a
//! non-blocking `sendfile` stops each time the socket's buffer fills (4 MiB at most on
//! Linux's loopback) and the connection goes back through the reactor and hyper before the
//! next call; on a fast loopback those round trips cost a GET 10-20% of its floor (one
//! blocking `sendfile` per file, `benches/files.rs`). A cold file's pages are also read
//! from the disk here rather than on a thread that other connections share.
//!
//! hyper still frames the answer: the thread sends only the placeholder bytes hyper has
//! offered (its allowance), so nothing hyper writes itself (a chunk's header, the next
//! answer) can be overtaken, and the runtime learns how far the thread has got once it has
//! sent all of that (one wake-up per offered chunk, not per buffer's worth).
//!
//! The socket stays non-blocking for the runtime; the thread waits for room with `poll(2)`
//! and looks every [`LOOK_AGAIN`] ms whether the answer was dropped. A dropped answer whose
//! bytes were not all sent shuts the socket's sending side at once (its framing is lost anyway): the
//! client sees the end at once and the thread leaves its wait; so a client that stops
//! reading holds the thread only as long as it holds the connection. At most
//! [`MAX_SENDERS`] threads send at once; past that, and for answers that fit in one call,
//! the stream sends inline as before.

use super::kept_error::{KeptError, OnUnwind};
use futures::task::AtomicWaker;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::fs::File;
use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// How long (ms) the thread waits for room or for an allowance before it looks whether its
/// answer was dropped.
const LOOK_AGAIN: u16 = 200;

/// Bodies longer than this get a thread; shorter ones usually fit in one inline
/// `sendfile`, which a thread's start would only delay.
const THREAD_FROM: u64 = super::MAX_SEND as u64;

/// Sending threads at most at once, in the whole process: past them an answer is sent
/// inline (slower on a fast loopback, never refused).
pub(super) const MAX_SENDERS: usize = 64;

/// Bytes one `sendfile` call of the thread asks for at most: the waiter hears of progress
/// at least this often (a client's progress bar), as well as when all it offered is sent.
const ONE_CALL: u64 = 8 * 1024 * 1024;

static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// What a waiter is told when the thread stopped without an error of its own.
const STOPPED: &str = "the file answer's sending thread stopped";

/// What the thread and the connection's stream share.
#[derive(Debug, Default)]
struct Shared {
    /// Bytes of the answer hyper has offered so far: the thread sends no further.
    allowed: AtomicU64,
    /// Bytes the thread has sent so far.
    sent: AtomicU64,
    failed: AtomicBool,
    error: KeptError,
    /// The answer was dropped: the thread stops.
    abandoned: AtomicBool,
    /// The connection's stream, waiting for the thread to send what hyper offered.
    stream: AtomicWaker,
}

impl Shared {
    fn stop(&self, error: io::Error) {
        self.error.keep(error);
        self.failed.store(true, Ordering::SeqCst);
        self.stream.wake();
    }

    /// The thread's error, as often as asked.
    fn error(&self) -> io::Error {
        self.error.told(STOPPED)
    }

    /// Held by the thread: stops the answer if it unwinds.
    fn stopped_if_it_unwinds(&self) -> OnUnwind<impl FnMut() + '_> {
        OnUnwind(|| self.stop(io::Error::other(STOPPED)))
    }

    /// Ready with the bytes sent beyond `reported`, or the thread's error.
    fn state(&self, reported: u64) -> Option<io::Result<u64>> {
        let sent = self.sent.load(Ordering::SeqCst);
        if sent > reported {
            return Some(Ok(sent - reported));
        }
        self.failed
            .load(Ordering::SeqCst)
            .then(|| Err(self.error()))
    }
}

/// The waiting end of a sending thread (a connection's stream, the engine's client).
#[derive(Debug)]
pub(crate) struct Sender {
    shared: Arc<Shared>,
    thread: std::thread::Thread,
    /// Bytes the stream has handed back to hyper as written.
    reported: u64,
    len: u64,
    /// The thread's own descriptor of the socket, to shut it down when the answer is
    /// dropped half sent.
    socket: Arc<TcpStream>,
}

impl Sender {
    /// A thread that sends `len` bytes of `file` from `offset` to `socket` as they are
    /// offered; `None` (the caller sends inline) for [`THREAD_FROM`] bytes or fewer, when
    /// [`MAX_SENDERS`] already run, or when no thread can start.
    pub(crate) fn start(
        socket: BorrowedFd<'_>,
        file: &File,
        offset: i64,
        len: u64,
    ) -> Option<Sender> {
        if len <= THREAD_FROM {
            return None;
        }
        let counted = Counted::take(&RUNNING, MAX_SENDERS)?;
        let started = (|| {
            let socket = Arc::new(TcpStream::from(socket.try_clone_to_owned()?));
            let file = file.try_clone()?;
            let shared = Arc::new(Shared::default());
            let (theirs, their_socket) = (shared.clone(), socket.clone());
            let handle = std::thread::Builder::new()
                .name("svc-send".into())
                .spawn(move || {
                    let _counted = counted;
                    run(&their_socket, &file, offset, len, &theirs);
                })?;
            io::Result::Ok(Sender {
                shared,
                thread: handle.thread().clone(),
                reported: 0,
                len,
                socket,
            })
        })();
        match started {
            Ok(sender) => Some(sender),
            Err(e) => {
                // The place taken is given back with the closure that held it.
                tracing::debug!("no thread for a file answer, sent inline: {e}");
                None
            }
        }
    }

    /// hyper offers `want` more placeholder bytes: ready with how many of them the thread
    /// has sent (at least one), or with its error.
    pub(crate) fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        want: usize,
    ) -> Poll<io::Result<usize>> {
        let offered = (self.reported + want as u64).min(self.len);
        if self.shared.allowed.fetch_max(offered, Ordering::SeqCst) < offered {
            self.thread.unpark();
        }
        let state = match self.shared.state(self.reported) {
            Some(state) => state,
            None => {
                self.shared.stream.register(cx.waker());
                // Looked at again: the thread may have moved on between the look and the
                // register.
                match self.shared.state(self.reported) {
                    Some(state) => state,
                    None => return Poll::Pending,
                }
            }
        };
        Poll::Ready(state.map(|beyond| {
            let n = beyond.min(want as u64);
            self.reported += n;
            n as usize
        }))
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.shared.abandoned.store(true, Ordering::SeqCst);
        if self.reported < self.len {
            // A body cut short cannot be framed again: end the sending side now rather
            // than when the thread next looks (the peer sees the end). Reading is left to
            // the socket's owner, which may still read an answer the peer sent first.
            let _ = self.socket.shutdown(Shutdown::Write);
        }
        self.thread.unpark();
    }
}

/// One of the `max` places of `running`, held by a thread and given back however it ends
/// (or when the thread never starts).
struct Counted(&'static AtomicUsize);

impl Counted {
    /// A place, or `None` when all `max` are taken.
    fn take(running: &'static AtomicUsize, max: usize) -> Option<Counted> {
        if running.fetch_add(1, Ordering::SeqCst) >= max {
            running.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Counted(running))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn run(socket: &TcpStream, file: &File, mut offset: i64, len: u64, shared: &Shared) {
    let _told_if_it_panics = shared.stopped_if_it_unwinds();
    let (mut sent, mut woken) = (0u64, 0u64);
    while sent < len && !shared.abandoned.load(Ordering::SeqCst) {
        let allowed = shared.allowed.load(Ordering::SeqCst);
        if sent >= allowed {
            std::thread::park_timeout(Duration::from_millis(LOOK_AGAIN.into()));
            continue;
        }
        let want = (allowed - sent).min(ONE_CALL) as usize;
        match nix::sys::sendfile::sendfile64(socket, file, Some(&mut offset), want) {
            Ok(0) => {
                shared.stop(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file shrank while it was sent",
                ));
                return;
            }
            Ok(n) => {
                sent += n as u64;
                shared.sent.store(sent, Ordering::SeqCst);
                // The stream waits for all it offered: wake it then, or per call's worth
                // ([`ONE_CALL`]), not per buffer's worth.
                if sent >= shared.allowed.load(Ordering::SeqCst) || sent >= woken + ONE_CALL {
                    woken = sent;
                    shared.stream.wake();
                }
            }
            Err(nix::errno::Errno::EAGAIN) => {
                if let Err(e) = wait_for_room(socket.as_fd()) {
                    shared.stop(e);
                    return;
                }
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => {
                shared.stop(e.into());
                return;
            }
        }
    }
}

fn wait_for_room(socket: BorrowedFd<'_>) -> io::Result<()> {
    let mut room = [PollFd::new(socket, PollFlags::POLLOUT)];
    match poll(&mut room, PollTimeout::from(LOOK_AGAIN)) {
        Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
#[path = "send_tests.rs"]
mod tests;
