//! A body passed from one socket to another: spliced byte for byte through the
//! connection, read byte for byte as a stream, and ended (never hung, never passed off as
//! whole) when its socket stalls or closes before its length, both ways.

use super::*;
use crate::zero_copy::Stream;
use crate::zero_copy::tests::pattern;
use http_body_util::BodyExt;
use std::time::Instant;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// A connected pair: the end this process reads from, the peer that sends.
async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let peer = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    (listener.accept().await.unwrap().0, peer)
}

/// A body of `bytes` (its first `early` already read, as with a head) whose peer sends
/// `sent` of the rest and then closes (`close`) or holds the connection; the peer's handle
/// is returned so a held connection stays open.
async fn remote_body(
    bytes: &[u8],
    early: usize,
    sent: usize,
    close: bool,
    idle: Duration,
) -> (SocketBody, tokio::task::JoinHandle<()>) {
    let (ours, mut peer) = tcp_pair().await;
    let rest = bytes[early..early + sent].to_vec();
    let sender = tokio::spawn(async move {
        peer.write_all(&rest).await.unwrap();
        if !close {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    });
    let body = SocketBody::new(ours, bytes[..early].to_vec(), bytes.len() as u64, idle);
    (body, sender)
}

/// Writes `body` through a connection as hyper would, frame by frame; what the client
/// received, and how the writing ended.
async fn through_connection(body: SocketBody) -> (Vec<u8>, io::Result<()>, FileChannel) {
    let (tcp, mut client) = tcp_pair().await;
    let channel = FileChannel::default();
    let mut stream = Stream::new(tcp, channel.clone());
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut client, &mut got).await;
        got
    });
    let mut body = socket_body(Some(channel.clone()), body);
    let mut written = Ok(());
    while let Some(frame) = body.frame().await {
        let data = frame.unwrap().into_data().unwrap();
        if let Err(e) = stream.write_all(&data).await {
            written = Err(e);
            break;
        }
    }
    drop(stream);
    (reader.await.unwrap(), written, channel)
}

#[tokio::test]
async fn a_body_is_spliced_byte_for_byte() {
    // A few bytes, and more than the pipe and a placeholder chunk hold.
    for len in [5, 9 * 1024 * 1024 + 13] {
        let bytes = pattern(len);
        let (body, _sender) = remote_body(&bytes, 3, len - 3, true, Duration::from_secs(10)).await;
        let before = spliced_here();
        let (got, written, channel) = through_connection(body).await;
        written.unwrap();
        assert!(got == bytes, "{} bytes of {len}", got.len());
        let spliced = spliced_here() - before;
        assert!(spliced >= len as u64 - 3, "{spliced} spliced of {len}");
        assert!(
            channel.splice.lock().unwrap().is_none(),
            "the remote let go"
        );
    }
}

#[tokio::test]
async fn a_body_whose_socket_stalls_or_closes_short_ends_with_an_error() {
    let bytes = pattern(1024 * 1024);
    let idle = Duration::from_millis(200);
    for (close, kind) in [
        (true, io::ErrorKind::UnexpectedEof),
        (false, io::ErrorKind::TimedOut),
    ] {
        let (body, sender) = remote_body(&bytes, 10, 1000, close, idle).await;
        let started = Instant::now();
        let (got, written, channel) =
            tokio::time::timeout(Duration::from_secs(10), through_connection(body))
                .await
                .expect("the answer ends");
        assert_eq!(written.unwrap_err().kind(), kind);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(got == bytes[..1010], "{} bytes", got.len());
        assert!(
            channel.splice.lock().unwrap().is_none(),
            "the remote let go"
        );
        sender.abort();
    }
}

#[tokio::test]
async fn a_body_read_as_a_stream_is_byte_for_byte_and_never_passed_off_short() {
    let idle = Duration::from_millis(200);
    for (len, early) in [(0, 0), (7, 7), (3 * READ_CHUNK + 5, 100)] {
        let bytes = pattern(len);
        let (body, _sender) = remote_body(&bytes, early, len - early, true, idle).await;
        let chunks: Vec<_> = body.into_stream().collect().await;
        let got: Vec<u8> = chunks
            .into_iter()
            .flat_map(|c| c.unwrap().to_vec())
            .collect();
        assert!(got == bytes, "{} bytes of {len}", got.len());
    }
    let bytes = pattern(10_000);
    for (close, kind) in [
        (true, io::ErrorKind::UnexpectedEof),
        (false, io::ErrorKind::TimedOut),
    ] {
        let (body, sender) = remote_body(&bytes, 10, 1000, close, idle).await;
        let chunks: Vec<_> = tokio::time::timeout(
            Duration::from_secs(10),
            body.into_stream().collect::<Vec<_>>(),
        )
        .await
        .expect("the stream ends");
        let (last, data) = chunks.split_last().unwrap();
        assert_eq!(last.as_ref().unwrap_err().kind(), kind);
        let got: usize = data.iter().map(|c| c.as_ref().unwrap().len()).sum();
        assert_eq!(got, 1010);
        sender.abort();
    }
}
