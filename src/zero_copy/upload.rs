//! Zero-copy uploads: over HTTP/1, the rest of a request body of declared length goes from
//! the socket into the file being written with `splice(2)` (socket to a pipe, pipe to the
//! file), never through the process's memory: one copy in the kernel where a read and a
//! write cost two copies and two trips through user space.
//!
//! hyper reads the body, into its own buffer, and decides where a body ends. How the
//! handover stays exact:
//! - [`Upload`] wraps the request body from the handler's first poll and counts every chunk
//!   it takes from hyper, while it holds the connection's intake lock.
//! - hyper's HTTP/1 body channel holds one chunk, and hyper reads the socket for a body only
//!   when that slot is empty and its read buffer is drained (`Buffered::read_mem`). So when
//!   the connection's stream is asked to read while an intake is armed, every body byte
//!   hyper has read was taken and counted: the body stands at `received`, and the socket
//!   holds exactly its next `len - received` bytes. (Once its count says the body is over,
//!   hyper reads on with the last chunk still in the slot, for the next request: the
//!   intake then stands aside.)
//! - At that first read the stream starts the upload's [`drain`](super::drain) thread,
//!   which takes exactly those bytes from the socket into the file at that offset (a file
//!   write may block on the disk, which must never stall the runtime's threads), so a
//!   request pipelined behind the body stays in the socket for hyper. The stream hands hyper
//!   filler bytes for what the thread has put in the file, as much as hyper's buffer takes,
//!   so hyper's framing moves on exactly as if it had read them. hyper passes the filler on
//!   as the next chunk, which [`Upload`] recognises by its length (the intake's `placed`)
//!   and reports as [`Piece::Placed`]: its bytes are in the file already.
//! - A chunk that disagrees (filler of another length, bytes while filler was due) means
//!   hyper's count and ours differ: the upload fails and the connection is closed, never a
//!   guess. Bytes hyper had buffered before the intake was armed stay ordinary chunks,
//!   written by the file service before any placed byte (they come first in the body).
//! - Filler is not free: hyper's buffer must be written (the crate denies `unsafe` outside
//!   what runs between fork and exec, so it cannot stay uninitialised), a memset of every
//!   placed byte and fresh pages for hyper's buffer, on 2 cores beside the thread's own
//!   copy. So once the thread runs and at least [`BYPASS_FROM`] bytes are still to come,
//!   [`Upload`] stops asking hyper for the body and follows the thread's progress itself.
//!   hyper, never asked, reads no more of the body, so its count stays behind the socket:
//!   when the upload ends, the intake is broken (as for any upload dropped with its drain
//!   ahead of hyper), hyper's one read to drain the body it was not given fails, and hyper
//!   closes the connection after the answer.
//!   The handler marks that answer `Connection: close` ([`super::upload_answer`]; hyper
//!   adds it itself only when it noticed first; RFC 9112 section 9.6). A new connection
//!   costs about 0.1 ms on loopback, a small part of what 8 MiB of filler costs.
//!
//! The writer arms the intake once its temp file exists ([`Arming::arm`]); until then, and
//! without a channel (HTTP/2, `oneshot` tests, a chunked body), [`Upload`] passes bytes on.

use super::FileChannel;
use super::drain::{Drain, DrainHandle, Sink};
use crate::services::files::Piece;
use axum::BoxError;
use bytes::Bytes;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use tokio::io::ReadBuf;
use tokio::net::TcpStream;

/// From this many body bytes still to come once its drain thread runs, an upload follows
/// the thread rather than hyper (see the module's documentation).
pub(super) const BYPASS_FROM: u64 = 8 * 1024 * 1024;

#[cfg(test)]
thread_local! {
    /// Bytes uploads reported placed on this thread: the tests' proof that the path was
    /// taken (test builds only). Per thread, not per process: a test's servers run on its
    /// own (current-thread) runtime, so another test's upload cannot make its count.
    static PLACED_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bytes placed by uploads on this thread so far (see `PLACED_HERE`).
#[cfg(test)]
pub(crate) fn placed_here() -> u64 {
    PLACED_HERE.get()
}

/// One request body being received into a file.
#[derive(Debug)]
pub(super) struct Intake {
    /// Tells one request's intake from the next on the same connection.
    id: u64,
    /// The body's declared length.
    len: u64,
    /// Body bytes taken from hyper so far: bytes and filler.
    received: u64,
    /// Length of the filler chunk hyper has yet to pass on (0: none due).
    placed: u64,
    /// Where the rest goes once armed: the thread that moves it into the file.
    placing: Option<DrainHandle>,
    /// Why placing failed (the disk's error, which hyper would only report as a body
    /// error); taken by [`Upload`] to report it.
    failed: Option<io::Error>,
    /// Placing failed or went out of step: the connection's framing is no longer trusted
    /// and its reads fail from now on (hyper closes it after its answer).
    broken: bool,
}

/// Tells one request's intake from the next (an [`Arming`] outliving its upload must not
/// arm a later request's).
static NEXT_INTAKE: AtomicU64 = AtomicU64::new(1);

pub(super) type IntakeSlot = Arc<Mutex<Option<Intake>>>;

fn lock(slot: &IntakeSlot) -> MutexGuard<'_, Option<Intake>> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

impl FileChannel {
    /// Wraps a request body of `len` declared bytes so that, once armed, the connection
    /// moves its rest into a file. Replaces an intake an earlier request left behind.
    pub fn upload<B>(&self, body: B, len: u64) -> Upload<B> {
        let id = NEXT_INTAKE.fetch_add(1, Ordering::Relaxed);
        *lock(&self.intake) = Some(Intake {
            id,
            len,
            received: 0,
            placed: 0,
            placing: None,
            failed: None,
            broken: false,
        });
        Upload {
            body,
            intake: Some((self.intake.clone(), id)),
            declared: Some(len),
            bypass: None,
        }
    }
}

impl Intake {
    /// Placing is over for good: hyper's framing and ours may differ, so the connection's
    /// reads fail from now on (hyper closes it after its answer).
    fn break_off(&mut self) {
        self.placing = None;
        self.broken = true;
    }

    /// The drain thread may have taken body bytes from the socket that hyper was not handed
    /// filler for: hyper's framing would be off if the connection went on.
    fn socket_taken_ahead(&self) -> bool {
        let started = self.placing.as_ref().is_some_and(DrainHandle::started);
        started && self.received + self.placed < self.len
    }
}

/// A request body that reports bytes the connection placed in the file as
/// [`Piece::Placed`]; every other chunk is [`Piece::Bytes`]. Dropping it disarms the intake.
pub struct Upload<B> {
    body: B,
    intake: Option<(IntakeSlot, u64)>,
    /// The body's declared length, if it has one.
    declared: Option<u64>,
    /// Set once the body's rest is followed on the drain thread, hyper no longer asked.
    bypass: Option<Bypass>,
}

/// The rest of a body followed on its drain thread ([`BYPASS_FROM`]).
#[derive(Debug)]
struct Bypass {
    drain: Arc<Drain>,
    /// The body offset up to which placed bytes were reported.
    reported: u64,
    len: u64,
}

impl Bypass {
    /// The next run of bytes the thread put in the file, its error, or the body's early end.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Piece<Bytes>, BoxError>>> {
        if self.reported == self.len {
            return Poll::Ready(None);
        }
        Poll::Ready(Some(
            match ready!(self.drain.poll_followed_beyond(cx, self.reported)) {
                Err(e) => Ok(Piece::Failed(e)),
                Ok(landed) if landed > self.reported => {
                    let run = landed - self.reported;
                    self.reported = landed;
                    Ok(placed(run))
                }
                // The thread is over short of the body's end: the peer ended it, as hyper
                // would report a body shorter than its length.
                Ok(_) => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the client ended the body before its declared length",
                )
                .into()),
            },
        ))
    }
}

impl<B> Upload<B> {
    /// A body that is passed on as it comes (no channel, or no declared length), of
    /// `declared` bytes if that is known.
    pub fn plain(body: B, declared: Option<u64>) -> Upload<B> {
        Upload {
            body,
            intake: None,
            declared,
            bypass: None,
        }
    }

    /// How many bytes the body declared (its `Content-Length`), if it did.
    pub fn declared_len(&self) -> Option<u64> {
        self.declared
    }

    /// What the writer calls with its temp file to start placing.
    pub fn arming(&self) -> Arming {
        Arming(self.intake.clone())
    }
}

/// Arms an [`Upload`]'s intake with the file the rest of the body goes to.
#[derive(Debug, Clone)]
pub struct Arming(Option<(IntakeSlot, u64)>);

impl Arming {
    /// From now on the connection splices the body's rest into `file` (through a drain
    /// thread with a duplicate of the descriptor). Does nothing if the upload is over or no
    /// descriptor is to be had (the bytes then come through hyper as before).
    pub fn arm(&self, file: &File) {
        self.arm_with(file.try_clone().map(DrainHandle::new));
    }

    /// From now on the connection splices the body's rest into `socket` (the `rest`
    /// provider's connection to its remote, its request's head already sent), in order:
    /// [`Piece::Placed`] then means passed on. Bytes the upload yields as
    /// [`Piece::Bytes`] came before every placed byte and must be written to the socket
    /// before the upload is polled again (the thread starts at that poll's read at the
    /// earliest). Does nothing if the upload is over or no descriptor is to be had.
    pub fn arm_socket(&self, socket: BorrowedFd<'_>) {
        let sink = socket.try_clone_to_owned().map(Sink::Socket);
        self.arm_with(sink.map(DrainHandle::into_sink));
    }

    fn arm_with(&self, placing: io::Result<DrainHandle>) {
        let Some((slot, id)) = &self.0 else { return };
        let Ok(placing) = placing else { return };
        if let Some(intake) = lock(slot).as_mut().filter(|i| i.id == *id) {
            intake.placing = Some(placing);
        }
    }
}

impl<B> Drop for Upload<B> {
    /// Hands the connection back to hyper, unless bytes hyper has not counted yet may have
    /// been taken from the socket: then hyper's framing is off and the connection fails at
    /// its next read (hyper closes it), rather than read the next request from the wrong
    /// place.
    fn drop(&mut self) {
        if let Some((slot, id)) = &self.intake {
            let mut slot = lock(slot);
            match slot.as_mut().filter(|i| i.id == *id) {
                Some(intake) if intake.socket_taken_ahead() => intake.break_off(),
                Some(_) => *slot = None,
                None => {}
            }
        }
    }
}

impl<B> futures::Stream for Upload<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// The error is hyper's, or the peer's body ending early in a bypass.
    type Item = Result<Piece<Bytes>, BoxError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(bypass) = &mut this.bypass {
            return bypass.poll_next(cx);
        }
        loop {
            // Held while hyper's chunk is taken, so the stream never sees a chunk taken and
            // not yet counted.
            let mut guard = this.intake.as_ref().map(|(slot, id)| (lock(slot), *id));
            let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
            let intake = guard
                .as_mut()
                .and_then(|(slot, id)| slot.as_mut().filter(|i| i.id == *id));
            let Some(frame) = frame else {
                return Poll::Ready(None);
            };
            let frame = match frame {
                Ok(frame) => frame,
                Err(e) => {
                    // A failed splice surfaces through hyper as a body error: say what failed.
                    return Poll::Ready(Some(match intake.and_then(|i| i.failed.take()) {
                        Some(cause) => Ok(Piece::Failed(cause)),
                        None => Err(e.into()),
                    }));
                }
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers: nothing to write
            };
            let Some(intake) = intake else {
                return Poll::Ready(Some(Ok(Piece::Bytes(data))));
            };
            let len = data.len() as u64;
            intake.received += len;
            if intake.placed == 0 {
                return Poll::Ready(Some(Ok(Piece::Bytes(data))));
            }
            if intake.placed != len {
                let e = io::Error::other(format!(
                    "the connection placed {} bytes but hyper passed on {len}: the upload is out of step",
                    intake.placed
                ));
                intake.break_off();
                return Poll::Ready(Some(Ok(Piece::Failed(e))));
            }
            // The stream hands filler only for bytes already in the file.
            intake.placed = 0;
            if intake.len - intake.received >= BYPASS_FROM
                && let Some(placing) = &intake.placing
            {
                this.bypass = Some(Bypass {
                    drain: placing.drain.clone(),
                    reported: intake.received,
                    len: intake.len,
                });
            }
            return Poll::Ready(Some(Ok(placed(len))));
        }
    }
}

/// The piece reporting `len` bytes the connection put in the file.
fn placed(len: u64) -> Piece<Bytes> {
    #[cfg(test)]
    PLACED_HERE.set(PLACED_HERE.get() + len);
    Piece::Placed(len)
}

/// Whether the connection's framing is no longer hyper's to trust (an upload on it was
/// bypassed or went out of step): it closes after its answer.
pub(super) fn broken(slot: &IntakeSlot) -> bool {
    lock(slot).as_ref().is_some_and(|intake| intake.broken)
}

/// The stream's read while `slot` may hold an armed intake: filler for the body bytes the
/// drain thread has put in the file; otherwise `None` (read the socket as usual).
pub(super) fn poll_read_into_file(
    slot: &IntakeSlot,
    tcp: &TcpStream,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Option<Poll<io::Result<()>>> {
    let mut slot = lock(slot);
    let intake = slot.as_mut()?;
    if intake.broken {
        // Out of step or a failed disk: this connection's framing can no longer be trusted.
        return Some(Poll::Ready(Err(io::Error::other(
            "the connection's upload failed; closing it",
        ))));
    }
    // The body is over for hyper once the filler it has not passed on yet reaches its end
    // (it then reads on to see whether the peer closed, or for the next request).
    let handed = intake.received + intake.placed;
    let placing = intake.placing.as_mut().filter(|_| handed < intake.len)?;
    // Otherwise hyper reads for a body only when it has passed every chunk on.
    if intake.placed != 0 {
        intake.break_off();
        return Some(Poll::Ready(Err(io::Error::other(
            "hyper read again before passing on the placed bytes",
        ))));
    }
    if buf.remaining() == 0 {
        return Some(Poll::Ready(Ok(())));
    }
    // The socket holds exactly the body's next `len - handed` bytes now (see above). No
    // descriptor, pipe or thread to be had (a process at its limits): nothing was taken
    // from the socket, so hyper reads the body as usual.
    if placing
        .start(tcp.as_fd(), handed, intake.len - handed)
        .is_err()
    {
        intake.placing = None;
        return None;
    }
    let landed = match placing.drain.poll_beyond(cx, handed) {
        Poll::Pending => return Some(Poll::Pending),
        Poll::Ready(Ok(landed)) => landed,
        Poll::Ready(Err(e)) => {
            intake.break_off();
            let told = io::Error::new(e.kind(), e.to_string());
            intake.failed = Some(e);
            return Some(Poll::Ready(Err(told)));
        }
    };
    // As much filler as hyper's buffer takes (none: the peer ended the body early, and
    // hyper sees it short).
    let filler = (landed - handed).min(buf.remaining() as u64) as usize;
    buf.initialize_unfilled_to(filler);
    buf.advance(filler);
    intake.placed = filler as u64;
    Some(Poll::Ready(Ok(())))
}

#[cfg(test)]
#[path = "upload_tests.rs"]
mod tests;
