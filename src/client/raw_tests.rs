//! The client's own file exchange against a small fake engine on loopback (the client knows
//! the engine only through the protocol, and these tests need answers a real engine never
//! gives: cut bodies, early refusals, chunked file answers). A real engine is in
//! `tests/integration/engine_client.rs` and the conformance run.

use super::*;
use crate::client::{ClientOptions, Upload, WriteOptions};
use crate::wire::{Descriptor, descriptor_path};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How the fake engine answers.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Keeps what is PUT and answers it to a GET, with its length.
    Store,
    /// A GET's answer declares 1 MiB and ends after 1,000 bytes.
    CutGet,
    /// A PUT is refused with a 404 as soon as its head is read (the body unread).
    RefusePut,
    /// The connection is closed after the request's head, with no answer.
    Hangup,
    /// A GET is answered chunked (no length) with the stored bytes.
    Chunked,
}

struct Fake {
    _state: tempfile::TempDir,
    client: Client,
    /// The `authorization` and connection headers of the last request.
    seen: Arc<Mutex<Vec<String>>>,
}

async fn fake(mode: Mode) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let files: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let headers = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(serve(stream, mode, files.clone(), headers.clone()));
        }
    });
    let state = tempfile::tempdir().unwrap();
    let descriptor = Descriptor {
        protocol: crate::wire::PROTOCOL.into(),
        pid: std::process::id(),
        host: "127.0.0.1".into(),
        port,
        token: "tok".into(),
        version: "0".into(),
        started_at: "2025-01-01T00:00:00Z".into(),
        e2b_port: None,
        e2b_api_key: None,
    };
    std::fs::write(
        descriptor_path(state.path()),
        serde_json::to_vec(&descriptor).unwrap(),
    )
    .unwrap();
    let client = Client::new(ClientOptions {
        state_dir: state.path().to_path_buf(),
        autostart: false,
        ..ClientOptions::default()
    })
    .unwrap();
    Fake {
        _state: state,
        client,
        seen,
    }
}

async fn serve(
    mut stream: tokio::net::TcpStream,
    mode: Mode,
    files: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    seen: Arc<Mutex<Vec<String>>>,
) {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    let end = loop {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "the client closed before its head");
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
    };
    let head = String::from_utf8(got[..end].to_vec()).unwrap();
    let mut body = got[end + 4..].to_vec();
    let mut lines = head.lines();
    let request = lines.next().unwrap().to_owned();
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    *seen.lock().unwrap() = ["authorization", "x-svc-connection", "host"]
        .iter()
        .map(|h| header(h).unwrap_or_default())
        .collect();
    let path = request.split(' ').nth(1).unwrap().to_owned();
    let path = path.split("path=").nth(1).unwrap_or_default().to_owned();
    if mode == Mode::Hangup {
        return;
    }
    if request.starts_with("PUT") {
        if mode == Mode::RefusePut {
            let error = crate::error::engine::Code::SandboxNotFound.body("no sandbox", None);
            let error = serde_json::to_vec(&error).unwrap();
            answer(&mut stream, "404 Not Found", "", &error).await;
            return;
        }
        let len: usize = header("content-length").unwrap().parse().unwrap();
        while body.len() < len {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                return; // a short body: nothing is kept
            }
            body.extend_from_slice(&buf[..n]);
        }
        let info = serde_json::json!({"name": "f", "path": format!("/{path}"), "type": "file",
            "size": body.len(), "mode": "0644", "modified_at": "2025-01-01T00:00:00Z"});
        files.lock().unwrap().insert(path, body);
        answer(
            &mut stream,
            "200 OK",
            "",
            &serde_json::to_vec(&info).unwrap(),
        )
        .await;
        return;
    }
    let bytes = files
        .lock()
        .unwrap()
        .get(&path)
        .cloned()
        .unwrap_or_default();
    match mode {
        Mode::CutGet => {
            let head = "HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n";
            stream.write_all(head.as_bytes()).await.unwrap();
            stream.write_all(&[7u8; 1000]).await.unwrap();
        }
        Mode::Chunked => {
            let mut chunked = format!("{:x}\r\n", bytes.len()).into_bytes();
            chunked.extend_from_slice(&bytes);
            chunked.extend_from_slice(b"\r\n0\r\n\r\n");
            let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
            stream.write_all(head.as_bytes()).await.unwrap();
            stream.write_all(&chunked).await.unwrap();
        }
        _ => answer(&mut stream, "200 OK", "", &bytes).await,
    }
}

async fn answer(stream: &mut tokio::net::TcpStream, status: &str, extra: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n",
        body.len()
    );
    // The peer may be gone already (a refusal before the body): that is its business.
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
}

/// A file of `len` bytes that repeat with a period no chunk size shares.
fn source(dir: &std::path::Path, len: usize) -> (std::path::PathBuf, Vec<u8>) {
    let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let path = dir.join(format!("src-{len}"));
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

/// Within 20 s, or the test fails: a broken exchange must end, never hang.
async fn soon<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the exchange hung")
}

#[tokio::test]
async fn files_go_up_with_sendfile_and_come_down_with_splice_byte_for_byte() {
    let fx = fake(Mode::Store).await;
    let dir = tempfile::tempdir().unwrap();
    // Empty, small, and over the 8 MiB a ring or a pipe holds, not a whole number of MiB.
    for len in [0, 70_000, 9 * 1024 * 1024 + 4321] {
        let (path, bytes) = source(dir.path(), len);
        let name = format!("f{len}");
        let counted = Arc::new(AtomicU64::new(0));
        let count = counted.clone();
        let progress: Progress = Arc::new(move |n| {
            count.fetch_add(n, Ordering::Relaxed);
        });
        let upload = Upload::File(path);
        let info = soon(fx.client.write_file(
            "sb",
            &name,
            &upload,
            WriteOptions::default(),
            Some(progress.clone()),
        ))
        .await
        .unwrap();
        assert_eq!(info.size, len as u64);
        assert_eq!(counted.swap(0, Ordering::Relaxed), len as u64);

        // Into a file: spliced, after what the file held already, which stays.
        let out = dir.path().join(format!("out-{len}"));
        let mut file = tokio::fs::File::create(&out).await.unwrap();
        file.write_all(b"before|").await.unwrap();
        let mut download = soon(fx.client.read_file("sb", &name)).await.unwrap();
        assert_eq!(download.size, Some(len as u64));
        let n = soon(download.write_to(&mut file, "out", Some(progress)))
            .await
            .unwrap();
        assert_eq!(n, len as u64);
        assert_eq!(counted.load(Ordering::Relaxed), len as u64);
        file.write_all(b"|after").await.unwrap();
        // tokio's file writes in the background: done once flushed.
        file.flush().await.unwrap();
        drop(file);
        let mut want = b"before|".to_vec();
        want.extend_from_slice(&bytes);
        want.extend_from_slice(b"|after");
        let landed = std::fs::read(&out).unwrap();
        assert!(
            landed == want,
            "{len} bytes: {} landed, starting {:?}",
            landed.len(),
            String::from_utf8_lossy(&landed[..landed.len().min(20)])
        );

        // Into memory: read from the same kind of connection.
        let got = soon(fx.client.read_file_bytes("sb", &name)).await.unwrap();
        assert!(got == bytes, "{} bytes back of {len}", got.len());
    }
    // The headers every request of the client carries.
    let seen = fx.seen.lock().unwrap().clone();
    assert_eq!(seen[0], "Bearer tok");
    assert_eq!(seen[1], fx.client.connection_header());
    assert!(seen[2].starts_with("127.0.0.1:"), "{}", seen[2]);
}

#[tokio::test]
async fn a_cut_download_is_a_transport_error_into_a_file_and_into_memory() {
    let fx = fake(Mode::CutGet).await;
    let dir = tempfile::tempdir().unwrap();
    let mut file = tokio::fs::File::create(dir.path().join("out"))
        .await
        .unwrap();
    let e = soon(fx.client.read_file_to("sb", "x", &mut file, None))
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Transport(_)), "{e}");
    assert!(e.to_string().contains("1000 of 1048576"), "{e}");
    let e = soon(fx.client.read_file_bytes("sb", "x"))
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Transport(_)), "{e}");
}

#[tokio::test]
async fn an_early_refusal_of_an_upload_is_the_engines_typed_error() {
    let fx = fake(Mode::RefusePut).await;
    let dir = tempfile::tempdir().unwrap();
    // Larger than the socket buffers take: the send breaks before the body is out.
    let (path, _) = source(dir.path(), 32 * 1024 * 1024);
    let upload = Upload::File(path);
    let e = soon(
        fx.client
            .write_file("sb", "x", &upload, WriteOptions::default(), None),
    )
    .await
    .unwrap_err();
    assert_eq!(e.api().map(|a| a.code.as_str()), Some("E2009"), "{e}");
}

#[tokio::test]
async fn a_connection_closed_without_an_answer_is_a_transport_error() {
    let fx = fake(Mode::Hangup).await;
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = source(dir.path(), 100_000);
    let upload = Upload::File(path.clone());
    let e = soon(
        fx.client
            .write_file("sb", "x", &upload, WriteOptions::default(), None),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, ClientError::Transport(_)), "{e}");
    let e = soon(fx.client.read_file("sb", "x")).await.err().unwrap();
    assert!(matches!(e, ClientError::Transport(_)), "{e}");
    // A local file that is not there is the local error, before any connection.
    let gone = Upload::File(path.with_extension("missing"));
    let e = soon(
        fx.client
            .write_file("sb", "x", &gone, WriteOptions::default(), None),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, ClientError::Io { .. }), "{e}");
}

#[tokio::test]
async fn a_download_without_a_length_is_taken_through_the_stream() {
    let fx = fake(Mode::Chunked).await;
    let bytes: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
    let upload = Upload::Bytes(bytes.clone().into());
    soon(
        fx.client
            .write_file("sb", "x", &upload, WriteOptions::default(), None),
    )
    .await
    .unwrap();
    let download = soon(fx.client.read_file("sb", "x")).await.unwrap();
    assert_eq!(download.size, None);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut file = tokio::fs::File::create(&out).await.unwrap();
    let n = soon(fx.client.read_file_to("sb", "x", &mut file, None))
        .await
        .unwrap();
    assert_eq!(n, bytes.len() as u64);
    drop(file);
    assert!(std::fs::read(&out).unwrap() == bytes);
}

#[tokio::test]
async fn a_file_that_shrinks_while_it_goes_up_is_a_local_error_not_a_short_file() {
    let fx = fake(Mode::Store).await;
    let dir = tempfile::tempdir().unwrap();
    // Large enough for the sending thread, and cut while it sends.
    let (path, _) = source(dir.path(), 32 * 1024 * 1024);
    let cut = std::sync::atomic::AtomicBool::new(false);
    let target = path.clone();
    let progress: Progress = Arc::new(move |_| {
        if !cut.swap(true, Ordering::SeqCst) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .unwrap();
            file.set_len(20 * 1024 * 1024).unwrap();
        }
    });
    let upload = Upload::File(path);
    let e = soon(
        fx.client
            .write_file("sb", "x", &upload, WriteOptions::default(), Some(progress)),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, ClientError::Io { .. }), "{e}");
    assert!(e.to_string().contains("changed size"), "{e}");
}
