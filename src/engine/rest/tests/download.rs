//! A file read through the front, spliced from the remote's socket into the caller's:
//! byte for byte at any size, the remote's errors kept, a remote that stalls or closes
//! short ending the caller's answer, and the buffered path where the caller cannot splice.

use super::files::noise;
use super::{REMOTE_TOKEN, Timeouts, answer, code, pair, pair_with, rest};
use crate::error::engine::Code;
use crate::zero_copy::spliced_here;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_read_is_spliced_byte_for_byte_and_a_missing_file_keeps_its_code() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let content = format!("/sandboxes/{id}/files/content");
    let before = spliced_here();
    // Empty, a few bytes, and more than any buffer on the way (pipe, placeholder chunk).
    for len in [0, 5, 9 * 1024 * 1024 + 13] {
        let bytes = noise(len);
        let name = format!("read-{len}.bin");
        let put = pair
            .remote(Method::PUT, &format!("{content}?path={name}"))
            .body(bytes.clone());
        let (status, entry) = answer(put).await;
        assert_eq!(status, StatusCode::OK, "{entry}");
        let response = pair
            .front(Method::GET, &format!("{content}?path={name}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.version(), http::Version::HTTP_11);
        assert_eq!(response.content_length(), Some(len as u64));
        let got = response.bytes().await.unwrap();
        assert!(got[..] == bytes[..], "{} bytes back of {len}", got.len());
    }
    // All but the bytes that came with the answer's head (one read of a few KiB).
    let spliced = spliced_here() - before;
    assert!(
        spliced >= 9 * 1024 * 1024 - 64 * 1024,
        "{spliced} bytes spliced"
    );
    let (status, body) = answer(pair.front(Method::GET, &format!("{content}?path=missing"))).await;
    assert_eq!(code(status, &body), Code::FileNotFound);
    // The connection that carried the answers serves the next call.
    let (status, body) = answer(pair.front(Method::GET, &format!("/sandboxes/{id}"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    pair.kill(&id).await;
}

#[tokio::test]
async fn a_caller_that_cannot_splice_gets_the_bytes_buffered() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let pair = pair().await;
    let id = pair.sandbox().await;
    let content = format!("/sandboxes/{id}/files/content");
    let bytes = noise(3 * 1024 * 1024 + 1);
    let put = pair
        .remote(Method::PUT, &format!("{content}?path=plain.bin"))
        .body(bytes.clone());
    assert_eq!(answer(put).await.0, StatusCode::OK);
    // Served without the engine's listener (as over HTTP/2): no connection of ours to
    // splice into, so the read goes through reqwest.
    let state = crate::engine::state::EngineState::new(
        super::FRONT_TOKEN.into(),
        vec![std::sync::Arc::new(super::super::RestProvider::default())],
        Duration::from_secs(600),
    );
    let front = crate::engine::app::app(std::sync::Arc::new(state));
    let read = |path: &str| {
        http::Request::get(format!("/v1{content}?path={path}"))
            .header(http::header::HOST, "127.0.0.1")
            .header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", super::FRONT_TOKEN),
            )
            .header(crate::wire::CONNECTION_HEADER, pair.conn().header_value())
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let response = front.clone().oneshot(read("plain.bin")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let got = response.into_body().collect().await.unwrap().to_bytes();
    assert!(got[..] == bytes[..], "{} bytes back", got.len());
    let response = front.oneshot(read("missing")).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(code(status, &body), Code::FileNotFound);
    pair.kill(&id).await;
}

/// A remote that answers a sandbox's connect with `record`, and a file read with a length
/// of 4 MiB of which it sends 1 MiB and 5 bytes, then closes (`close`) or goes silent.
async fn failing_remote(record: Vec<u8>, close: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let record = record.clone();
            tokio::spawn(async move {
                let request = read_request(&mut socket).await;
                if request.starts_with("POST") {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n",
                        record.len()
                    );
                    socket.write_all(head.as_bytes()).await.unwrap();
                    socket.write_all(&record).await.unwrap();
                    return;
                }
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
                            content-length: 4194304\r\nconnection: close\r\n\r\n";
                socket.write_all(head.as_bytes()).await.unwrap();
                let _ = socket.write_all(&noise(1024 * 1024 + 5)).await;
                if !close {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
            });
        }
    });
    addr
}

/// A request's head and its body (the connect's `{}`), as text.
async fn read_request(socket: &mut tokio::net::TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).await.unwrap();
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if got.len() >= end + 4 + length || n == 0 {
                return text;
            }
        }
        assert!(n > 0, "the request ended before its head");
    }
}

#[tokio::test]
async fn a_remote_that_stalls_or_closes_short_ends_the_answer_short() {
    let timeouts = Timeouts {
        connect: Duration::from_secs(2),
        call: Duration::from_secs(5),
        idle: Duration::from_millis(300),
    };
    let pair = pair_with(timeouts).await;
    let id = pair.sandbox().await;
    // A real record for the failing remote to answer the front's connect with.
    let record = pair
        .remote(Method::POST, &format!("/sandboxes/{id}/connect"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    for close in [true, false] {
        let remote = failing_remote(record.clone(), close).await;
        let conn = rest(Some(format!("http://{remote}")), Some(REMOTE_TOKEN));
        let path = format!("/sandboxes/{id}/files/content?path=f");
        let started = Instant::now();
        let response = pair
            .front_as(Method::GET, &path, &conn)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.content_length(), Some(4 * 1024 * 1024));
        let body = tokio::time::timeout(Duration::from_secs(10), response.bytes())
            .await
            .expect("the answer ends");
        assert!(
            body.is_err(),
            "a short body passed off as whole (close: {close})"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
    pair.kill(&id).await;
}
