//! The stream's own rules: a file registered and never sent gives way to the next,
//! placeholder bytes without a file and a file that shrank are errors. (Whole answers
//! through a real listener: the server's `zero_copy_tests.rs`.)

use super::*;
use std::io::Write;
use tokio::io::AsyncWriteExt;

/// Bytes no placeholder could pass for: a zero run would hide a placeholder sent as is.
pub(crate) fn pattern(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8 | 1
        })
        .collect()
}

/// A connected pair: our stream on one end, a plain socket on the other.
pub(super) async fn pair() -> (Stream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let peer = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (tcp, _) = listener.accept().await.unwrap();
    let channel = FileChannel::default();
    (Stream::new(tcp, channel), peer)
}

#[tokio::test]
async fn placeholder_bytes_without_a_file_are_an_error_not_zeros() {
    let (mut stream, _peer) = pair().await;
    let err = stream.write(&PLACEHOLDER[..10]).await.unwrap_err();
    assert!(err.to_string().contains("without its file"), "{err}");
    // Plain bytes still pass.
    assert_eq!(stream.write(b"plain").await.unwrap(), 5);
}

#[tokio::test]
async fn a_file_that_shrank_ends_the_answer_with_an_error() {
    let (mut stream, mut peer) = pair().await;
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&pattern(1000)).unwrap();
    let _body = stream.channel.body(file.try_clone().unwrap(), 0, 1000);
    file.set_len(100).unwrap();
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut peer, &mut got).await;
        got
    });
    let mut sent = 0;
    let err = loop {
        match stream.write(&PLACEHOLDER[..1000 - sent]).await {
            Ok(n) => sent += n,
            Err(e) => break e,
        }
    };
    assert_eq!(sent, 100);
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    drop(stream);
    assert_eq!(reader.await.unwrap(), pattern(1000)[..100]);
}

#[tokio::test]
async fn a_file_registered_and_never_sent_gives_way_to_the_next() {
    let (mut stream, mut peer) = pair().await;
    let mut unsent = tempfile::tempfile().unwrap();
    unsent.write_all(b"never sent").unwrap();
    drop(stream.channel.body(unsent, 0, 10)); // an answer dropped before hyper wrote it
    let mut next = tempfile::tempfile().unwrap();
    next.write_all(b"the next answer").unwrap();
    let _body = stream.channel.body(next, 4, 11);
    let mut sent = 0;
    while sent < 11 {
        sent += stream.write(&PLACEHOLDER[..11 - sent]).await.unwrap();
    }
    drop(stream);
    let mut got = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut peer, &mut got)
        .await
        .unwrap();
    assert_eq!(got, b"next answer");
}
