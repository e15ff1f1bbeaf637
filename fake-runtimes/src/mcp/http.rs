//! A minimal HTTP/1.1 POST client over `TcpStream`.
//!
//! Handles Content-Length, chunked and read-to-EOF bodies, and reads
//! `text/event-stream` bodies only until the awaited JSON-RPC message,
//! because streamable-HTTP servers may keep such streams open.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    body: BufReader<Box<dyn Read>>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body_reader(&mut self) -> &mut BufReader<Box<dyn Read>> {
        &mut self.body
    }

    pub fn read_all(&mut self) -> Result<String, String> {
        let mut buf = Vec::new();
        self.body
            .read_to_end(&mut buf)
            .map_err(|e| format!("error reading response body: {e}"))?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

#[derive(Debug)]
struct Target {
    host: String,
    port: u16,
    path: String,
}

fn parse_url(url: &str) -> Result<Target, String> {
    if url.starts_with("https://") {
        return Err(format!(
            "https is not supported by the fake MCP client: {url}"
        ));
    }
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("MCP url must start with http://: {url}"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let bad_port = || format!("bad port in MCP url: {url}");
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        // [::1]:port
        let (h, tail) = v6
            .split_once(']')
            .ok_or_else(|| format!("bad IPv6 host in MCP url: {url}"))?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse::<u16>().map_err(|_| bad_port())?,
            None => 80,
        };
        (h, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse::<u16>().map_err(|_| bad_port())?),
            None => (authority, 80),
        }
    };
    if host.is_empty() {
        return Err(format!("missing host in MCP url: {url}"));
    }
    Ok(Target {
        host: host.to_string(),
        port,
        path: path.to_string(),
    })
}

/// Sends one POST with a JSON body and returns the parsed response head.
pub fn post(
    url: &str,
    headers: &[(String, String)],
    body: &str,
    timeout: Duration,
) -> Result<Response, String> {
    let t = parse_url(url)?;
    let stream = TcpStream::connect((t.host.as_str(), t.port))
        .map_err(|e| format!("error sending request for url ({url}): {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let mut req = format!(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        t.path,
        t.host,
        t.port,
        body.len()
    );
    for (k, v) in headers {
        if k.contains(['\r', '\n']) || v.contains(['\r', '\n']) {
            return Err(format!("header {k:?} contains a line break"));
        }
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    writer
        .write_all(req.as_bytes())
        .and_then(|()| writer.write_all(body.as_bytes()))
        .and_then(|()| writer.flush())
        .map_err(|e| format!("error sending request for url ({url}): {e}"))?;
    read_head(BufReader::new(stream), url)
}

fn read_head(mut reader: BufReader<TcpStream>, url: &str) -> Result<Response, String> {
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .map_err(|e| format!("error reading response from {url}: {e}"))?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("bad HTTP status line from {url}: {:?}", line.trim_end()))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| format!("error reading response headers from {url}: {e}"))?;
        let trimmed = line.trim_end();
        if n == 0 || trimmed.is_empty() {
            break;
        }
        if let Some((k, v)) = trimmed.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let chunked =
        find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let length = find("content-length").and_then(|v| v.parse::<u64>().ok());
    let body: Box<dyn Read> = if chunked {
        Box::new(Chunked {
            inner: reader,
            left: 0,
            done: false,
        })
    } else if let Some(n) = length {
        Box::new(reader.take(n))
    } else {
        Box::new(reader)
    };
    Ok(Response {
        status,
        headers,
        body: BufReader::new(body),
    })
}

/// Decodes `Transfer-Encoding: chunked` lazily so SSE can be read as it arrives.
struct Chunked {
    inner: BufReader<TcpStream>,
    left: usize,
    done: bool,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            self.inner.read_line(&mut size)?;
            if size.trim().is_empty() {
                // The CRLF that ends the previous chunk.
                size.clear();
                self.inner.read_line(&mut size)?;
            }
            let hex = size.trim().split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(hex, 16).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("bad chunk size {hex:?}"),
                )
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let n = buf.len().min(self.left);
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = parse_url("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/mcp")
        );
        let t = parse_url("http://localhost").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("localhost", 80, "/")
        );
        assert!(
            parse_url("https://x/mcp")
                .unwrap_err()
                .contains("https is not supported")
        );
        assert!(parse_url("ftp://x").is_err());
        assert_eq!(parse_url("http://[::1]:9/m").unwrap().host, "::1");
    }
}
