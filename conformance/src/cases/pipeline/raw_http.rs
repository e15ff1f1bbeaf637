//! Requests an HTTP client library would not send as-is (a declared length with no body,
//! hand-made chunks), written straight to the socket.

use anyhow::{Context, anyhow};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct RawResponse {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl RawResponse {
    pub fn json(&self) -> anyhow::Result<serde_json::Value> {
        serde_json::from_str(&self.body).with_context(|| format!("body is not JSON: {}", self.body))
    }
}

/// Sends `head` (request line and headers, without the blank line) then `body`, and reads
/// the answer until the server closes or 10 s pass.
pub async fn send(base_url: &str, head: &str, body: &[u8]) -> anyhow::Result<RawResponse> {
    let authority = crate::raw_wire::authority(base_url)?;
    let mut stream = TcpStream::connect(&authority).await?;
    let head = format!("{head}\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await?;
    // The server may answer and close before it reads the body; that is the point.
    let _ = stream.write_all(body).await;
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no complete HTTP response: {text:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("bad status line: {head}"))?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Ok(RawResponse {
        status,
        head: head.to_owned(),
        body,
    })
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// `n` bytes of body as HTTP/1.1 chunks of 512 bytes.
pub fn chunked(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut left = n;
    while left > 0 {
        let size = left.min(512);
        out.extend_from_slice(format!("{size:x}\r\n").as_bytes());
        out.extend(std::iter::repeat_n(b' ', size));
        out.extend_from_slice(b"\r\n");
        left -= size;
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}
