//! A large file answer's own sending thread: it sends only what hyper offered, in place
//! between what hyper writes itself; a file that shrinks under it ends the answer with an
//! error; a dropped answer stops it and ends the connection at once.

use super::super::tests::{pair, pattern};
use super::super::{MAX_SEND, PLACEHOLDER, Stream};
use std::io::Write;
use std::sync::Weak;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A temp file of `len` patterned bytes.
fn file_of(len: usize) -> (std::fs::File, Vec<u8>) {
    let bytes = pattern(len);
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&bytes).unwrap();
    (file, bytes)
}

/// Offers `len` placeholder bytes as hyper does, a chunk at a time; the bytes sent, or the
/// first error with the count before it.
async fn offer(stream: &mut Stream, len: usize) -> Result<usize, (usize, std::io::Error)> {
    let mut sent = 0;
    while sent < len {
        let chunk = (len - sent).min(PLACEHOLDER.len());
        match stream.write(&PLACEHOLDER[..chunk]).await {
            Ok(n) => sent += n,
            Err(e) => return Err((sent, e)),
        }
    }
    Ok(sent)
}

/// The stream's sending thread, if its answer has one (a weak handle: the thread and the
/// answer each hold a strong one).
fn sender_of(stream: &Stream) -> Option<Weak<super::Shared>> {
    let job = stream.channel.job.lock().unwrap();
    match &job.as_ref()?.sending {
        super::super::Sending::Thread(sender) => Some(std::sync::Arc::downgrade(&sender.shared)),
        _ => None,
    }
}

#[tokio::test]
async fn a_large_answer_goes_out_from_its_thread_in_place_between_what_hyper_writes() {
    let (mut stream, mut peer) = pair().await;
    let len = 3 * MAX_SEND + 123;
    let (file, bytes) = file_of(len);
    let _body = stream.channel.body(file, 0, len as u64);
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        got
    });
    stream.write_all(b"head").await.unwrap();
    // One chunk, then plain bytes (as a chunked body's framing would be): the thread must
    // not have run ahead of what was offered.
    assert_eq!(offer(&mut stream, MAX_SEND).await.unwrap(), MAX_SEND);
    assert!(
        sender_of(&stream).is_some(),
        "a thread sends the large answer"
    );
    stream.write_all(b"between").await.unwrap();
    assert_eq!(
        offer(&mut stream, len - MAX_SEND).await.unwrap(),
        len - MAX_SEND
    );
    stream.write_all(b"tail").await.unwrap();
    drop(stream);
    let mut expected = b"head".to_vec();
    expected.extend_from_slice(&bytes[..MAX_SEND]);
    expected.extend_from_slice(b"between");
    expected.extend_from_slice(&bytes[MAX_SEND..]);
    expected.extend_from_slice(b"tail");
    let got = reader.await.unwrap();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "the bytes arrived out of place");
}

#[tokio::test]
async fn a_short_answer_is_sent_inline() {
    let (mut stream, _peer) = pair().await;
    let (file, _) = file_of(1000);
    let _body = stream.channel.body(file, 0, 1000);
    assert_eq!(stream.write(&PLACEHOLDER[..400]).await.unwrap(), 400);
    assert!(sender_of(&stream).is_none());
}

#[tokio::test]
async fn a_file_that_shrinks_under_its_thread_ends_the_answer_with_an_error() {
    let (mut stream, mut peer) = pair().await;
    let len = 3 * MAX_SEND;
    let (file, bytes) = file_of(len);
    let _body = stream
        .channel
        .body(file.try_clone().unwrap(), 0, len as u64);
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        let _ = peer.read_to_end(&mut got).await;
        got
    });
    let kept = MAX_SEND + 100;
    file.set_len(kept as u64).unwrap();
    let (sent, err) = offer(&mut stream, len).await.unwrap_err();
    assert_eq!(sent, kept);
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof, "{err}");
    drop(stream);
    assert!(
        reader.await.unwrap() == bytes[..kept],
        "not the bytes the file kept"
    );
}

/// The attack: a client asks for a large file and never reads it. Once the answer is
/// dropped (the connection closed by the server, or its task gone), the thread must not
/// stay behind holding a descriptor of the socket, and the client must see the end.
#[tokio::test]
async fn a_client_that_never_reads_holds_no_thread_once_the_answer_is_dropped() {
    let (mut stream, mut peer) = pair().await;
    let len = 64 * MAX_SEND;
    let (file, _) = file_of(MAX_SEND);
    // A sparse file: its length is all the test needs, the bytes are never read.
    file.set_len(len as u64).unwrap();
    let _body = stream.channel.body(file, 0, len as u64);
    let stalled = tokio::time::timeout(Duration::from_millis(300), offer(&mut stream, len)).await;
    assert!(stalled.is_err(), "the socket's buffers took 256 MiB");
    let thread = sender_of(&stream).expect("a thread sends the large answer");
    drop(stream);
    let dropped = Instant::now();
    while thread.upgrade().is_some() {
        assert!(
            dropped.elapsed() < Duration::from_secs(5),
            "the thread stayed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The client reads what was buffered, then the end, not a hang.
    let mut sink = vec![0u8; 1 << 20];
    let drained = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match peer.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(drained.is_ok(), "the client never saw the connection end");
}

#[test]
fn past_the_cap_no_place_is_given_and_a_place_dropped_is_free_again() {
    // A counter of the test's own: the process's RUNNING is shared with every other test.
    static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    use std::sync::atomic::Ordering::SeqCst;
    let first = super::Counted::take(&RUNNING, 2).expect("a place under the cap");
    let second = super::Counted::take(&RUNNING, 2).expect("the last place");
    assert!(
        super::Counted::take(&RUNNING, 2).is_none(),
        "a third place past a cap of 2"
    );
    assert_eq!(RUNNING.load(SeqCst), 2, "a refused take counts nothing");
    drop(first);
    let again = super::Counted::take(&RUNNING, 2).expect("the place given back");
    drop((second, again));
    assert_eq!(RUNNING.load(SeqCst), 0, "every place is given back");
}
