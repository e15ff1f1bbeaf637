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
//! - The stream splices at most that many into a pipe, whose own thread writes them into
//!   the file at that offset ([`drain`](super::drain): a file write may block on the disk,
//!   which must never stall the runtime's threads), and hands hyper as many filler bytes,
//!   so hyper's framing moves on exactly as if it had read them and a request pipelined
//!   behind the body stays in the socket for hyper. One splice may move more than hyper's
//!   buffer takes (up to a pipe load): the rest is `ahead`, handed to hyper as filler at its
//!   next reads without a system call. hyper passes the filler on as the next chunk, which
//!   [`Upload`] recognises by its length (the intake's `placed`) and reports as
//!   [`Piece::Placed`] once the drain has put its bytes in the file.
//! - A chunk that disagrees (filler of another length, bytes while filler was due) means
//!   hyper's count and ours differ: the upload fails and the connection is closed, never a
//!   guess. Bytes hyper had buffered before the intake was armed stay ordinary chunks,
//!   written by the file service before any placed byte (they come first in the body).
//!
//! The writer arms the intake once its temp file exists ([`Arming::arm`]); until then, and
//! without a channel (HTTP/2, `oneshot` tests, a chunked body), [`Upload`] passes bytes on.

use super::FileChannel;
use super::drain::{Drain, DrainHandle, Waiter};
use crate::services::files::Piece;
use bytes::Bytes;
use nix::fcntl::{SpliceFFlags, splice};
use std::fs::File;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use tokio::io::{Interest, ReadBuf};
use tokio::net::TcpStream;

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
    /// Bytes taken from the socket that hyper has not been handed filler for yet (a splice
    /// moves more than hyper's buffer takes at once).
    ahead: u64,
    /// Where the rest goes once armed: the pipe into the file and the thread draining it.
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
            ahead: 0,
            placing: None,
            failed: None,
            broken: false,
        });
        Upload {
            body,
            intake: Some((self.intake.clone(), id)),
            landing: None,
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
}

/// A request body that reports bytes the connection placed in the file as
/// [`Piece::Placed`]; every other chunk is [`Piece::Bytes`]. Dropping it disarms the intake.
pub struct Upload<B> {
    body: B,
    intake: Option<(IntakeSlot, u64)>,
    /// A filler chunk counted and not reported yet: its length, and the body offset the
    /// drain has to reach before its bytes are in the file.
    landing: Option<(u64, u64, Arc<Drain>)>,
}

impl<B> Upload<B> {
    /// A body that is passed on as it comes (no channel, no declared length).
    pub fn plain(body: B) -> Upload<B> {
        Upload {
            body,
            intake: None,
            landing: None,
        }
    }

    /// What the writer calls with its temp file to start placing.
    pub fn arming(&self) -> Arming {
        Arming(self.intake.clone())
    }

    /// The counted filler chunk, reported once the drain has put its bytes in the file.
    fn poll_landing<E>(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Piece<Bytes>, E>>> {
        let Some((len, offset, drain)) = &self.landing else {
            return Poll::Ready(None);
        };
        let landed = ready!(drain.poll_landed(cx, Waiter::Upload, *offset));
        let len = *len;
        self.landing = None;
        Poll::Ready(Some(Ok(match landed {
            Ok(()) => Piece::Placed(len),
            Err(cause) => Piece::Failed(cause),
        })))
    }
}

/// Arms an [`Upload`]'s intake with the file the rest of the body goes to.
#[derive(Debug, Clone)]
pub struct Arming(Option<(IntakeSlot, u64)>);

impl Arming {
    /// From now on the connection splices the body's rest into `file` (through a drain
    /// thread with a duplicate of the descriptor). Does nothing if the upload is over, or no
    /// descriptor, pipe or thread is to be had (the bytes then come through hyper as before).
    pub fn arm(&self, file: &File) {
        let Some((slot, id)) = &self.0 else { return };
        let Ok(placing) = file.try_clone().and_then(DrainHandle::new) else {
            return;
        };
        if let Some(intake) = lock(slot).as_mut().filter(|i| i.id == *id) {
            intake.placing = Some(placing);
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
                Some(intake) if intake.ahead > 0 => intake.break_off(),
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
        if this.landing.is_some() {
            return this.poll_landing(cx);
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
                intake.break_off();
                return Poll::Ready(Some(Ok(Piece::Failed(e))));
            }
            intake.placed = 0;
            let Some(placing) = intake.placing.as_ref() else {
                return Poll::Ready(Some(Ok(Piece::Failed(io::Error::other(
                    "the upload was broken off before its placed bytes landed",
                )))));
            };
            // Reported once its bytes are in the file (the drain thread may still be at it).
            this.landing = Some((len, intake.received, placing.drain.clone()));
            drop(guard);
            return this.poll_landing(cx);
        }
    }
}

/// The stream's read while `slot` may hold an armed intake: a splice of the body's next
/// bytes into the drain's pipe, answered to hyper as filler; otherwise `None` (read the
/// socket as usual).
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
    if intake.placing.is_none() || intake.received + intake.placed >= intake.len {
        return None;
    }
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
    if intake.ahead == 0 {
        match place(intake, tcp, cx) {
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

/// Moves the body's next bytes (at most a pipe load) from the socket into the drain's
/// pipe, tells the drain, and counts them in `ahead`. Waits first for the drain to land the
/// last batch (the pipe is then empty, see [`super::drain`]). Pending only while nothing at all
/// has arrived; no bytes and no error means the peer ended the body early.
fn place(intake: &mut Intake, tcp: &TcpStream, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    let Some(placing) = intake.placing.as_mut() else {
        return Poll::Ready(Ok(()));
    };
    if let Err(e) = ready!(placing.poll_ready(cx)) {
        intake.break_off();
        let told = io::Error::new(e.kind(), e.to_string());
        intake.failed = Some(e);
        return Poll::Ready(Err(told));
    }
    let pipe = placing.next_pipe();
    let want = (intake.len - intake.received).min(pipe.capacity as u64) as usize;
    let splice_in = |len: usize| {
        splice(
            tcp,
            None,
            &pipe.write,
            None,
            len,
            SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK,
        )
        .map_err(io::Error::from)
    };
    // The first splice goes through the socket's readiness: the pipe is empty, so nothing
    // moved means the socket has nothing, and `try_io` may clear its readiness.
    let mut got = loop {
        match tcp.try_io(Interest::READABLE, || splice_in(want)) {
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                ready!(tcp.poll_read_ready(cx))?;
            }
            Err(e) => return Poll::Ready(Err(e)),
        }
    };
    // Later ones go around it: the pipe is filling now, and a splice that finds it full
    // fails just as one that finds the socket empty, which must not clear the socket's
    // readiness.
    while got > 0 && got < want {
        match splice_in(want - got) {
            Ok(0) => break,
            Ok(n) => got += n,
            // What moved is whole; an error shows again at the next read's first splice.
            Err(_) => break,
        }
    }
    // Nothing moved and no error: the peer ended the body early, hyper sees it short.
    if got > 0 {
        placing.landing(intake.received, got);
    }
    intake.ahead = got as u64;
    PLACED_TOTAL.fetch_add(got as u64, Ordering::Relaxed);
    Poll::Ready(Ok(()))
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
        assert!(intake_of(&channel).as_ref().unwrap().placing.is_none());
        second.arming().arm(&file);
        assert!(intake_of(&channel).as_ref().unwrap().placing.is_some());
    }

    #[test]
    fn dropped_with_bytes_hyper_has_not_counted_the_connection_is_broken() {
        let channel = FileChannel::default();
        let upload = channel.upload((), 100);
        intake_of(&channel).as_mut().unwrap().ahead = 5;
        drop(upload);
        let slot = intake_of(&channel);
        let intake = slot.as_ref().expect("kept, to fail the next read");
        assert!(intake.broken && intake.placing.is_none());
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

    /// An upload of "abc" + 7 placed bytes, armed with a file, its first chunk taken; the
    /// connection's part (spliced bytes, the drain told, filler handed) is up to the test.
    async fn armed_after_abc(
        channel: &FileChannel,
    ) -> (
        Upload<impl http_body::Body<Data = Bytes, Error = std::convert::Infallible> + Unpin>,
        File,
    ) {
        let frames = futures::stream::iter([b"abc".as_slice(), b"0123456".as_slice()].map(|b| {
            Ok::<_, std::convert::Infallible>(http_body::Frame::data(Bytes::from_static(b)))
        }));
        let mut upload = channel.upload(http_body_util::StreamBody::new(frames), 10);
        let file = tempfile::tempfile().unwrap();
        upload.arming().arm(&file);
        match upload.next().await {
            Some(Ok(Piece::Bytes(b))) => assert_eq!(&b[..], b"abc"),
            other => panic!("{other:?}"),
        }
        intake_of(channel).as_mut().unwrap().placed = 7;
        (upload, file)
    }

    #[tokio::test]
    async fn the_placed_chunk_is_reported_once_its_bytes_are_in_the_file() {
        let channel = FileChannel::default();
        let (mut upload, file) = armed_after_abc(&channel).await;
        {
            let mut slot = intake_of(&channel);
            let placing = slot.as_mut().unwrap().placing.as_mut().unwrap();
            assert_eq!(
                nix::unistd::write(&placing.next_pipe().write, b"0123456").unwrap(),
                7
            );
            placing.landing(3, 7);
        }
        match upload.next().await {
            Some(Ok(Piece::Placed(7))) => {}
            other => panic!("{other:?}"),
        }
        let mut landed = [0u8; 7];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut landed, 3).unwrap();
        assert_eq!(&landed, b"0123456");
        let slot = intake_of(&channel);
        let intake = slot.as_ref().unwrap();
        assert_eq!((intake.received, intake.placed), (10, 0));
    }

    #[tokio::test]
    async fn a_placed_chunk_the_file_did_not_get_fails_the_upload() {
        let channel = FileChannel::default();
        let (mut upload, _file) = armed_after_abc(&channel).await;
        // The drain is told of 7 bytes the pipe does not hold (as a failed disk would fail).
        intake_of(&channel)
            .as_mut()
            .unwrap()
            .placing
            .as_mut()
            .unwrap()
            .landing(3, 7);
        match upload.next().await {
            Some(Ok(Piece::Failed(e))) => assert!(e.to_string().contains("ran dry"), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
