//! The drain thread against real sockets and files: offsets, early ends, the fallback
//! through memory, failures, abandonment, and a socket as the sink.

use super::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A connected pair: the receiving end non-blocking (as the runtime holds it), the peer.
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (socket, _) = listener.accept().unwrap();
    socket.set_nonblocking(true).unwrap();
    (socket, peer)
}

/// Waits until the drain is over or failed: where it got, or its error.
fn outcome(drain: &Drain) -> io::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if drain.failed.load(Ordering::Acquire) {
            return Err(drain.error());
        }
        if drain.over.load(Ordering::Acquire) {
            return Ok(drain.landed.load(Ordering::Acquire));
        }
        assert!(Instant::now() < deadline, "the drain never ended");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn the_body_lands_at_its_offset_and_what_follows_stays_in_the_socket() {
    let (socket, mut peer) = pair();
    let mut file = tempfile::tempfile().unwrap();
    file.write_all_at(b"abc", 0).unwrap();
    let mut handle = DrainHandle::new(file.try_clone().unwrap());
    handle.start(socket.as_fd(), 3, 7).unwrap();
    peer.write_all(b"defg").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    peer.write_all(b"hijGET /next").unwrap();
    assert_eq!(outcome(&handle.drain).unwrap(), 10);
    let mut all = String::new();
    file.read_to_string(&mut all).unwrap();
    assert_eq!(all, "abcdefghij");
    socket.set_nonblocking(false).unwrap();
    let mut next = [0u8; 9];
    (&socket).read_exact(&mut next).unwrap();
    assert_eq!(&next, b"GET /next");
}

/// A waiting drain asks for a batch (`low_water`), never more than is due, and the socket
/// is as the runtime left it (mark 1) by the time the drain says it is over.
#[test]
fn a_waiting_drain_asks_for_a_batch_and_puts_the_mark_back_before_it_is_over() {
    use super::super::low_water::{BATCH, tests::mark};
    let (socket, mut peer) = pair();
    let len = 4 * 1024 * 1024;
    let mut handle = DrainHandle::new(tempfile::tempfile().unwrap());
    handle.start(socket.as_fd(), 0, len as u64).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while mark(&socket) != BATCH as i32 {
        assert!(Instant::now() < deadline, "the waiting drain set no mark");
        std::thread::sleep(Duration::from_millis(1));
    }
    peer.write_all(&vec![1u8; len - 100]).unwrap();
    while mark(&socket) != 100 {
        assert!(
            Instant::now() < deadline,
            "the last 100 bytes were not asked for alone"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    peer.write_all(&[2u8; 100]).unwrap();
    assert_eq!(outcome(&handle.drain).unwrap(), len as u64);
    assert_eq!(mark(&socket), 1);
}

#[test]
fn a_socket_sink_gets_the_body_in_order_and_what_follows_stays_in_the_source() {
    let (socket, mut peer) = pair();
    let (out, mut far) = pair();
    let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut handle =
        DrainHandle::into_sink(Sink::Socket(out.as_fd().try_clone_to_owned().unwrap()));
    handle.start(socket.as_fd(), 5, bytes.len() as u64).unwrap();
    let sent = bytes.clone();
    // More than the socket buffers hold: the thread waits for room on the far side.
    let writer = std::thread::spawn(move || {
        peer.write_all(&sent).unwrap();
        peer.write_all(b"GET /next").unwrap();
        peer
    });
    let mut got = vec![0u8; bytes.len()];
    far.read_exact(&mut got).unwrap();
    assert!(got == bytes);
    assert_eq!(outcome(&handle.drain).unwrap(), 5 + bytes.len() as u64);
    let _peer = writer.join().unwrap();
    socket.set_nonblocking(false).unwrap();
    let mut next = [0u8; 9];
    (&socket).read_exact(&mut next).unwrap();
    assert_eq!(&next, b"GET /next");
}

#[test]
fn a_body_the_peer_ends_early_is_over_where_it_ended() {
    let (socket, mut peer) = pair();
    let handle_file = tempfile::tempfile().unwrap();
    let mut handle = DrainHandle::new(handle_file);
    handle.start(socket.as_fd(), 0, 100).unwrap();
    peer.write_all(b"0123").unwrap();
    drop(peer);
    assert_eq!(outcome(&handle.drain).unwrap(), 4);
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
    let (socket, mut peer) = pair();
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut handle = DrainHandle::new(file);
    handle.start(socket.as_fd(), 0, bytes.len() as u64).unwrap();
    peer.write_all(&bytes).unwrap();
    assert_eq!(outcome(&handle.drain).unwrap(), bytes.len() as u64);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_failed_write_stops_the_drain_with_the_disks_error_for_every_asker() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("read-only");
    std::fs::write(&path, b"").unwrap();
    let (socket, mut peer) = pair();
    // A descriptor opened for reading: the write into it fails (EBADF).
    let mut handle = DrainHandle::new(File::open(&path).unwrap());
    handle.start(socket.as_fd(), 0, 10).unwrap();
    peer.write_all(b"0123456789").unwrap();
    let first = outcome(&handle.drain).unwrap_err();
    let again = handle.drain.error();
    assert_eq!(first.raw_os_error(), Some(nix::libc::EBADF), "{first}");
    assert_eq!(again.raw_os_error(), first.raw_os_error());
}

#[test]
fn a_drain_thread_that_unwinds_stops_the_drain_rather_than_leave_it_waited_for() {
    let drain = Arc::new(Drain::default());
    let thread_drain = drain.clone();
    let unwound = std::thread::spawn(move || {
        let _guard = thread_drain.stopped_if_it_unwinds();
        panic!("a drain thread that unwinds");
    })
    .join();
    assert!(unwound.is_err());
    let e = drain.state(0).expect("stopped").unwrap_err();
    assert!(e.to_string().contains("drain thread stopped"), "{e}");
    // A thread that ends normally leaves the drain as it was.
    let calm = Arc::new(Drain::default());
    let thread_calm = calm.clone();
    std::thread::spawn(move || drop(thread_calm.stopped_if_it_unwinds()))
        .join()
        .unwrap();
    assert!(calm.state(0).is_none());
}

#[test]
fn the_thread_ends_when_its_handle_is_dropped_while_the_peer_stalls() {
    let (socket, mut peer) = pair();
    let mut handle = DrainHandle::new(tempfile::tempfile().unwrap());
    handle.start(socket.as_fd(), 0, 100).unwrap();
    peer.write_all(b"0123").unwrap();
    let drain = handle.drain.clone();
    drop(handle);
    // The thread held the other reference: once it is gone only this one is left.
    let deadline = Instant::now() + Duration::from_secs(10);
    while Arc::strong_count(&drain) > 1 {
        assert!(Instant::now() < deadline, "the drain thread never ended");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The attack on the mark: a peer that sends less than it and stalls. Its bytes still land
/// within one look (the wait times out and takes what is there), and when the upload is
/// given up the thread ends with the socket's mark back at 1, so nothing the runtime reads
/// next is held back.
#[test]
fn a_peer_under_the_mark_that_stalls_still_lands_and_leaves_the_mark_at_1() {
    use super::super::low_water::{BATCH, tests::mark};
    let (socket, mut peer) = pair();
    let mut handle = DrainHandle::new(tempfile::tempfile().unwrap());
    handle.start(socket.as_fd(), 0, 1024 * 1024).unwrap();
    peer.write_all(&[5u8; 1000]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while handle.drain.landed.load(Ordering::Acquire) < 1000 {
        assert!(
            Instant::now() < deadline,
            "bytes under the mark never landed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    while mark(&socket) != BATCH as i32 {
        assert!(
            Instant::now() < deadline,
            "the stalled drain waits without a mark"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let drain = handle.drain.clone();
    drop(handle);
    while Arc::strong_count(&drain) > 1 {
        assert!(Instant::now() < deadline, "the drain thread never ended");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(mark(&socket), 1);
}

/// Counts its wakes.
#[derive(Default)]
struct Wakes(std::sync::atomic::AtomicUsize);

impl futures::task::ArcWake for Wakes {
    fn wake_by_ref(this: &Arc<Self>) {
        this.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Waits as the upload that follows the thread does; how often it was woken since.
fn follow(drain: &Drain, wakes: &Arc<Wakes>, offset: u64) -> usize {
    let waker = futures::task::waker(wakes.clone());
    let before = wakes.0.load(Ordering::SeqCst);
    let _ = drain.poll_followed_beyond(&mut Context::from_waker(&waker), offset);
    wakes.0.load(Ordering::SeqCst) - before
}

#[test]
fn the_follower_is_woken_per_run_of_landed_bytes_not_per_batch() {
    let drain = Drain::default();
    let wakes = Arc::new(Wakes::default());
    assert!(follow(&drain, &wakes, 0) == 0);
    // Batches of a socket's worth: none wakes the follower until a run has landed.
    let batch = 256 * 1024;
    let mut at = 0;
    while at + batch < FOLLOWER_RUN {
        at += batch;
        drain.landed(at);
    }
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        0,
        "woken before a run landed"
    );
    drain.landed(FOLLOWER_RUN);
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    // The end wakes it whatever has landed since.
    follow(&drain, &wakes, FOLLOWER_RUN);
    drain.landed(FOLLOWER_RUN + 1);
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    drain.end();
    assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
    // The stream's side (hyper's filler, the client's progress) is still woken per batch.
    let drain = Drain::default();
    let waker = futures::task::waker(wakes.clone());
    assert!(
        drain
            .poll_beyond(&mut Context::from_waker(&waker), 0)
            .is_pending()
    );
    drain.landed(batch);
    assert_eq!(wakes.0.load(Ordering::SeqCst), 3);
}
