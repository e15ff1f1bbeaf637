//! The few pieces of an HTTP/1.1 exchange that a peer of the engine makes itself when it
//! moves a file's body with `sendfile` or `splice` instead of through an HTTP library: the
//! request's head, the answer's head, and a short answer's body. Shared by the engine's
//! client (`client::raw`) and the `rest` provider's upload to its remote engine; each says
//! the errors in its own terms (an [`io::ErrorKind::InvalidData`] is an answer that is not
//! HTTP/1, any other kind the connection's failure).

use std::io;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An answer's head larger than this is not an engine's.
const MAX_HEAD: usize = 64 * 1024;
/// A short answer (an error, a JSON record) larger than this is not an engine's.
const MAX_SHORT: u64 = 16 * 1024 * 1024;

/// The head of a request to `url` (whose host and port are the `Host` header): `method`,
/// `headers`, and `Content-Length: body_len` when there is a body, then
/// `Connection: close` (a file is large: a new connection costs nothing worth saving, and
/// nothing is left to read on it afterwards). A value with a line break is refused.
pub(crate) fn request_head(
    method: &str,
    url: &url::Url,
    headers: &[(&str, &str)],
    body_len: Option<u64>,
) -> io::Result<String> {
    let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
    let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
    let mut head = format!("{method} {target} HTTP/1.1\r\nhost: {authority}\r\n");
    for (name, value) in headers {
        if http::HeaderValue::from_str(value).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the `{name}` header's value cannot be sent"),
            ));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(len) = body_len {
        head.push_str(&format!("content-length: {len}\r\n"));
    }
    head.push_str("connection: close\r\n\r\n");
    Ok(head)
}

/// Sends `head` on `stream`.
pub(crate) async fn send_head(stream: &mut TcpStream, head: &str) -> io::Result<()> {
    stream.write_all(head.as_bytes()).await
}

/// An answer's status line and the headers that frame its body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub status: u16,
    pub length: Option<u64>,
    pub chunked: bool,
}

impl Head {
    pub(crate) fn success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Reads an answer's head; answers it and the body bytes read with it.
pub(crate) async fn read_head(stream: &mut TcpStream) -> io::Result<(Head, Vec<u8>)> {
    let mut got = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection closed before the answer",
            ));
        }
        // Only the new bytes and the three before them can complete the blank line.
        let from = got.len().saturating_sub(3);
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = got.split_off(from + end + 4);
            return Ok((parse_head(&got)?, rest));
        }
        if got.len() > MAX_HEAD {
            return Err(garbled("an answer's head longer than 64 KiB"));
        }
    }
}

fn garbled(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// The status and framing of a head (its bytes up to the blank line).
fn parse_head(bytes: &[u8]) -> io::Result<Head> {
    let text = std::str::from_utf8(bytes).map_err(|_| garbled("a head that is not text"))?;
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| {
            let mut parts = line.splitn(3, ' ');
            let version = parts.next()?;
            let code = parts.next()?;
            version.starts_with("HTTP/1.").then_some(code)?.parse().ok()
        })
        .filter(|code| (100..600).contains(code))
        .ok_or_else(|| garbled("no HTTP/1 status line"))?;
    let (mut length, mut chunked) = (None, false);
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| garbled("a header line without a colon"))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n = value
                .parse()
                .map_err(|_| garbled("a content-length that is not a number"))?;
            if length.is_some_and(|l| l != n) {
                return Err(garbled("two different content-lengths"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked |= value
                .split(',')
                .any(|c| c.trim().eq_ignore_ascii_case("chunked"));
        }
    }
    Ok(Head {
        status,
        // A chunked body's length is its chunks' (RFC 9112 section 6.3).
        length: length.filter(|_| !chunked),
        chunked,
    })
}

/// A short answer's whole body: `early` (read with the head) and the rest, by its
/// length, its chunks, or up to the close.
pub(crate) async fn read_short(
    stream: &mut TcpStream,
    head: &Head,
    early: Vec<u8>,
) -> io::Result<Vec<u8>> {
    let mut body = early;
    match head.length {
        Some(len) if len > MAX_SHORT => return Err(garbled("a short answer of more than 16 MiB")),
        Some(len) => {
            let len = len as usize;
            if body.len() < len {
                let at = body.len();
                body.resize(len, 0);
                stream.read_exact(&mut body[at..]).await?;
            }
            body.truncate(len);
            return Ok(body);
        }
        None => {}
    }
    // Framed by the close (the request asked for one).
    (&mut *stream)
        .take(MAX_SHORT)
        .read_to_end(&mut body)
        .await?;
    if head.chunked {
        return dechunk(&body).ok_or_else(|| garbled("a chunked body that does not parse"));
    }
    Ok(body)
}

/// The data of a whole chunked body (extensions and trailers dropped).
fn dechunk(mut bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len());
    loop {
        let line_end = bytes.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&bytes[..line_end]).ok()?;
        let size_text = size_text.split(';').next()?.trim();
        let size = usize::from_str_radix(size_text, 16).ok()?;
        bytes = &bytes[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(bytes.get(..size)?);
        bytes = bytes.get(size..)?.strip_prefix(b"\r\n")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_gives_its_status_and_framing() {
        let head = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nx: y\r\n\r\n").unwrap();
        assert_eq!(
            head,
            Head {
                status: 200,
                length: Some(12),
                chunked: false
            }
        );
        let head = parse_head(b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!(head.unwrap().length, None);
        for bad in [
            &b"SSH-2.0\r\n\r\n"[..],
            b"HTTP/1.1 abc\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
        ] {
            let e = parse_head(bad).unwrap_err();
            assert!(e.kind() == io::ErrorKind::InvalidData, "{e}");
        }
    }

    #[test]
    fn a_chunked_body_is_its_chunks_data() {
        assert_eq!(
            dechunk(b"5\r\nhello\r\n1;x=y\r\n!\r\n0\r\n\r\n").unwrap(),
            b"hello!"
        );
        assert!(dechunk(b"5\r\nhel").is_none());
    }
}
