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

/// The `host:port` of an `http://` base URL, to open a connection to (and to name in a
/// `Host` or an absolute-form request line).
pub fn authority(base_url: &str) -> anyhow::Result<String> {
    let rest = base_url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("raw requests need an http:// base URL, not {base_url}"))?;
    Ok(rest
        .split_once('/')
        .map_or(rest, |(authority, _)| authority)
        .to_owned())
}

/// The status and body of the answer to `request`, one request whose connection the server
/// closes after answering (HTTP/1.0, or `Connection: close`).
pub async fn answer(base_url: &str, request: &str) -> anyhow::Result<(u16, String)> {
    let text = exchange(base_url, request.as_bytes().to_vec(), false).await?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no complete answer to {request:?}: {text:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("bad status line: {head}"))?;
    Ok((status, body.to_owned()))
}

/// Writes `wire` to a fresh connection to `base_url` (closing the sending side after it
/// when `close`) while reading, and answers everything the server sent until it closed (at
/// most 20 s).
pub async fn exchange(base_url: &str, wire: Vec<u8>, close: bool) -> anyhow::Result<String> {
    let authority = authority(base_url)?;
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

/// One answer read off a kept connection: its status, whether it said `Connection: close`.
struct Answer {
    status: u16,
    closing: bool,
}

/// Reads one answer framed by `Content-Length` from `conn` (`buf` keeps what came after
/// it); `None` when the connection ended or failed first (the answer was lost).
async fn read_answer(
    conn: &mut (impl tokio::io::AsyncRead + Unpin),
    buf: &mut Vec<u8>,
) -> Option<Answer> {
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match tokio::time::timeout(Duration::from_secs(10), conn.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match tokio::time::timeout(Duration::from_secs(10), conn.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
    buf.drain(..head_end + length);
    Some(Answer {
        status,
        closing: head.contains("\r\nconnection: close"),
    })
}

/// `rounds` times on kept connections to `base_url`: `refused` (a request the server
/// refuses before reading its body, with the body), then `next`. A refusal that says
/// `Connection: close` sends the next request on a fresh connection, as a client does;
/// one that does not promises the connection goes on. Answers how many requests got no
/// answer at all (lost), and checks that every refusal was `refused_status`.
pub async fn lost_after_refusals(
    base_url: &str,
    refused: &[u8],
    refused_status: u16,
    next: &[u8],
    rounds: usize,
) -> anyhow::Result<usize> {
    let authority = authority(base_url)?;
    let mut lost = 0;
    let mut conn: Option<(TcpStream, Vec<u8>)> = None;
    for _ in 0..rounds {
        for (wire, is_refused) in [(refused, true), (next, false)] {
            if conn.is_none() {
                conn = Some((TcpStream::connect(&authority).await?, Vec::new()));
            }
            let Some((stream, buf)) = conn.as_mut() else {
                continue;
            };
            // The body is written while the answer is read: the server may answer first.
            let (mut read_half, mut write_half) = stream.split();
            let write = tokio::time::timeout(Duration::from_secs(10), write_half.write_all(wire));
            let (_, answer) = tokio::join!(write, read_answer(&mut read_half, buf));
            match answer {
                Some(answer) => {
                    if is_refused {
                        ensure!(
                            answer.status == refused_status,
                            "the refused request was answered {}",
                            answer.status
                        );
                    }
                    if answer.closing {
                        conn = None;
                    }
                }
                None => {
                    lost += 1;
                    conn = None;
                }
            }
        }
    }
    Ok(lost)
}

/// What the peer sends on `conn` within `wait`, and whether it closed the connection.
pub async fn read_for(conn: &mut TcpStream, wait: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let until = tokio::time::Instant::now() + wait;
    loop {
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, conn.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

/// Opens `count` connections to `authority` that send nothing, and reads each for `wait`:
/// the connections (still open, to be dropped by the caller) and the answers of those the
/// peer refused, each checked to be closed after its answer.
pub async fn flood(
    authority: &str,
    count: usize,
    wait: Duration,
) -> anyhow::Result<(Vec<TcpStream>, Vec<String>)> {
    let mut open = Vec::new();
    for _ in 0..count {
        open.push(TcpStream::connect(authority).await?);
    }
    let mut refusals = Vec::new();
    for conn in &mut open {
        let (answer, closed) = read_for(conn, wait).await;
        if !answer.is_empty() {
            ensure!(closed, "a refused connection is closed: {answer:?}");
            refusals.push(answer);
        }
    }
    Ok((open, refusals))
}

/// A refusal past a connection cap: `HTTP/1.1 503` with `Retry-After` and
/// `Connection: close`; answers its JSON body.
pub fn busy_body(refusal: &str) -> anyhow::Result<serde_json::Value> {
    let (head, body) = refusal
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no answer head: {refusal:?}"))?;
    let head = head.to_ascii_lowercase();
    ensure!(head.starts_with("http/1.1 503"), "503: {refusal}");
    ensure!(
        head.contains("\r\nretry-after: ") && head.contains("\r\nconnection: close"),
        "Retry-After and Connection: close: {refusal}"
    );
    Ok(serde_json::from_str(body)?)
}
