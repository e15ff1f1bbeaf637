//! A file's bytes between a local file and the engine without a copy through the client's
//! memory, as `cp` moves them: an upload of a local file leaves it with `sendfile(2)`, and
//! a download into a local file enters it with `splice(2)` on a thread of its own (the
//! pieces of `crate::zero_copy` the engine's own connections use: `poll_sendfile` and the
//! upload's drain). Through reqwest each byte was copied into the client's buffers and out
//! again, and the client was the slowest stage of a transfer to a local engine.
//!
//! The exchange is HTTP/1.1 on a fresh connection (`raw.rs`); a download whose answer has
//! no length (chunked) is made again through reqwest, whose stream any writer takes.

use super::error::{ClientError, ClientResult};
use super::launch::pid_alive;
use super::raw::{self, Request, broken};
use super::types::{EntryInfo, Progress};
use super::{Client, transport::Build};
use crate::zero_copy::drain::DrainHandle;
use crate::zero_copy::poll_sendfile;
use crate::zero_copy::send::Sender;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use nix::fcntl::{FallocateFlags, fallocate};
use std::fs::File;
use std::io::{self, SeekFrom};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::task::Poll;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The bytes of a file answer still on its connection: `early` came with the head, the
/// rest of `len` is on `stream`.
pub(super) struct RawBody {
    stream: TcpStream,
    early: Vec<u8>,
    len: u64,
}

impl RawBody {
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// The bytes as a stream, for a writer that is not a file: read in chunks of up to
    /// 256 KiB, exactly `len` in all (fewer is the engine ending the answer early).
    pub(super) fn into_stream(self) -> BoxStream<'static, ClientResult<Bytes>> {
        let RawBody { stream, early, len } = self;
        let state = (stream, early.len() as u64, len);
        let first = (!early.is_empty()).then(|| Ok(Bytes::from(early)));
        let rest = futures::stream::unfold(Some(state), |state| async move {
            let (mut stream, got, len) = state?;
            if got == len {
                return None;
            }
            let mut buf = vec![0u8; (len - got).min(256 * 1024) as usize];
            match stream.read(&mut buf).await {
                Ok(0) => Some((Err(ended_early(got, len)), None)),
                Ok(n) => {
                    buf.truncate(n);
                    let next = (stream, got + n as u64, len);
                    Some((Ok(Bytes::from(buf)), Some(next)))
                }
                Err(e) => Some((Err(broken(&e)), None)),
            }
        });
        futures::stream::iter(first).chain(rest).boxed()
    }

    /// Splices the bytes into `file` at its position (it ends after them); answers how
    /// many. The file's failures are reported under `context`.
    pub(super) async fn into_file(
        self,
        file: &mut tokio::fs::File,
        context: &str,
        progress: Option<Progress>,
    ) -> ClientResult<u64> {
        let local = |e| ClientError::io(context, e);
        // Nothing of the file may be in flight while its bytes are placed beside it.
        file.flush().await.map_err(local)?;
        let start = file.stream_position().await.map_err(local)?;
        let target = file
            .as_fd()
            .try_clone_to_owned()
            .map(File::from)
            .map_err(local)?;
        let RawBody { stream, early, len } = self;
        let early_len = early.len() as u64;
        target.write_all_at(&early, start).map_err(local)?;
        if let Some(p) = &progress {
            p(early_len);
        }
        if early_len < len {
            // The blocks reserved first, as the engine reserves them for an upload.
            let _ = fallocate(
                &target,
                FallocateFlags::FALLOC_FL_KEEP_SIZE,
                (start + early_len) as i64,
                (len - early_len) as i64,
            );
            let span = (start, start + early_len, start + len);
            splice_rest(&stream, target, span, context, progress).await?;
        }
        file.seek(SeekFrom::Start(start + len))
            .await
            .map_err(local)?;
        Ok(len)
    }
}

/// Takes the socket's bytes into `target` from file offset `from` up to `end`, on the
/// drain's thread, reporting each batch that landed; the body starts at offset `body`.
async fn splice_rest(
    stream: &TcpStream,
    target: File,
    (body, from, end): (u64, u64, u64),
    context: &str,
    progress: Option<Progress>,
) -> ClientResult<()> {
    let mut handle = DrainHandle::new(target);
    // No thread or pipe to be had (a process at its limits): nothing was taken yet.
    handle
        .start(stream.as_fd(), from, end - from)
        .map_err(|e| ClientError::io(context, e))?;
    let mut seen = from;
    while seen < end {
        let landed = std::future::poll_fn(|cx| handle.drain.poll_beyond(cx, seen))
            .await
            .map_err(|e| match is_socket_error(&e) {
                true => broken(&e),
                false => ClientError::io(context, e),
            })?;
        if landed <= seen {
            return Err(ended_early(seen - body, end - body));
        }
        if let Some(p) = &progress {
            p(landed - seen);
        }
        seen = landed;
    }
    Ok(())
}

fn ended_early(got: u64, len: u64) -> ClientError {
    ClientError::Transport(format!(
        "the engine ended the file's bytes after {got} of {len}"
    ))
}

/// Whether an error of a transfer is the connection's rather than the local file's.
fn is_socket_error(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        BrokenPipe | ConnectionReset | ConnectionAborted | NotConnected | TimedOut
    )
}

/// What a download's answer turned out to be.
pub(super) enum Opened {
    Raw(RawBody),
    /// A success without a length: the caller asks again through reqwest.
    Unframed,
}

impl Client {
    /// `GET` of a file's bytes on a connection of the client's own: its head read, the
    /// bytes left on the connection; recovers once as [`Client::send`] does.
    pub(super) async fn open_download(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> ClientResult<Opened> {
        self.with_recovery(|engine| async move {
            let url = Client::url(&engine, "http", segments, query).map_err(|e| (e, false))?;
            let request = Request::new(&url, "GET", &engine, self.connection_header(), None)
                .map_err(|e| (e, false))?;
            let gone = |e| (e, !pid_alive(engine.pid));
            let mut stream = request
                .open()
                .await
                .map_err(|(e, refused)| (e, refused || !pid_alive(engine.pid)))?;
            let (head, mut early) = raw::read_head(&mut stream).await.map_err(gone)?;
            if !head.success() {
                return Err(raw::refusal(&mut stream, &head, early).await);
            }
            let Some(len) = head.length else {
                return Ok(Opened::Unframed);
            };
            // The request asked for a close: nothing but this body follows it.
            early.truncate(len as usize);
            Ok(Opened::Raw(RawBody { stream, early, len }))
        })
        .await
    }

    /// `PUT` of the local file at `path` on a connection of the client's own, its bytes sent
    /// with `sendfile`; answers the written file's entry info. Recovers once as
    /// [`Client::send`] does (the file is opened again for the second attempt).
    pub(super) async fn upload_file(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
        path: &Path,
        progress: Option<Progress>,
    ) -> ClientResult<EntryInfo> {
        self.with_recovery(|engine| {
            let progress = progress.clone();
            async move {
                let local = |e| {
                    (
                        ClientError::io(format!("cannot read {}", path.display()), e),
                        false,
                    )
                };
                let file = File::open(path).map_err(local)?;
                let len = file.metadata().map_err(local)?.len();
                let url = Client::url(&engine, "http", segments, query).map_err(|e| (e, false))?;
                let request =
                    Request::new(&url, "PUT", &engine, self.connection_header(), Some(len))
                        .map_err(|e| (e, false))?;
                let mut stream = request
                    .open()
                    .await
                    .map_err(|(e, refused)| (e, refused || !pid_alive(engine.pid)))?;
                let sent = send_body(&stream, &file, len, progress.as_ref()).await;
                let sent = match sent {
                    // The file changed under the upload: the connection is dropped with the
                    // body short, so the engine keeps nothing of it.
                    Err(Unsent::Local(e)) => {
                        let context = format!("cannot send {}", path.display());
                        return Err((ClientError::io(context, e), false));
                    }
                    Err(Unsent::Socket(e)) => Err(broken(&e)),
                    Err(Unsent::Answered) | Ok(()) => Ok(()),
                };
                // A refusal may come before the whole body was taken (and break the send):
                // the answer says more than the broken pipe.
                let answer = raw::read_head(&mut stream).await;
                let gone = !pid_alive(engine.pid);
                let (head, early) = match (answer, sent) {
                    (Ok(answered), _) => answered,
                    (Err(_), Err(e)) | (Err(e), Ok(())) => return Err((e, gone)),
                };
                if !head.success() {
                    return Err(raw::refusal(&mut stream, &head, early).await);
                }
                let body = raw::read_short(&mut stream, &head, early)
                    .await
                    .map_err(|e| (e, false))?;
                serde_json::from_slice(&body).map_err(|e| {
                    let e = format!("the engine's answer is not what the protocol says: {e}");
                    (ClientError::Transport(e), false)
                })
            }
        })
        .await
    }

    /// The streamed download through reqwest (an answer without a length).
    pub(super) async fn stream_download(
        &self,
        build: &Build<'_>,
    ) -> ClientResult<(Option<u64>, BoxStream<'static, ClientResult<Bytes>>)> {
        let response = self.send(build).await?;
        let size = response.content_length();
        let body = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|e| ClientError::transport(&e)))
            .boxed();
        Ok((size, body))
    }
}

/// Why an upload's body was not sent whole.
enum Unsent {
    /// The file: it shrank, grew, or could not be read.
    Local(io::Error),
    Socket(io::Error),
    /// The engine answered (or closed) first.
    Answered,
}

/// Sends the `len` bytes of `file` with `sendfile`. The last byte waits until the file's
/// size is looked at again: a file that changed size fails the upload (its body short, so
/// the engine drops it) instead of landing as a mix of before and after.
async fn send_body(
    stream: &TcpStream,
    file: &File,
    len: u64,
    progress: Option<&Progress>,
) -> Result<(), Unsent> {
    if len == 0 {
        return Ok(());
    }
    let at = send_range(stream, file, 0, len - 1, progress).await?;
    if file.metadata().map_err(Unsent::Local)?.len() != len {
        return Err(changed());
    }
    send_range(stream, file, at, len, progress).await?;
    Ok(())
}

/// Sends `file`'s bytes from `at` up to offset `upto`; answers where it stopped (`upto`).
async fn send_range(
    stream: &TcpStream,
    file: &File,
    mut at: i64,
    upto: u64,
    progress: Option<&Progress>,
) -> Result<i64, Unsent> {
    // A large body from a thread of its own, as the engine's file answers go
    // (`zero_copy::send`): it does not go back through the runtime each time the socket's
    // buffer fills. A short one (or with no thread to be had) inline.
    let mut sender = Sender::start(stream.as_fd(), file, at, upto.saturating_sub(at as u64));
    while (at as u64) < upto {
        let want = usize::try_from(upto - at as u64).unwrap_or(usize::MAX);
        let n = std::future::poll_fn(|cx| {
            // Anything to read means the engine answered (a refusal before the body, or a
            // close): what it says, not more body, is next.
            if stream.poll_read_ready(cx).is_ready() {
                return Poll::Ready(Err(Unsent::Answered));
            }
            match sender.as_mut() {
                Some(sender) => sender.poll_send(cx, want),
                None => poll_sendfile(stream, cx, file, &mut at, want),
            }
            .map_err(sending_failed)
        })
        .await?;
        if sender.is_some() {
            at += n as i64; // the thread moves its own offset
        }
        if n == 0 {
            return Err(changed());
        }
        if let Some(p) = progress {
            p(n as u64);
        }
    }
    Ok(at)
}

fn sending_failed(e: io::Error) -> Unsent {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        return changed(); // the sending thread found the file shorter
    }
    match is_socket_error(&e) {
        true => Unsent::Socket(e),
        false => Unsent::Local(e),
    }
}

fn changed() -> Unsent {
    Unsent::Local(io::Error::other(
        "the file changed size while it was sent; nothing was written",
    ))
}

#[cfg(test)]
#[path = "raw_tests.rs"]
mod tests;
