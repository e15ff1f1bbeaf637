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
//! - The stream splices at most that many into the file at that offset and hands hyper as
//!   many filler bytes, so hyper's framing moves on exactly as if it had read them and a
//!   request pipelined behind the body stays in the socket for hyper. One splice may move
//!   more than hyper's buffer takes (up to [`MAX_PLACE`]): the rest is `ahead`, handed to
//!   hyper as filler at its next reads without a system call. hyper passes the
//!   filler on as the next chunk, which [`Upload`] recognises by its length (the intake's
//!   `placed`) and reports as [`Piece::Placed`] instead of bytes.
//! - A chunk that disagrees (filler of another length, bytes while filler was due) means
//!   hyper's count and ours differ: the upload fails and the connection is closed, never a
//!   guess. Bytes hyper had buffered before the intake was armed stay ordinary chunks,
//!   written by the file service before any placed byte (they come first in the body).
//!
//! The writer arms the intake once its temp file exists ([`Arming::arm`]); until then, and
//! without a channel (HTTP/2, `oneshot` tests, a chunked body), [`Upload`] passes bytes on.

use super::FileChannel;
use crate::services::files::Piece;
use bytes::Bytes;
use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use tokio::io::{Interest, ReadBuf};
use tokio::net::TcpStream;

/// The pipe a connection splices through is asked for this much room (the kernel's default
/// limit for an unprivileged process); a smaller pipe only means more calls.
const PIPE_SIZE: i32 = 1024 * 1024;

/// The most one read moves from the socket into the file (hyper's buffer may take less at a
/// time; the rest is handed to it as filler at its next reads, without a system call). One
/// pipe load: the write into the file blocks the runtime's thread, and a disk under
/// write-back pressure can make that slow, so each read does little of it.
const MAX_PLACE: u64 = 1024 * 1024;

/// Bytes placed by every intake of the process: the tests' proof that the path was taken.
pub(crate) static PLACED_TOTAL: AtomicU64 = AtomicU64::new(0);

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
    /// Bytes already in the file that hyper has not been handed filler for yet (a splice
    /// moves more than hyper's buffer takes at once).
    ahead: u64,
    /// Where the rest goes once armed.
    file: Option<File>,
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
            ahead: 0,
            file: None,
            failed: None,
            broken: false,
        });
        Upload {
            body,
            intake: Some((self.intake.clone(), id)),
        }
    }
}

/// A request body that reports bytes the connection placed in the file as
/// [`Piece::Placed`]; every other chunk is [`Piece::Bytes`]. Dropping it disarms the intake.
pub struct Upload<B> {
    body: B,
    intake: Option<(IntakeSlot, u64)>,
}

impl<B> Upload<B> {
    /// A body that is passed on as it comes (no channel, no declared length).
    pub fn plain(body: B) -> Upload<B> {
        Upload { body, intake: None }
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
    /// From now on the connection splices the body's rest into `file` (a duplicate of the
    /// descriptor is kept). Does nothing if the upload is over or the descriptor cannot be
    /// duplicated (the bytes then come through hyper as before).
    pub fn arm(&self, file: &File) {
        let Some((slot, id)) = &self.0 else { return };
        let Ok(file) = file.try_clone() else { return };
        if let Some(intake) = lock(slot).as_mut().filter(|i| i.id == *id) {
            intake.file = Some(file);
        }
    }
}

impl<B> Drop for Upload<B> {
    /// Hands the connection back to hyper, unless bytes hyper has not counted yet were taken
    /// from the socket: then hyper's framing is off and the connection fails at its next
    /// read (hyper closes it), rather than read the next request from the wrong place.
    fn drop(&mut self) {
        if let Some((slot, id)) = &self.intake {
            let mut slot = lock(slot);
            match slot.as_mut().filter(|i| i.id == *id) {
                Some(intake) if intake.ahead > 0 => {
                    intake.file = None;
                    intake.broken = true;
                }
                Some(_) => *slot = None,
                None => {}
            }
        }
    }
}

impl<B> futures::Stream for Upload<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    type Item = Result<Piece<Bytes>, B::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
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
                        None => Err(e),
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
                intake.file = None;
                intake.broken = true;
                return Poll::Ready(Some(Ok(Piece::Failed(e))));
            }
            intake.placed = 0;
            return Poll::Ready(Some(Ok(Piece::Placed(len))));
        }
    }
}

/// A connection's pipe between socket and file, made at its first upload.
#[derive(Debug)]
pub(super) struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
        // A bigger pipe moves more per call; the default (64 KiB) still works.
        let _ = fcntl(&write, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
        Ok(Pipe { read, write })
    }
}

/// The stream's read while `slot` may hold an armed intake: a splice of the body's rest
/// into its file, answered to hyper as filler; otherwise `None` (read the socket as usual).
pub(super) fn poll_read_into_file(
    slot: &IntakeSlot,
    tcp: &TcpStream,
    pipe: &mut Option<Pipe>,
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
    if intake.file.is_none() || intake.received + intake.placed >= intake.len {
        return None;
    }
    // Otherwise hyper reads for a body only when it has passed every chunk on.
    if intake.placed != 0 {
        intake.file = None;
        intake.broken = true;
        return Some(Poll::Ready(Err(io::Error::other(
            "hyper read again before passing on the placed bytes",
        ))));
    }
    if buf.remaining() == 0 {
        return Some(Poll::Ready(Ok(())));
    }
    if intake.ahead == 0 {
        if pipe.is_none() {
            match Pipe::new() {
                Ok(made) => *pipe = Some(made),
                Err(_) => {
                    // No pipe (out of descriptors): the rest comes through hyper.
                    intake.file = None;
                    return None;
                }
            }
        }
        let want = (intake.len - intake.received).min(MAX_PLACE) as usize;
        match place(intake, tcp, pipe, cx, want) {
            Poll::Ready(Ok(())) => {}
            other => return Some(other),
        }
    }
    // Hand hyper as much filler as its buffer takes; the rest is handed at its next reads.
    let filler = intake.ahead.min(buf.remaining() as u64) as usize;
    buf.initialize_unfilled_to(filler);
    buf.advance(filler);
    intake.ahead -= filler as u64;
    intake.placed = filler as u64;
    Some(Poll::Ready(Ok(())))
}

/// Moves up to `want` bytes from the socket into the intake's file, after what it already
/// holds, and counts them in `ahead`. Pending only while nothing at all has arrived; no
/// bytes and no error means the peer ended the body early.
fn place(
    intake: &mut Intake,
    tcp: &TcpStream,
    pipe_slot: &mut Option<Pipe>,
    cx: &mut Context<'_>,
    want: usize,
) -> Poll<io::Result<()>> {
    let (Some(pipe), Some(file)) = (pipe_slot.as_ref(), intake.file.as_ref()) else {
        return Poll::Ready(Ok(()));
    };
    let mut got = 0usize;
    while got < want {
        let into_pipe = || {
            splice(
                tcp,
                None,
                &pipe.write,
                None,
                (want - got).min(PIPE_SIZE as usize),
                SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK,
            )
            .map_err(io::Error::from)
        };
        let moved = match tcp.try_io(Interest::READABLE, into_pipe) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if got > 0 {
                    break;
                }
                // `try_io` cleared the readiness; wait for more to arrive.
                ready!(tcp.poll_read_ready(cx))?;
                continue;
            }
            Err(e) => return Poll::Ready(Err(e)),
        };
        if moved == 0 {
            break; // the peer ended the body early: hyper sees it short and says so
        }
        let offset = intake.received + intake.placed + got as u64;
        if let Err(e) = drain(pipe, file, offset, moved) {
            // The pipe may still hold bytes: it is not reused.
            *pipe_slot = None;
            intake.file = None;
            intake.broken = true;
            let told = io::Error::new(e.kind(), e.to_string());
            intake.failed = Some(e);
            return Poll::Ready(Err(told));
        }
        got += moved;
    }
    intake.ahead = got as u64;
    PLACED_TOTAL.fetch_add(got as u64, Ordering::Relaxed);
    Poll::Ready(Ok(()))
}

/// Moves `len` bytes from the pipe into `file` at `offset`. A file system that cannot take
/// a splice gets them through a small buffer instead.
fn drain(pipe: &Pipe, file: &File, offset: u64, len: usize) -> io::Result<()> {
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
            Ok(0) => {
                return Err(io::Error::other(
                    "the pipe ran dry before the file got its bytes",
                ));
            }
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
        let n = nix::unistd::read(&pipe.read, &mut buffer[..want])?;
        if n == 0 {
            return Err(io::Error::other(
                "the pipe ran dry before the file got its bytes",
            ));
        }
        file.write_all_at(&buffer[..n], offset)?;
        offset += n as u64;
        left -= n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn intake_of(channel: &FileChannel) -> MutexGuard<'_, Option<Intake>> {
        lock(&channel.intake)
    }

    #[test]
    fn an_arming_outliving_its_upload_never_arms_the_next() {
        let channel = FileChannel::default();
        let file = tempfile::tempfile().unwrap();
        let first = channel.upload((), 10);
        let stale = first.arming();
        drop(first);
        assert!(
            intake_of(&channel).is_none(),
            "a finished upload leaves no intake"
        );
        let second = channel.upload((), 10);
        stale.arm(&file);
        assert!(intake_of(&channel).as_ref().unwrap().file.is_none());
        second.arming().arm(&file);
        assert!(intake_of(&channel).as_ref().unwrap().file.is_some());
    }

    #[test]
    fn dropped_with_bytes_hyper_has_not_counted_the_connection_is_broken() {
        let channel = FileChannel::default();
        let upload = channel.upload((), 100);
        intake_of(&channel).as_mut().unwrap().ahead = 5;
        drop(upload);
        let slot = intake_of(&channel);
        let intake = slot.as_ref().expect("kept, to fail the next read");
        assert!(intake.broken && intake.file.is_none());
    }

    #[tokio::test]
    async fn a_chunk_of_another_length_than_the_placed_one_fails_the_upload() {
        let channel = FileChannel::default();
        let body = http_body_util::Full::new(Bytes::from_static(b"0123456789"));
        let mut upload = channel.upload(body, 10);
        // The connection says it placed 4 bytes; hyper passes on 10.
        intake_of(&channel).as_mut().unwrap().placed = 4;
        match upload.next().await {
            Some(Ok(Piece::Failed(e))) => assert!(e.to_string().contains("out of step"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(intake_of(&channel).as_ref().unwrap().broken);
    }

    #[tokio::test]
    async fn the_placed_chunk_is_reported_as_placed_and_bytes_as_bytes() {
        let channel = FileChannel::default();
        let frames = futures::stream::iter([b"abc".as_slice(), b"0123456".as_slice()].map(|b| {
            Ok::<_, std::convert::Infallible>(http_body::Frame::data(Bytes::from_static(b)))
        }));
        let mut upload = channel.upload(http_body_util::StreamBody::new(frames), 10);
        match upload.next().await {
            Some(Ok(Piece::Bytes(b))) => assert_eq!(&b[..], b"abc"),
            other => panic!("{other:?}"),
        }
        intake_of(&channel).as_mut().unwrap().placed = 7;
        match upload.next().await {
            Some(Ok(Piece::Placed(7))) => {}
            other => panic!("{other:?}"),
        }
        let slot = intake_of(&channel);
        let intake = slot.as_ref().unwrap();
        assert_eq!((intake.received, intake.placed), (10, 0));
    }
}
