//! Chunks written from outside hyper into a chunked answer hyper is streaming, through the
//! real connection stack (`connections::serve`, this module's [`Listener`]): the body a
//! client decodes holds hyper's chunks and the written ones in the order they were made,
//! also when the socket took only part of a written chunk.

use super::direct::{Sent, Slot};
use super::{Channel, Listener, with_channel};
use bytes::Bytes;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// The slot of the answer's connection, and the sender of hyper's own chunks.
struct Answer {
    slot: Slot,
    chunks: mpsc::UnboundedSender<Bytes>,
}

/// A server whose `GET /stream` answers a chunked body fed by the test; each request's
/// slot and feed come out of `answers`.
async fn server() -> (std::net::SocketAddr, mpsc::UnboundedReceiver<Answer>) {
    let (tx, answers) = mpsc::unbounded_channel();
    let tx = Arc::new(Mutex::new(tx));
    let router = axum::Router::new().route(
        "/stream",
        axum::routing::get(move |Channel(channel): Channel| {
            let tx = Arc::clone(&tx);
            async move {
                let (chunks, rx) = mpsc::unbounded_channel::<Bytes>();
                let slot = channel.expect("an HTTP/1 connection").direct().clone();
                tx.lock().unwrap().send(Answer { slot, chunks }).unwrap();
                let body = futures::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
                });
                axum::body::Body::from_stream(body)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = crate::connections::Limits::new(
        8,
        crate::connections::DEFAULT_HEADER_TIMEOUT,
        http::StatusCode::SERVICE_UNAVAILABLE,
        b"{}",
    );
    tokio::spawn(crate::connections::serve(
        Listener(listener),
        limits,
        with_channel(router),
        std::future::pending(),
    ));
    (addr, answers)
}

/// A client that has sent `GET /stream` and reads the answer raw.
async fn client(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /stream HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    tcp
}

/// An answer under way: a client that asked, the answer's slot and feed, and what the
/// client has read, which holds hyper's first chunk (`one;`) already, so hyper has flushed.
async fn answering() -> (tokio::net::TcpStream, Answer, Vec<u8>) {
    let (addr, mut answers) = server().await;
    let mut tcp = client(addr).await;
    let answer = answers.recv().await.unwrap();
    let mut raw = Vec::new();
    answer.chunks.send(Bytes::from_static(b"one;")).unwrap();
    read_until(&mut tcp, &mut raw, b"one;").await;
    (tcp, answer, raw)
}

/// Reads until `raw` holds `want` (or fails after a while).
async fn read_until(tcp: &mut tokio::net::TcpStream, raw: &mut Vec<u8>, want: &[u8]) {
    // Only the new bytes (and the few before them a match could start in) are searched.
    let mut from = 0;
    let found = |raw: &Vec<u8>, from: usize| raw[from..].windows(want.len()).any(|w| w == want);
    tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = vec![0; 1 << 16];
        while !found(raw, from) {
            from = raw.len().saturating_sub(want.len());
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before {:?}", String::from_utf8_lossy(want));
            raw.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("in time");
}

/// The decoded body of a whole chunked answer in `raw` (head included), checking every
/// chunk's framing.
fn decode(raw: &[u8]) -> Vec<u8> {
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let (mut at, mut body) = (head_end, Vec::new());
    loop {
        let line_end = at + raw[at..].windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&raw[at..line_end]).unwrap(), 16)
            .expect("a chunk size");
        at = line_end + 2;
        if size == 0 {
            assert_eq!(&raw[at..], b"\r\n", "the last chunk ends the answer");
            return body;
        }
        body.extend_from_slice(&raw[at..at + size]);
        assert_eq!(&raw[at + size..at + size + 2], b"\r\n", "chunk framing");
        at += size + 2;
    }
}

#[tokio::test]
async fn written_chunks_go_between_hyper_s_own_in_order() {
    // hyper has written (and so flushed) its chunk: the slot is clear.
    let (mut tcp, answer, mut raw) = answering().await;
    answer.slot.busy();
    assert_eq!(
        answer.slot.send_chunk(&[b"early"]),
        Sent::Refused,
        "busy until hyper flushes"
    );
    // hyper flushes after each poll of the body: a chunk of its own makes it poll again.
    answer.chunks.send(Bytes::from_static(b"two:")).unwrap();
    read_until(&mut tcp, &mut raw, b"two:").await;
    let sent = answer.slot.send_chunk(&[b"two", b"-and-", b"a-half;"]);
    assert_eq!(sent, Sent::Written);
    assert_eq!(answer.slot.chunks(), 1);
    answer.chunks.send(Bytes::from_static(b"three")).unwrap();
    drop(answer.chunks);
    read_until(&mut tcp, &mut raw, b"0\r\n\r\n").await;
    assert_eq!(decode(&raw), b"one;two:two-and-a-half;three");
}

#[tokio::test]
async fn the_rest_of_a_chunk_the_socket_did_not_take_goes_before_hyper_s_next() {
    let (mut tcp, answer, mut raw) = answering().await;
    // Far more than the socket buffers hold while the client does not read.
    let big = crate::zero_copy::tests::pattern(16 << 20);
    assert_eq!(answer.slot.send_chunk(&[&big]), Sent::Owed);
    assert_eq!(
        answer.slot.send_chunk(&[b"refused"]),
        Sent::Refused,
        "nothing is written while a chunk is owed"
    );
    answer.chunks.send(Bytes::from_static(b";tail")).unwrap();
    drop(answer.chunks);
    read_until(&mut tcp, &mut raw, b";tail\r\n0\r\n\r\n").await;
    let mut want = b"one;".to_vec();
    want.extend_from_slice(&big);
    want.extend_from_slice(b";tail");
    assert!(decode(&raw) == want, "every byte, in order");
}

#[tokio::test]
async fn nothing_is_written_before_hyper_flushed_nor_after_the_connection_closed() {
    let slot = Slot::default();
    assert_eq!(
        slot.send_chunk(&[b"x"]),
        Sent::Refused,
        "a slot no stream opened"
    );
    let (tcp, answer, _) = answering().await;
    drop(tcp);
    // The server finds the connection gone at its next write and drops the stream.
    let _ = answer.chunks.send(Bytes::from_static(b"more"));
    tokio::time::timeout(Duration::from_secs(10), async {
        while answer.slot.send_chunk(&[b"late"]) != Sent::Refused {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("refused once the connection closed");
}

/// The attack: a session's frames written through the slot of a connection that has closed,
/// whose descriptor number the kernel has since given to another client's connection,
/// would reach that client (another owner's events). The stream's drop takes the
/// descriptor out of the slot before closing it, so the old slot writes nowhere.
#[tokio::test]
async fn a_closed_connection_s_slot_never_writes_into_the_connection_that_reuses_its_number() {
    let (addr, mut answers) = server().await;
    let mut first = client(addr).await;
    let old = answers.recv().await.unwrap();
    let mut raw = Vec::new();
    old.chunks.send(Bytes::from_static(b"one;")).unwrap();
    read_until(&mut first, &mut raw, b"one;").await;
    // The client goes; its answer ends; the server closes the connection.
    drop(first);
    drop(old.chunks);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A new client, most likely on the descriptor number the first one had.
    let mut second = client(addr).await;
    let new = answers.recv().await.unwrap();
    let mut raw = Vec::new();
    new.chunks.send(Bytes::from_static(b"mine;")).unwrap();
    read_until(&mut second, &mut raw, b"mine;").await;
    assert_eq!(
        old.slot.send_chunk(&[b"another owner's event;"]),
        Sent::Refused,
        "the closed connection's slot writes nothing"
    );
    new.chunks.send(Bytes::from_static(b"end")).unwrap();
    drop(new.chunks);
    read_until(&mut second, &mut raw, b"0\r\n\r\n").await;
    assert_eq!(
        decode(&raw),
        b"mine;end",
        "only the second answer's own bytes"
    );
}
