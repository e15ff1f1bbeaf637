//! The upload's handover with hyper, piece by piece: arming, filler only for bytes in the
//! file, the drain's fallbacks and errors, and the bypass past `BYPASS_FROM`.

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
async fn armed(channel: &FileChannel, len: u64, sent: &[u8]) -> (TcpStream, TcpStream, Upload<()>) {
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
async fn filler_is_handed_only_for_bytes_in_the_file_and_the_next_request_stays_in_the_socket() {
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

type Chunk = Result<http_body::Frame<Bytes>, std::convert::Infallible>;
type HandFed = http_body_util::StreamBody<futures::channel::mpsc::UnboundedReceiver<Chunk>>;

/// An upload of `len` declared bytes armed into the file at `path`, whose hyper body
/// yields what the test sends on the returned sender (hyper's chunks, by hand).
fn upload_fed_by_hand(
    channel: &FileChannel,
    len: u64,
    path: &std::path::Path,
) -> (
    Upload<HandFed>,
    futures::channel::mpsc::UnboundedSender<Chunk>,
) {
    let (hyper, chunks) = futures::channel::mpsc::unbounded();
    let upload = channel.upload(http_body_util::StreamBody::new(chunks), len);
    upload.arming().arm(&File::create(path).unwrap());
    (upload, hyper)
}

/// The peer sends `bytes` (from a task of its own, then it is dropped: the body ends there);
/// hyper's first read gets filler for what the thread put in the file and passes it on as
/// a chunk, which the upload takes next. Past `BYPASS_FROM` it then follows the thread.
async fn hand_over_the_first_chunk(
    channel: &FileChannel,
    tcp: &TcpStream,
    mut peer: TcpStream,
    bytes: Vec<u8>,
    hyper: &futures::channel::mpsc::UnboundedSender<Chunk>,
) {
    tokio::spawn(async move {
        tokio::io::AsyncWriteExt::write_all(&mut peer, &bytes)
            .await
            .unwrap();
    });
    let first = read_filler(channel, tcp, 64 * 1024).await.unwrap().unwrap();
    hyper
        .unbounded_send(Ok(http_body::Frame::data(Bytes::from(vec![0; first]))))
        .unwrap();
}

#[tokio::test]
async fn past_bypass_from_the_upload_follows_the_thread_and_leaves_the_connection_broken() {
    let channel = FileChannel::default();
    let (tcp, peer) = tokio_pair().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large");
    let len = BYPASS_FROM as usize + 1024 * 1024 + 5;
    let (mut upload, hyper) = upload_fed_by_hand(&channel, len as u64, &path);
    let bytes = crate::zero_copy::tests::pattern(len);
    hand_over_the_first_chunk(&channel, &tcp, peer, bytes.clone(), &hyper).await;
    // Every later piece comes from the thread: hyper is never asked again (its channel
    // stays open and empty, so asking it would wait for ever).
    let mut reported = 0;
    let pieces = async {
        while let Some(piece) = upload.next().await {
            match piece {
                Ok(Piece::Placed(run)) => reported += run,
                other => panic!("{other:?}"),
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), pieces)
        .await
        .expect("the upload waited for hyper");
    assert_eq!(reported, len as u64, "the whole body, reported placed once");
    assert!(upload.bypass.is_some());
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert!(!channel.closing(), "not before the upload ends");
    drop(upload);
    assert!(
        channel.closing(),
        "hyper's count is behind: the connection fails its next read, and hyper closes it"
    );
}

#[tokio::test]
async fn past_bypass_from_a_body_the_peer_cuts_off_is_the_body_s_error() {
    let channel = FileChannel::default();
    let (tcp, peer) = tokio_pair().await;
    let dir = tempfile::tempdir().unwrap();
    let len = BYPASS_FROM as usize + 1024 * 1024;
    let (mut upload, hyper) = upload_fed_by_hand(&channel, len as u64, &dir.path().join("cut"));
    let half = crate::zero_copy::tests::pattern(len / 2);
    hand_over_the_first_chunk(&channel, &tcp, peer, half, &hyper).await;
    let mut reported = 0;
    let error = loop {
        match upload.next().await.expect("an error, not the body's end") {
            Ok(Piece::Placed(run)) => reported += run,
            Ok(other) => panic!("{other:?}"),
            Err(e) => break e,
        }
    };
    assert!(upload.bypass.is_some());
    assert_eq!(reported, len as u64 / 2, "everything the peer sent");
    let kind = error.downcast_ref::<io::Error>().map(io::Error::kind);
    assert_eq!(kind, Some(io::ErrorKind::UnexpectedEof), "{error}");
}

#[tokio::test]
async fn short_of_bypass_from_the_upload_keeps_asking_hyper() {
    let channel = FileChannel::default();
    let (tcp, mut peer) = tokio_pair().await;
    let dir = tempfile::tempdir().unwrap();
    let len = BYPASS_FROM as usize;
    let (mut upload, hyper) = upload_fed_by_hand(&channel, len as u64, &dir.path().join("f"));
    tokio::io::AsyncWriteExt::write_all(&mut peer, b"0123")
        .await
        .unwrap();
    let first = read_filler(&channel, &tcp, 64).await.unwrap().unwrap();
    hyper
        .unbounded_send(Ok(http_body::Frame::data(Bytes::from(vec![0; first]))))
        .unwrap();
    assert!(matches!(upload.next().await, Some(Ok(Piece::Placed(4)))));
    assert!(upload.bypass.is_none(), "under BYPASS_FROM bytes were left");
}

/// A waker that records that it was woken.
struct Woken(std::sync::atomic::AtomicBool);

impl futures::task::ArcWake for Woken {
    fn wake_by_ref(woken: &Arc<Self>) {
        woken.0.store(true, Ordering::SeqCst);
    }
}

fn recording_waker() -> (Arc<Woken>, std::task::Waker) {
    let woken = Arc::new(Woken(std::sync::atomic::AtomicBool::new(false)));
    (woken.clone(), futures::task::waker(woken))
}

#[tokio::test]
async fn past_bypass_from_a_read_of_hyper_never_takes_the_upload_s_wake_up() {
    let channel = FileChannel::default();
    let (tcp, mut peer) = tokio_pair().await;
    let dir = tempfile::tempdir().unwrap();
    let len = BYPASS_FROM + 2 * 1024 * 1024;
    let (mut upload, hyper) = upload_fed_by_hand(&channel, len, &dir.path().join("f"));
    tokio::io::AsyncWriteExt::write_all(&mut peer, &[7; 64])
        .await
        .unwrap();
    let first = read_filler(&channel, &tcp, 64).await.unwrap().unwrap();
    assert_eq!(first, 64, "one segment, taken whole");
    hyper
        .unbounded_send(Ok(http_body::Frame::data(Bytes::from(vec![0; 64]))))
        .unwrap();
    assert!(matches!(upload.next().await, Some(Ok(Piece::Placed(64)))));
    assert!(upload.bypass.is_some());
    // The upload waits for the thread; then hyper reads once more (it may: it was asked
    // for the body before) and waits for the thread too, registering after the upload.
    let (upload_woken, upload_waker) = recording_waker();
    let polled = upload.poll_next_unpin(&mut Context::from_waker(&upload_waker));
    assert!(polled.is_pending(), "{polled:?}");
    let (_, hyper_waker) = recording_waker();
    let mut room = [0u8; 64];
    let mut buf = ReadBuf::new(&mut room);
    let read = poll_read_into_file(
        &channel.intake,
        &tcp,
        &mut Context::from_waker(&hyper_waker),
        &mut buf,
    );
    assert!(matches!(read, Some(Poll::Pending)), "{read:?}");
    // The rest of the body (the thread wakes the upload per run of landed bytes and at the
    // end): the thread places it and must wake the upload, not only hyper.
    tokio::io::AsyncWriteExt::write_all(&mut peer, &vec![7; len as usize - 64])
        .await
        .unwrap();
    for _ in 0..500 {
        if upload_woken.0.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the upload was never woken: hyper's read took its place");
}
