//! A file write passed on to the remote engine socket to socket. The engine hands a
//! provider the body as an upload its connection can place itself (`crate::zero_copy`);
//! this provider arms it with its own connection to the remote, so once the request's head
//! is sent the body goes from the caller's socket through a pipe into the remote's socket
//! with `splice(2)`, never through the process's memory (through reqwest every byte was
//! read into a buffer and written out again). The exchange with the remote is HTTP/1.1 on
//! a fresh connection (`zero_copy::http1`), with the same headers as every call; the
//! bytes hyper had read before the arming come as ordinary chunks and are written first.
//!
//! An upload without a declared length (chunked), or a remote reached over TLS, goes
//! through reqwest as before (`files.rs`): the length is what the remote's own splice
//! needs, and TLS needs the bytes in memory.

use super::sandbox::RestSandbox;
use super::streams::Progress;
use crate::engine::provider::{ByteStream, ProviderResult, UploadBody};
use crate::error::engine::EngineError;
use crate::services::files::Piece;
use crate::wire::{EntryInfo, WriteQuery};
use crate::zero_copy::http1;
use futures::StreamExt;
use std::io;
use std::os::fd::AsFd;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

impl RestSandbox {
    pub async fn write_body(
        &self,
        query: WriteQuery,
        body: UploadBody,
    ) -> ProviderResult<EntryInfo> {
        let pairs = super::files::write_pairs(query);
        let segments = self.at(&["files", "content"]);
        let url = self.remote.url(&segments, &pairs);
        let Some(len) = body.declared_len().filter(|_| url.scheme() == "http") else {
            return self.write_pairs(&pairs, bytes_of(body)).await;
        };
        let progress = Progress::new();
        let failure = &self.remote.failure;
        let exchange = self.pass_on(&url, len, body, &progress);
        // No total limit (a file may be large), but a bound on standing still.
        let (status, bytes) = progress
            .guard(exchange, self.remote.timeouts.call, failure)
            .await?;
        if !(200..300).contains(&status) {
            return Err(failure.answer(status, &bytes));
        }
        failure.parse(&segments, &bytes)
    }

    /// Sends the request with `body` (of `len` declared bytes) to `url`; the answer's status
    /// and body.
    async fn pass_on(
        &self,
        url: &url::Url,
        len: u64,
        mut body: UploadBody,
        progress: &Progress,
    ) -> ProviderResult<(u16, Vec<u8>)> {
        let failure = &self.remote.failure;
        let mut stream = self.connect(url).await?;
        let head = self.request_head("PUT", url, Some(len))?;
        http1::send_head(&mut stream, &head)
            .await
            .map_err(|e| failure.cut(e))?;
        body.arming().arm_socket(stream.as_fd());
        // Each piece is passed on before the next is asked for: bytes hyper read before the
        // arming come first and must be in the socket before the splicing thread starts.
        let mut sent: io::Result<()> = Ok(());
        while let Some(piece) = body.next().await {
            progress.touch();
            match piece {
                Ok(Piece::Bytes(bytes)) => {
                    if let Err(e) = stream.write_all(&bytes).await {
                        sent = Err(e);
                        break;
                    }
                }
                Ok(Piece::Placed(_)) => {}
                Ok(Piece::Failed(e)) => {
                    sent = Err(e);
                    break;
                }
                // The caller's body broke: the remote's request is cut short (it keeps
                // nothing) and the caller is told.
                Err(e) => return Err(failure.cut(format_args!("the upload's body broke: {e}"))),
            }
        }
        drop(body);
        // A refusal may come before the whole body was taken (and break the send): the
        // answer says more than the broken pipe.
        let (head, early) = match (http1::read_head(&mut stream).await, sent) {
            (Ok(answered), _) => answered,
            (Err(_), Err(e)) | (Err(e), Ok(())) => return Err(self.io_failure(&e)),
        };
        progress.touch();
        let bytes = http1::read_short(&mut stream, &head, early)
            .await
            .map_err(|e| self.io_failure(&e))?;
        Ok((head.status, bytes))
    }

    /// The head of a request to `url` with the headers of every call (and the body's
    /// type when it has one, `body_len`).
    pub(super) fn request_head(
        &self,
        method: &str,
        url: &url::Url,
        body_len: Option<u64>,
    ) -> ProviderResult<String> {
        let headers = self.remote.headers();
        let mut lines = Vec::new();
        if body_len.is_some() {
            lines.push(("content-type", "application/octet-stream"));
        }
        for (name, value) in &headers {
            // The values were checked as header values when the remote was made.
            lines.push((name, value.to_str().unwrap_or_default()));
        }
        http1::request_head(method, url, &lines, body_len).map_err(|e| self.remote.failure.cut(e))
    }

    /// A connection of its own to the remote at `url` (an `http://` one), within the
    /// connect limit.
    pub(super) async fn connect(&self, url: &url::Url) -> ProviderResult<TcpStream> {
        let failure = &self.remote.failure;
        let host = url.host_str().unwrap_or_default();
        let address = format!("{host}:{}", url.port_or_known_default().unwrap_or(80));
        let limit = self.remote.timeouts.connect;
        let stream = tokio::time::timeout(limit, TcpStream::connect(&address))
            .await
            .map_err(|_| failure.no_answer(limit))?
            .map_err(|e| failure.unreachable(e))?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    pub(super) fn io_failure(&self, e: &io::Error) -> EngineError {
        let failure = &self.remote.failure;
        match e.kind() {
            io::ErrorKind::InvalidData => failure.garbled(e),
            _ => failure.cut(e),
        }
    }
}

/// The bytes of an upload nobody armed, for the streamed write.
fn bytes_of(body: UploadBody) -> ByteStream {
    body.map(|piece| match piece {
        Ok(Piece::Bytes(bytes)) => Ok(bytes),
        Ok(Piece::Failed(cause)) => Err(cause),
        Ok(Piece::Placed(_)) => Err(io::Error::other("bytes were placed before the arming")),
        Err(e) => Err(io::Error::other(e)),
    })
    .boxed()
}
