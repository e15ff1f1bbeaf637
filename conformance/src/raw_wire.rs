//! Bytes written straight to a connection, for what an HTTP client library would not send
//! as-is: a request pipelined in the same write right behind a body, a body cut off
//! mid-way with the sending side closed.

use anyhow::{anyhow, ensure};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The head of `request` as it goes on the wire (request line, `Host`, its headers, the
/// blank line): `extra` headers (`Name: value\r\n` each) are added, so a case builds its
/// request with the usual helpers (token, connection header) and writes it by hand.
pub fn head(request: &reqwest::Request, extra: &str) -> String {
    let url = request.url();
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    // The URL's own authority: an engine refuses a Host that is not a loopback name.
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_owned(),
    };
    let mut head = format!("{} {target} HTTP/1.1\r\nHost: {host}\r\n", request.method());
    for (name, value) in request.headers() {
        head.push_str(&format!(
            "{name}: {}\r\n",
            value.to_str().unwrap_or_default()
        ));
    }
    head.push_str(extra);
    head.push_str("\r\n");
    head
}

/// Writes `wire` to a fresh connection to `base_url` (closing the sending side after it
/// when `close`) while reading, and answers everything the server sent until it closed (at
/// most 20 s).
pub async fn exchange(base_url: &str, wire: Vec<u8>, close: bool) -> anyhow::Result<String> {
    let authority = base_url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("raw requests need an http:// base URL"))?
        .trim_end_matches('/')
        .to_owned();
    let (mut read, mut write) = TcpStream::connect(&authority).await?.into_split();
    // Written while the answer is read: a server may answer before it has read everything.
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&wire).await;
        if close {
            let _ = write.shutdown().await;
        }
        write
    });
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), read.read_to_end(&mut answer)).await;
    drop(writer.await);
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// The answers on one connection to a write with a request pipelined behind it: the write
/// is answered 200 (`size` `len`), and then either the pipelined request too (the same
/// entry), or the write's answer says `Connection: close` and nothing follows it, the
/// connection closed by the server (RFC 9112 section 9.6: no further request is processed),
/// well before the client's 20 s wait for it ran out.
pub fn framed_after_write(answer: &str, len: usize, took: Duration) -> anyhow::Result<()> {
    let first = answer
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    ensure!(
        first.starts_with("http/1.1 200"),
        "the write is answered 200: {answer}"
    );
    ensure!(
        answer.contains(&format!("\"size\":{len}")),
        "the write's entry names the whole size: {answer}"
    );
    if first.contains("\r\nconnection: close") {
        ensure!(
            answer.matches("HTTP/1.1 ").count() == 1,
            "after `Connection: close` nothing more is answered: {answer}"
        );
        ensure!(
            took < Duration::from_secs(10),
            "the server closes the connection after saying so (open after {took:?})"
        );
    } else {
        ensure!(
            answer.matches("HTTP/1.1 200 OK").count() == 2,
            "a kept-alive connection answers the pipelined request: {answer}"
        );
        ensure!(
            answer.matches(&format!("\"size\":{len}")).count() == 2,
            "both name the whole size: {answer}"
        );
    }
    Ok(())
}
