//! Every byte of a file answer through the server's real listener (hyper's writer, the
//! [`crate::zero_copy`] stream, `sendfile`): whole files past one placeholder chunk and one
//! `sendfile` call, ranges, keep-alive, and the HTTP/2 fallback to the streaming reader.

use super::config::{LoadOptions, Settings};
use super::{AppState, serve_main};
use crate::zero_copy::tests::pattern;
use crate::zero_copy::{MAX_SEND, PLACEHOLDER_LEN as CHUNK, sent_here};
use std::collections::BTreeMap;
use tokio::net::TcpListener;

/// A server on a free port (file routes on, every path allowed), and a file of `len`
/// patterned bytes in a temp dir.
async fn server_and_file(len: usize) -> (String, tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let settings = Settings::load_with_env(&LoadOptions::default(), &BTreeMap::new()).unwrap();
    let state = AppState::with_settings(settings);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_main(listener, state).into_future());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.bin");
    let bytes = pattern(len);
    std::fs::write(&path, &bytes).unwrap();
    (format!("http://{addr}"), dir, path, bytes)
}

#[tokio::test]
async fn every_byte_of_a_read_a_range_and_a_download_arrives() {
    // Past one placeholder chunk and one `sendfile` call, and not a multiple of either.
    let len = 2 * MAX_SEND + CHUNK / 3 + 17;
    let (base, _dir, path, bytes) = server_and_file(len).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("{base}/files/content?path={}", path.display());
    // Every answer's bytes go out by `sendfile`: the handlers reach their connection's
    // channel (a fallback to the streaming reader would pass the byte checks alone).
    let sent = sent_here();
    for _ in 0..2 {
        // Twice: the second answer reuses the kept-alive connection and its channel.
        let got = client.get(&url).send().await.unwrap();
        assert_eq!(got.status(), 200);
        assert_eq!(got.bytes().await.unwrap().as_ref(), bytes.as_slice());
    }
    let (start, end) = (CHUNK - 5, MAX_SEND + 9);
    let got = client
        .get(&url)
        .header("range", format!("bytes={start}-{end}"))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 206);
    assert_eq!(got.bytes().await.unwrap().as_ref(), &bytes[start..=end]);
    let got = client
        .get(format!("{base}/files/download?path={}", path.display()))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), bytes.as_slice());
    let whole = 3 * len + (end - start + 1);
    assert_eq!(sent_here() - sent, whole as u64, "sent by the connection");
}

#[tokio::test]
async fn over_http2_the_answer_is_streamed_and_whole() {
    let (base, _dir, path, bytes) = server_and_file(CHUNK + 1).await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let got = client
        .get(format!("{base}/files/content?path={}", path.display()))
        .send()
        .await
        .unwrap();
    let sent = sent_here();
    assert_eq!(got.version(), http::Version::HTTP_2);
    assert_eq!(got.bytes().await.unwrap().as_ref(), bytes.as_slice());
    assert_eq!(sent_here(), sent, "no channel over HTTP/2");
}
