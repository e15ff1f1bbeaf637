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
//!
//! The writer arms the intake once its temp file exists ([`Arming::arm`]); until then, and
//! without a channel (HTTP/2, `oneshot` tests, a chunked body), [`Upload`] passes bytes on.

use super::FileChannel;
use super::drain::DrainHandle;
use crate::services::files::Piece;
use bytes::Bytes;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use tokio::io::ReadBuf;
use tokio::net::TcpStream;

/// Bytes placed by every intake of the process: the tests' proof that the path was taken
/// (counted in test builds only: nothing else reads it).
#[cfg(test)]
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
}

impl<B> Upload<B> {
    /// A body that is passed on as it comes (no channel, or no declared length), of
    /// `declared` bytes if that is known.
    pub fn plain(body: B, declared: Option<u64>) -> Upload<B> {
        Upload {
            body,
            intake: None,
            declared,
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
        let Some((slot, id)) = &self.0 else { return };
        let Ok(placing) = file.try_clone().map(DrainHandle::new) else {
            return;
        };
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
                intake.break_off();
                return Poll::Ready(Some(Ok(Piece::Failed(e))));
            }
            // The stream hands filler only for bytes already in the file.
            intake.placed = 0;
            return Poll::Ready(Some(Ok(Piece::Placed(len))));
        }
    }
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
    #[cfg(test)]
    PLACED_TOTAL.fetch_add(filler as u64, Ordering::Relaxed);
    Some(Poll::Ready(Ok(())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::os::unix::fs::FileExt;

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
    fn dropped_with_its_drain_started_before_the_body_is_over_the_connection_is_broken() {
        let channel = FileChannel::default();
        let (socket, _peer) = std_pair();
        let upload = channel.upload((), 100);
        upload.arming().arm(&tempfile::tempfile().unwrap());
        {
            let mut slot = intake_of(&channel);
            let placing = slot.as_mut().unwrap().placing.as_mut().unwrap();
            placing.start(socket.as_fd(), 0, 100).unwrap();
        }
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

    /// A connected pair of blocking std sockets (the first one is the receiving end).
    fn std_pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        (listener.accept().unwrap().0, peer)
    }

    /// A connected pair: the runtime's end (as the connection's stream holds it), the peer.
    async fn tokio_pair() -> (TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        (listener.accept().await.unwrap().0, peer)
    }

    /// One read of the stream while the intake may be armed, into a buffer of `room` bytes:
    /// how many filler bytes it handed (`None`: the intake stood aside).
    async fn read_filler(
        channel: &FileChannel,
        tcp: &TcpStream,
        room: usize,
    ) -> Option<io::Result<usize>> {
        let mut storage = vec![0u8; room];
        let mut buf = ReadBuf::new(&mut storage);
        let polled = futures::future::poll_fn(|cx| {
            match poll_read_into_file(&channel.intake, tcp, cx, &mut buf) {
                None => Poll::Ready(None),
                Some(Poll::Pending) => Poll::Pending,
                Some(Poll::Ready(done)) => Poll::Ready(Some(done)),
            }
        });
        let done = tokio::time::timeout(std::time::Duration::from_secs(10), polled)
            .await
            .expect("the read never finished")?;
        Some(done.map(|()| buf.filled().len()))
    }

    /// An upload of `len` bytes armed into a temp file, the runtime's end of its connection,
    /// and the peer, which has sent `sent`.
    async fn armed(
        channel: &FileChannel,
        len: u64,
        sent: &[u8],
    ) -> (TcpStream, TcpStream, Upload<()>) {
        let (tcp, mut peer) = tokio_pair().await;
        let upload = channel.upload((), len);
        upload.arming().arm(&tempfile::tempfile().unwrap());
        tokio::io::AsyncWriteExt::write_all(&mut peer, sent)
            .await
            .unwrap();
        (tcp, peer, upload)
    }

    /// What the socket holds for hyper's next read (up to 64 bytes).
    async fn still_in_the_socket(tcp: &TcpStream) -> Vec<u8> {
        let mut held = [0u8; 64];
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            tcp.readable().await.unwrap();
            tcp.try_read(&mut held)
        })
        .await
        .expect("the socket held nothing")
        .unwrap();
        held[..n].to_vec()
    }

    /// What [`Upload`] does when hyper passes the filler on.
    fn take_placed(channel: &FileChannel) {
        let mut slot = intake_of(channel);
        let intake = slot.as_mut().unwrap();
        intake.received += intake.placed;
        intake.placed = 0;
    }

    #[tokio::test]
    async fn filler_is_handed_only_for_bytes_in_the_file_and_the_next_request_stays_in_the_socket()
    {
        let channel = FileChannel::default();
        let (tcp, mut peer) = tokio_pair().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("body");
        let file = File::create(&path).unwrap();
        let _upload = channel.upload((), 10);
        _upload.arming().arm(&file);
        // "abc" came through hyper with the head; the socket has the body's other 7 bytes,
        // then the next request.
        intake_of(&channel).as_mut().unwrap().received = 3;
        file.write_all_at(b"abc", 0).unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut peer, b"0123456GET /next")
            .await
            .unwrap();
        let mut handed = 3;
        while handed < 10 {
            // A small buffer: filler comes in several reads, each one for bytes in the file.
            let n = read_filler(&channel, &tcp, 3).await.unwrap().unwrap();
            assert!(n > 0, "the body ended early at {handed}");
            let in_file = std::fs::read(&path).unwrap();
            assert_eq!(
                &in_file[handed..handed + n],
                &b"abc0123456"[handed..handed + n]
            );
            handed += n;
            take_placed(&channel);
        }
        assert_eq!(handed, 10, "never more filler than the body's length");
        assert!(
            read_filler(&channel, &tcp, 64).await.is_none(),
            "the intake stands aside"
        );
        assert_eq!(still_in_the_socket(&tcp).await, b"GET /next");
    }

    #[tokio::test]
    async fn a_drain_that_cannot_start_leaves_the_body_in_the_socket_for_hyper() {
        let channel = FileChannel::default();
        let (tcp, _peer, _upload) = armed(&channel, 10, b"0123456789").await;
        super::super::drain::REFUSE_NEXT_START.with(|refuse| refuse.set(true));
        assert!(
            read_filler(&channel, &tcp, 64).await.is_none(),
            "the intake stands aside for hyper"
        );
        assert!(intake_of(&channel).as_ref().unwrap().placing.is_none());
        assert!(
            read_filler(&channel, &tcp, 64).await.is_none(),
            "and stays aside: no second try mid-body"
        );
        assert_eq!(
            still_in_the_socket(&tcp).await,
            b"0123456789",
            "nothing was taken from the socket"
        );
    }

    #[tokio::test]
    async fn a_body_the_peer_ends_early_reads_as_the_end_for_hyper() {
        let channel = FileChannel::default();
        let (tcp, peer, _upload) = armed(&channel, 10, b"0123").await;
        drop(peer);
        let mut handed = 0;
        loop {
            match read_filler(&channel, &tcp, 64).await.unwrap().unwrap() {
                0 => break,
                n => handed += n,
            }
            take_placed(&channel);
        }
        assert_eq!(handed, 4);
    }

    #[tokio::test]
    async fn a_file_that_refuses_the_bytes_fails_the_read_and_the_upload_says_why() {
        let channel = FileChannel::default();
        let (tcp, mut peer) = tokio_pair().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("read-only");
        std::fs::write(&path, b"").unwrap();
        let _upload = channel.upload((), 10);
        // A descriptor opened for reading: the write into it fails (EBADF).
        _upload.arming().arm(&File::open(&path).unwrap());
        tokio::io::AsyncWriteExt::write_all(&mut peer, b"0123456789")
            .await
            .unwrap();
        let e = read_filler(&channel, &tcp, 64).await.unwrap().unwrap_err();
        assert!(e.to_string().contains("Bad file descriptor"), "{e}");
        let slot = intake_of(&channel);
        let intake = slot.as_ref().unwrap();
        assert!(intake.broken);
        let cause = intake.failed.as_ref().expect("kept for the upload");
        assert_eq!(cause.raw_os_error(), Some(nix::libc::EBADF), "{cause}");
    }
}
