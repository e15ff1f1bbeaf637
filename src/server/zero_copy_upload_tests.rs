//! Every byte of a file write through the server's real listener, with the connection
//! splicing the body into the temp file (`crate::zero_copy` uploads): a body past many pipe
//! and read-buffer loads, writes one after the other, a request pipelined right behind a
//! body (the splice must stop at the body's end), a body cut off by its client; and past
//! `BYPASS_FROM` (hyper no longer reads the body), the connection's close after the answer.

use super::config::{LoadOptions, Settings};
use super::{AppState, serve_main};
use crate::zero_copy::placed_here;
use crate::zero_copy::tests::pattern;
use std::collections::BTreeMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A server on a free port (file routes on, every path allowed) and an empty temp dir.
async fn server() -> (std::net::SocketAddr, tempfile::TempDir) {
    let settings = Settings::load_with_env(&LoadOptions::default(), &BTreeMap::new()).unwrap();
    let state = AppState::with_settings(settings);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_main(listener, state).into_future());
    (addr, tempfile::tempdir().unwrap())
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn every_byte_of_a_write_lands_and_the_connection_places_them() {
    let (addr, dir) = server().await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    // With lengths that are multiples of nothing in the path: the first past hyper, so its
    // connection ends (the client opens another), the others on one kept-alive connection.
    for (name, len, closing) in [
        ("a.bin", 9 * 1024 * 1024 + 7, true),
        ("b.bin", 3 * 1024 * 1024 + 4093, false),
        ("c.bin", 5 * 1024 * 1024 + 1, false),
    ] {
        let bytes = pattern(len);
        let path = dir.path().join(name);
        let before = placed_here();
        let answer = client
            .put(format!(
                "http://{addr}/files/content?path={}",
                path.display()
            ))
            .body(bytes.clone())
            .send()
            .await
            .unwrap();
        let connection = answer.headers().get("connection").cloned();
        assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
        assert_eq!(
            connection.as_ref().is_some_and(|c| c == "close"),
            closing,
            "{name}: connection {connection:?}"
        );
        let placed = placed_here() - before;
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name}");
        // The body is read once the temp file exists: only what hyper had read with the
        // head (at most its read buffer, under 1 MiB) comes through as bytes.
        assert!(
            placed >= len as u64 - 1024 * 1024,
            "{name}: {placed} of {len} placed"
        );
    }
    assert_eq!(leftovers(dir.path()).len(), 3, "no temp file remains");
}

/// Writes `head` + `body` + `next` on one connection as fast as the socket takes them and
/// answers everything the server sent until it closed.
async fn raw_exchange(addr: std::net::SocketAddr, wire: Vec<u8>, close_after: bool) -> String {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&wire).await;
        if close_after {
            let _ = write.shutdown().await;
        }
        write // kept open until the reader is done, unless closed above
    });
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        read.read_to_end(&mut answer),
    )
    .await;
    drop(writer.await);
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_request_pipelined_behind_a_body_is_served_not_swallowed() {
    let (addr, dir) = server().await;
    let path = dir.path().join("piped.bin");
    let len = 5 * 1024 * 1024 + 11;
    let bytes = pattern(len);
    let mut wire = put_head(&path, len);
    wire.extend_from_slice(&bytes);
    wire.extend_from_slice(
        format!(
            "GET /files/info?path={} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
            path.display()
        )
        .as_bytes(),
    );
    let answer = raw_exchange(addr, wire, false).await;
    assert_eq!(answer.matches("HTTP/1.1 200 OK").count(), 2, "{answer}");
    assert!(answer.contains(&format!("\"size\":{len}")), "{answer}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[tokio::test]
async fn a_body_cut_off_by_its_client_leaves_nothing_behind() {
    let (addr, dir) = server().await;
    let path = dir.path().join("cut.bin");
    cut_off_leaves_nothing(addr, dir.path(), 6 * 1024 * 1024, 3 * 1024 * 1024).await;
    // The server is still well.
    let again = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .put(format!(
            "http://{addr}/files/content?path={}",
            path.display()
        ))
        .body(vec![7u8; 1024 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(std::fs::read(&path).unwrap(), vec![7u8; 1024 * 1024]);
}

/// `PUT` of `len` declared bytes to `path`, as it goes on the wire.
fn put_head(path: &std::path::Path, len: usize) -> Vec<u8> {
    format!(
        "PUT /files/content?path={} HTTP/1.1\r\nhost: x\r\ncontent-length: {len}\r\n\r\n",
        path.display()
    )
    .into_bytes()
}

#[tokio::test]
async fn past_hyper_a_large_body_lands_and_its_connection_ends_after_the_answer() {
    let (addr, dir) = server().await;
    let path = dir.path().join("large.bin");
    // Past BYPASS_FROM, under the default body limit (10 MiB).
    let len = 9 * 1024 * 1024 + 5;
    let bytes = pattern(len);
    let mut wire = put_head(&path, len);
    wire.extend_from_slice(&bytes);
    // Never answered: hyper's count of the body is behind the socket, so the connection
    // may not go on (RFC 9112 section 9.6).
    wire.extend_from_slice(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n");
    let before = placed_here();
    let started = std::time::Instant::now();
    let answer = raw_exchange(addr, wire, false).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the server closed the connection after its answer"
    );
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer}");
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
    assert!(answer.contains(&format!("\"size\":{len}")), "{answer}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let placed = placed_here() - before;
    assert!(
        placed >= len as u64 - 1024 * 1024,
        "{placed} of {len} placed"
    );
    assert_eq!(leftovers(dir.path()), vec!["large.bin".to_owned()]);
}

#[tokio::test]
async fn past_hyper_a_body_cut_off_by_its_client_leaves_nothing_behind() {
    let (addr, dir) = server().await;
    cut_off_leaves_nothing(addr, dir.path(), 10 * 1024 * 1024, 9 * 1024 * 1024).await;
}

/// A write to `dir/cut.bin` declaring `len` bytes whose client sends `sent` and closes its
/// sending side: no 200, and (once the server noticed) nothing left in `dir`.
async fn cut_off_leaves_nothing(
    addr: std::net::SocketAddr,
    dir: &std::path::Path,
    len: usize,
    sent: usize,
) {
    let mut wire = put_head(&dir.join("cut.bin"), len);
    wire.extend_from_slice(&pattern(sent));
    let answer = raw_exchange(addr, wire, true).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    for _ in 0..100 {
        if leftovers(dir).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(leftovers(dir), Vec::<String>::new());
}

#[tokio::test]
async fn a_declared_length_reserves_the_temp_file_s_blocks_before_the_body_comes() {
    use std::os::unix::fs::MetadataExt;
    let (addr, dir) = server().await;
    let path = dir.path().join("reserved.bin");
    let len = 4 * 1024 * 1024;
    let bytes = pattern(len);
    let (mut read, mut write) = TcpStream::connect(addr).await.unwrap().into_split();
    write.write_all(&put_head(&path, len)).await.unwrap();
    write.write_all(&bytes[..64 * 1024]).await.unwrap();
    // While the rest has not been sent, the temp file holds the blocks of the whole length.
    let mut held = 0;
    for _ in 0..500 {
        let temp = leftovers(dir.path())
            .into_iter()
            .find(|n| n.starts_with(".svc-write-"));
        if let Some(blocks) = temp.and_then(|n| dir.path().join(n).metadata().ok()) {
            held = blocks.blocks() * 512;
            if held >= len as u64 {
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(held >= len as u64, "{held} bytes of blocks held for {len}");
    write.write_all(&bytes[64 * 1024..]).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = read.read(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}
