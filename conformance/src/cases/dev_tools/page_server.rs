//! The page server of the fetch cases (no cases here): plain HTTP/1.1 on
//! `127.0.0.1:28461`, the one host and port the `dev-tools-local` profile allows, run on a
//! thread of its own for the life of the suite (started by the first case that needs it; a
//! second suite running at once finds the port taken by an identical server and uses it).
//!
//! Routes: `/page` (HTML), `/big` (100,000 bytes of `a`), `/binary` (bytes that are not
//! UTF-8), `/echo` (the method, the `x-test` header and the body), `/to-page` (302 to
//! `/page`), `/to-metadata` (302 to `169.254.169.254`), `/to-loopback` (302 to
//! `127.0.0.1:28462`, a port the profile does not allow), `/to-localhost` (302 to
//! `localhost:28461`, this very server by a name).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;

pub const ADDR: &str = "127.0.0.1:28461";
/// Allowed by the profile, but nothing listens there.
pub const CLOSED: &str = "127.0.0.1:28463";
pub const PAGE: &str = "<!doctype html><html><head><title>svc test page</title></head><body><p id=\"greeting\">hello from the test</p></body></html>";
pub const BINARY: &[u8] = &[0xff, 0xfe, 0x00, b'o', b'k', 0x80];

/// Starts the server once; the base URL.
pub fn start() -> String {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        if let Ok(listener) = TcpListener::bind(ADDR) {
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    std::thread::spawn(move || {
                        let _ = serve(stream);
                    });
                }
            });
        }
    });
    format!("http://{ADDR}")
}

fn serve(mut stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or("").to_owned(),
        parts.next().unwrap_or("").to_owned(),
    );
    let (mut length, mut x_test) = (0usize, String::new());
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "x-test" => x_test = value.trim().to_owned(),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; length.min(1 << 20)];
    reader.read_exact(&mut body)?;
    let (status, extra, content_type, payload): (&str, String, &str, Vec<u8>) =
        match target.as_str() {
            "/page" => (
                "200 OK",
                String::new(),
                "text/html; charset=utf-8",
                PAGE.as_bytes().to_vec(),
            ),
            "/big" => ("200 OK", String::new(), "text/plain", vec![b'a'; 100_000]),
            "/binary" => (
                "200 OK",
                String::new(),
                "application/octet-stream",
                BINARY.to_vec(),
            ),
            "/echo" => {
                let text = format!(
                    "{method} x-test={x_test} body={}",
                    String::from_utf8_lossy(&body)
                );
                ("200 OK", String::new(), "text/plain", text.into_bytes())
            }
            "/to-page" => (
                "302 Found",
                "location: /page\r\n".into(),
                "text/plain",
                Vec::new(),
            ),
            "/to-metadata" => (
                "302 Found",
                "location: http://169.254.169.254/latest/meta-data/\r\n".into(),
                "text/plain",
                Vec::new(),
            ),
            "/to-loopback" => (
                "302 Found",
                "location: http://127.0.0.1:28462/\r\n".into(),
                "text/plain",
                Vec::new(),
            ),
            "/to-localhost" => (
                "302 Found",
                "location: http://localhost:28461/page\r\n".into(),
                "text/plain",
                Vec::new(),
            ),
            _ => (
                "404 Not Found",
                String::new(),
                "text/plain",
                b"no such page".to_vec(),
            ),
        };
    let head = format!(
        "HTTP/1.1 {status}\r\n{extra}content-type: {content_type}\r\ncontent-length: {}\r\nx-page-server: 1\r\nconnection: close\r\n\r\n",
        payload.len()
    );
    stream.write_all(head.as_bytes())?;
    if method != "HEAD" {
        stream.write_all(&payload)?;
    }
    stream.flush()
}
