//! A client that moves file bytes without copying them through its own memory: PUT sends
//! the body with `sendfile(2)` from the source file, GET splices the answer from the socket
//! into the destination file. With an ordinary client (read the file, send it; receive,
//! write the file) the client makes two copies per byte and, on a 2-core machine, is the
//! slowest stage of the pipeline; this one measures what the server can do.

use nix::fcntl::{FallocateFlags, FcntlArg, OFlag, SpliceFFlags, fallocate, fcntl, splice};
use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Instant;

const PIPE: usize = 1024 * 1024;

/// `127.0.0.1:PORT` of `http://127.0.0.1:PORT`: where to connect, and the request's `Host`
/// (a server that guards against DNS rebinding refuses any other).
fn authority(base: &str) -> &str {
    base.trim_start_matches("http://").trim_end_matches('/')
}

fn connect(base: &str) -> TcpStream {
    let stream = TcpStream::connect(authority(base)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

/// Reads until the end of the answer's head; the head and the body bytes read with it.
fn read_head(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed before its answer's head");
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = got.split_off(end + 4);
            return (String::from_utf8_lossy(&got).into_owned(), rest);
        }
    }
}

fn content_length(head: &str) -> u64 {
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .expect("an answer with a Content-Length")
}

/// PUT `src` to `target` (a request target: path and query), the body sent with
/// `sendfile`; the seconds from connect to the whole answer.
pub fn put_sendfile(base: &str, target: &str, src: &Path) -> f64 {
    send_file(base, "PUT", target, &[], src)
}

/// `method` `target` with `headers`, the body `src` sent with `sendfile`; the seconds from
/// connect to the whole (2xx) answer.
pub fn send_file(
    base: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    src: &Path,
) -> f64 {
    let started = Instant::now();
    let file = File::open(src).unwrap();
    let len = file.metadata().unwrap().len();
    let mut stream = connect(base);
    write!(
        stream,
        "{method} {target} HTTP/1.1\r\nHost: {}\r\n{}Content-Length: {len}\r\nConnection: close\r\n\r\n",
        authority(base),
        header_lines(headers)
    )
    .unwrap();
    sendfile_all(&stream, &file, len).unwrap();
    let (head, mut body) = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 2"), "{head}");
    stream.read_to_end(&mut body).unwrap();
    started.elapsed().as_secs_f64()
}

/// GET `target` into `dst`, the body spliced from the socket into the file; the seconds
/// from connect to the last byte in the file.
pub fn get_splice(base: &str, target: &str, dst: &Path) -> f64 {
    get_splice_with(base, target, &[], dst)
}

/// [`get_splice`] with `headers` in the request.
pub fn get_splice_with(base: &str, target: &str, headers: &[(&str, &str)], dst: &Path) -> f64 {
    let _ = std::fs::remove_file(dst);
    let started = Instant::now();
    let mut stream = connect(base);
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {}\r\n{}Connection: close\r\n\r\n",
        authority(base),
        header_lines(headers)
    )
    .unwrap();
    let (head, early) = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let len = content_length(&head);
    let mut out = File::create(dst).unwrap();
    out.write_all(&early).unwrap();
    splice_into(&stream, &out, early.len() as i64, len - early.len() as u64);
    started.elapsed().as_secs_f64()
}

fn header_lines(headers: &[(&str, &str)]) -> String {
    headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect()
}

/// Moves `len` bytes from `stream` into `out` at `at` through a pipe, the file's blocks
/// reserved first as the server reserves them for a write of declared length.
fn splice_into(stream: &TcpStream, out: &File, mut at: i64, mut left: u64) {
    let _ = fallocate(out, FallocateFlags::FALLOC_FL_KEEP_SIZE, at, left as i64);
    let (pipe_read, pipe_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
    let _ = fcntl(&pipe_write, FcntlArg::F_SETPIPE_SZ(PIPE as i32));
    while left > 0 {
        let want = (left as usize).min(PIPE);
        let moved = splice(
            stream,
            None,
            &pipe_write,
            None,
            want,
            SpliceFFlags::SPLICE_F_MOVE,
        )
        .unwrap();
        assert!(moved > 0, "the peer closed {left} bytes early");
        let mut pending = moved;
        while pending > 0 {
            pending -= splice(
                &pipe_read,
                None,
                out,
                Some(&mut at),
                pending,
                SpliceFFlags::SPLICE_F_MOVE,
            )
            .unwrap();
        }
        left -= moved as u64;
    }
}

/// The first `len` bytes of `file` to `stream` with `sendfile`, however many calls it
/// takes; a call that sends nothing (the peer gone) is an error.
pub fn sendfile_all(stream: &TcpStream, file: &File, len: u64) -> std::io::Result<()> {
    let mut offset: i64 = 0;
    while (offset as u64) < len {
        let left = (len - offset as u64) as usize;
        if nix::sys::sendfile::sendfile64(stream, file, Some(&mut offset), left)? == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
    }
    Ok(())
}

/// The floor of both directions: `src` sent over one loopback TCP connection with
/// `sendfile` and spliced into `dst` on the other end, no HTTP and no server; seconds.
pub fn file_over_tcp(src: &Path, dst: &Path) -> f64 {
    let _ = std::fs::remove_file(dst);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let started = Instant::now();
    let dst = dst.to_path_buf();
    let len = std::fs::metadata(src).unwrap().len();
    let receiver = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let out = File::create(dst).unwrap();
        splice_into(&stream, &out, 0, len);
    });
    let file = File::open(src).unwrap();
    let stream = connect(&addr.to_string());
    sendfile_all(&stream, &file, len).unwrap();
    receiver.join().unwrap();
    started.elapsed().as_secs_f64()
}
