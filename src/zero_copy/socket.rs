//! A file answer whose bytes come from another socket: the `rest` provider's read from its
//! remote engine. The remote's answer body is a known count of bytes on a connected socket;
//! like a file answer ([`FileChannel::body`]), the answer registers it on its connection and
//! gives hyper placeholder bytes, and when hyper writes them the connection moves as many
//! bytes from the remote's socket through a pipe into its own with `splice(2)`, never
//! through the process's memory. Both sockets are non-blocking and on the runtime (no disk
//! is involved, so nothing here blocks a thread, unlike an upload's drain).
//!
//! A remote that stands still for the body's `idle` bound ends the answer with an error, as
//! one that closes before its length does: hyper then closes the connection, and the client
//! sees a short body, never a complete one and never a hang. Without a channel (HTTP/2, a
//! `oneshot` test) or a pipe, the body is read into buffers as it comes ([`SocketBody::into_stream`]),
//! with the same bounds.

use super::pipe::Pipe;
use super::{FileChannel, PLACEHOLDER, PLACEHOLDER_LEN};
use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::BoxStream;
use nix::fcntl::{SpliceFFlags, splice};
use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncReadExt, Interest};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// What one read of [`SocketBody::into_stream`] takes at most.
const READ_CHUNK: usize = 256 * 1024;

#[cfg(test)]
thread_local! {
    /// Bytes spliced into connections by this thread, for the tests to see that a body took
    /// this path rather than the buffered one. Per thread, not per process: a test's
    /// servers run on its own (current-thread) runtime, so another test splicing at the
    /// same time cannot make its count.
    static SPLICED_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bytes spliced by this thread so far (see `SPLICED_HERE`).
#[cfg(test)]
pub(crate) fn spliced_here() -> u64 {
    SPLICED_HERE.get()
}

/// A body of `len` bytes on a connected socket: `early` (read with the answer's head) and
/// the rest still on `stream`.
#[derive(Debug)]
pub struct SocketBody {
    stream: TcpStream,
    early: Bytes,
    len: u64,
    /// The longest the socket may stay silent while the body is not all there.
    idle: Duration,
}

impl SocketBody {
    /// `len` bytes, the first of them `early` (anything past `len` there is not the body's).
    pub fn new(stream: TcpStream, mut early: Vec<u8>, len: u64, idle: Duration) -> SocketBody {
        early.truncate(usize::try_from(len).unwrap_or(usize::MAX));
        SocketBody {
            stream,
            early: early.into(),
            len,
            idle,
        }
    }

    /// The bytes still on the socket.
    fn rest(&self) -> u64 {
        self.len - self.early.len() as u64
    }

    /// The body as buffers, for whoever cannot splice (another front, a plugin, HTTP/2): an
    /// error when the socket is silent for `idle` or closes before `len`.
    pub fn into_stream(self) -> BoxStream<'static, io::Result<Bytes>> {
        let left = self.rest();
        let first = futures::stream::iter((!self.early.is_empty()).then_some(Ok(self.early)));
        let reads = futures::stream::unfold(
            (self.stream, left, self.idle),
            |(mut stream, left, idle)| async move {
                if left == 0 {
                    return None;
                }
                let mut buffer = BytesMut::zeroed(READ_CHUNK.min(left as usize));
                let read = match tokio::time::timeout(idle, stream.read(&mut buffer)).await {
                    Err(_) => Err(silent(idle)),
                    Ok(Ok(0)) => Err(short(left)),
                    Ok(Ok(n)) => Ok(n),
                    Ok(Err(e)) => Err(e),
                };
                Some(match read {
                    Ok(n) => {
                        buffer.truncate(n);
                        (Ok(buffer.freeze()), (stream, left - n as u64, idle))
                    }
                    // Ended: nothing more is read after an error.
                    Err(e) => (Err(e), (stream, 0, idle)),
                })
            },
        );
        first.chain(reads).boxed()
    }
}

fn silent(idle: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "the body's socket was silent for {:.1} s",
            idle.as_secs_f64()
        ),
    )
}

fn short(left: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the body's socket closed {left} bytes before its end"),
    )
}

/// The body of an answer whose bytes are `body`: spliced by the connection (`channel`)
/// from the socket, else read as it comes.
pub fn socket_body(channel: Option<FileChannel>, body: SocketBody) -> Body {
    match channel {
        Some(channel) if body.rest() > 0 => channel.socket_body(body),
        _ => Body::from_stream(body.into_stream()),
    }
}

/// One connection's socket slot (beside its file slot): the body being spliced, if any.
pub(super) type Slot = Arc<Mutex<Option<Splice>>>;

/// A body being passed from `remote` to the connection: `in_pipe` bytes wait in the pipe,
/// `left` more are still to come from the remote.
#[derive(Debug)]
pub(super) struct Splice {
    remote: TcpStream,
    read: OwnedFd,
    write: OwnedFd,
    capacity: usize,
    in_pipe: usize,
    left: u64,
    idle: Duration,
    /// Since when the remote has been waited for (set at the first wait, cleared by bytes).
    waiting: Option<Pin<Box<Sleep>>>,
}

impl FileChannel {
    /// A body of `body`'s early bytes, then placeholders that this connection's stream
    /// replaces by the rest spliced from the socket. Replaces a file or socket an earlier
    /// answer registered and never sent; without a pipe the body is read as it comes.
    fn socket_body(&self, body: SocketBody) -> Body {
        let rest = body.rest();
        let Pipe {
            read,
            write,
            capacity,
        } = match Pipe::new() {
            Ok(pipe) => pipe,
            Err(e) => {
                tracing::debug!("no pipe to splice a body through, read instead: {e}");
                return Body::from_stream(body.into_stream());
            }
        };
        // One body per connection at a time: placeholder bytes must find this one.
        *self.job.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.splice.lock().unwrap_or_else(|e| e.into_inner()) = Some(Splice {
            remote: body.stream,
            read,
            write,
            capacity,
            in_pipe: 0,
            left: rest,
            idle: body.idle,
            waiting: None,
        });
        let early = (!body.early.is_empty()).then_some(Ok::<_, io::Error>(body.early));
        let chunks = (0..rest.div_ceil(PLACEHOLDER_LEN as u64)).map(move |i| {
            let n = (rest - i * PLACEHOLDER_LEN as u64).min(PLACEHOLDER_LEN as u64) as usize;
            Ok(Bytes::from_static(&PLACEHOLDER[..n]))
        });
        Body::from_stream(futures::stream::iter(early.into_iter().chain(chunks)))
    }
}

/// Sends up to `want` bytes of the slot's body to `tcp`; `None` when the slot holds none
/// (the placeholder bytes are then a file's).
pub(super) fn poll_send(
    slot: &Slot,
    tcp: &TcpStream,
    cx: &mut Context<'_>,
    want: usize,
) -> Option<Poll<io::Result<usize>>> {
    let mut held = slot.lock().unwrap_or_else(|e| e.into_inner());
    let splice = held.as_mut()?;
    let sent = splice.poll_send(tcp, cx, want);
    let over = match &sent {
        Poll::Ready(Ok(_)) => splice.in_pipe == 0 && splice.left == 0,
        Poll::Ready(Err(_)) => true,
        Poll::Pending => false,
    };
    if over {
        // Closes the remote's connection: the body is all sent, or cannot be.
        *held = None;
    }
    Some(sent)
}

impl Splice {
    /// Moves what the pipe holds to `tcp` (at most `want` bytes), first filling it from
    /// the remote when it is empty.
    fn poll_send(
        &mut self,
        tcp: &TcpStream,
        cx: &mut Context<'_>,
        want: usize,
    ) -> Poll<io::Result<usize>> {
        loop {
            if self.in_pipe > 0 {
                return self.poll_out(tcp, cx, want);
            }
            if self.left == 0 {
                return Poll::Ready(Err(io::Error::other(
                    "a socket answer is longer than its body",
                )));
            }
            ready!(self.poll_in(cx))?;
        }
    }

    fn poll_out(
        &mut self,
        tcp: &TcpStream,
        cx: &mut Context<'_>,
        want: usize,
    ) -> Poll<io::Result<usize>> {
        let want = want.min(self.in_pipe);
        loop {
            ready!(tcp.poll_write_ready(cx))?;
            // `try_io` clears the socket's readiness on `WouldBlock`: the pipe holds bytes,
            // so only the socket can be full.
            let moved = tcp.try_io(Interest::WRITABLE, || {
                splice(&self.read, None, tcp, None, want, flags()).map_err(io::Error::from)
            });
            match moved {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
                Ok(0) => return Poll::Ready(Err(io::Error::other("the pipe ran dry"))),
                Ok(n) => {
                    self.in_pipe -= n;
                    #[cfg(test)]
                    SPLICED_HERE.set(SPLICED_HERE.get() + n as u64);
                    return Poll::Ready(Ok(n));
                }
            }
        }
    }

    /// Fills the empty pipe from the remote: ready once some bytes moved.
    fn poll_in(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let want = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(self.capacity);
        loop {
            if self.remote.poll_read_ready(cx)?.is_pending() {
                let idle = self.idle;
                let since = self
                    .waiting
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                ready!(since.as_mut().poll(cx));
                return Poll::Ready(Err(silent(idle)));
            }
            // The pipe is empty, so only the remote can have nothing for us.
            let moved = self.remote.try_io(Interest::READABLE, || {
                splice(&self.remote, None, &self.write, None, want, flags())
                    .map_err(io::Error::from)
            });
            match moved {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
                Ok(0) => return Poll::Ready(Err(short(self.left))),
                Ok(n) => {
                    self.in_pipe = n;
                    self.left -= n as u64;
                    self.waiting = None;
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

fn flags() -> SpliceFFlags {
    SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK
}

#[cfg(test)]
#[path = "socket_tests.rs"]
mod tests;
