//! Whole HTTP/1.1 chunks written to a connection's socket from outside hyper's task, while
//! hyper streams a chunked body on it: the frames of an event log's seated readers
//! (`services::event_log::seats`), written by one task for all of them.
//!
//! The chunks go between hyper's own and the body stays well framed, because a chunk is
//! written here only when hyper holds no byte it has not written: the body's reader marks
//! the slot busy ([`Slot::busy`]) before it waits for chunks to be written here, hyper's
//! next flush (which it asks of the stream only once its own buffer is empty, and does
//! after every poll of a body that had nothing more) clears it, and every write of hyper's
//! own marks it busy again. What the socket does not take of a chunk is owed: the connection writes
//! it before any later byte of hyper's, from its own task, which the seat's reader wakes.
//! The descriptor is written only under the slot's lock and while the stream is open (its
//! drop closes the slot first), so a number reused by a later connection is never written.

use bytes::{Buf, Bytes};
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::os::fd::{BorrowedFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;

/// A connection's slot for chunks written from outside hyper (shared by its stream and the
/// writers it is handed to).
#[derive(Debug, Clone, Default)]
pub struct Slot(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    /// The connection's socket while its stream is open.
    fd: Option<RawFd>,
    /// hyper has written everything it buffered (it flushed, and wrote nothing since).
    clear: bool,
    /// What the socket has not taken of a chunk written here.
    owed: VecDeque<Bytes>,
    #[cfg(test)]
    chunks: u64,
}

/// The most frames one chunk is written from.
pub const MAX_FRAMES: usize = 62;

/// What became of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Written,
    /// Part of it waits in the slot; the connection's task writes it when next polled.
    Owed,
    /// Nothing written: hyper is mid-write, the socket is full or the connection closed.
    Refused,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opened by the connection's stream on its socket.
    pub(super) fn open(&self, fd: RawFd) {
        self.lock().fd = Some(fd);
    }

    /// The stream closes or shuts its socket: nothing more is written here.
    pub(super) fn close(&self) {
        self.lock().fd = None;
    }

    /// `frames` (at most [`MAX_FRAMES`]) as one chunk of the chunked body hyper is
    /// streaming, written without waiting. The caller must know the answer on this
    /// connection is such a body (an HTTP/1.1 answer to a GET, with no length).
    pub fn send_chunk(&self, frames: &[&[u8]]) -> Sent {
        let mut state = self.lock();
        let Some(fd) = state.fd.filter(|_| state.clear && state.owed.is_empty()) else {
            return Sent::Refused;
        };
        let len: usize = frames.iter().map(|f| f.len()).sum();
        if len == 0 {
            // An empty chunk would end the body.
            return Sent::Written;
        }
        if frames.len() > MAX_FRAMES {
            return Sent::Refused;
        }
        let mut head = [0u8; 20];
        let head_len = {
            use std::io::Write;
            let mut at = &mut head[..];
            let _ = write!(at, "{len:x}\r\n");
            20 - at.len()
        };
        // One `writev`, on the stack: a thousand readers cost a thousand of these per batch.
        let mut slices = [IoSlice::new(&[]); MAX_FRAMES + 2];
        slices[0] = IoSlice::new(&head[..head_len]);
        for (slice, frame) in slices[1..].iter_mut().zip(frames) {
            *slice = IoSlice::new(frame);
        }
        slices[frames.len() + 1] = IoSlice::new(b"\r\n");
        let slices = &slices[..frames.len() + 2];
        // SAFETY: `fd` is the stream's open socket: it is closed only after the stream's
        // drop took it out of the slot, under this lock. (A descriptor of the slot's own,
        // a `dup`, would need no `unsafe` but would double every seated connection's
        // descriptors.)
        #[allow(unsafe_code)]
        let socket = unsafe { BorrowedFd::borrow_raw(fd) };
        let written = match nix::sys::uio::writev(socket, slices) {
            Ok(n) if n > 0 => n,
            _ => return Sent::Refused,
        };
        #[cfg(test)]
        {
            state.chunks += 1;
        }
        let total: usize = slices.iter().map(|s| s.len()).sum();
        if written == total {
            return Sent::Written;
        }
        // The rest is copied (rare: the socket was nearly full) and owed.
        let mut skip = written;
        for part in slices {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            state.owed.push_back(Bytes::copy_from_slice(&part[skip..]));
            skip = 0;
        }
        Sent::Owed
    }

    /// The answer's body is about to give hyper nothing more for a while (its reader takes a
    /// seat): no chunk is written here until hyper next flushes. hyper may still hold bytes
    /// it queued and has not written (the answer's head, the body's last chunk), and it
    /// touches the stream only when it writes them; it flushes once the body has nothing
    /// more, so from its next flush on everything before is on the socket.
    pub fn busy(&self) {
        self.lock().clear = false;
    }

    /// Before hyper writes: what is owed goes first, and hyper is busy from here.
    pub(super) fn poll_before_write(
        &self,
        tcp: &mut TcpStream,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_owed_then(tcp, cx, false)
    }

    /// hyper flushes, which it does only with nothing of its own left: what is owed goes
    /// out, then chunks may be written here.
    pub(super) fn poll_flush(
        &self,
        tcp: &mut TcpStream,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_owed_then(tcp, cx, true)
    }

    /// Writes what is owed, then marks whether hyper holds bytes it has not written.
    fn poll_owed_then(
        &self,
        tcp: &mut TcpStream,
        cx: &mut Context<'_>,
        clear: bool,
    ) -> Poll<io::Result<()>> {
        let mut state = self.lock();
        ready!(poll_owed(&mut state, tcp, cx))?;
        state.clear = clear;
        Poll::Ready(Ok(()))
    }

    /// A slot on `fd` as a stream leaves it after hyper's flush (clear), for tests of what
    /// writes into it.
    #[cfg(test)]
    pub(crate) fn flushed_on(fd: RawFd) -> Slot {
        let slot = Slot::default();
        {
            let mut state = slot.lock();
            state.fd = Some(fd);
            state.clear = true;
        }
        slot
    }

    /// Chunks written here so far.
    #[cfg(test)]
    pub(crate) fn chunks(&self) -> u64 {
        self.lock().chunks
    }
}

fn poll_owed(state: &mut State, tcp: &mut TcpStream, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    while let Some(front) = state.owed.front_mut() {
        let n = ready!(Pin::new(&mut *tcp).poll_write(cx, front))?;
        if n == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        front.advance(n);
        if front.is_empty() {
            state.owed.pop_front();
        }
    }
    Poll::Ready(Ok(()))
}
