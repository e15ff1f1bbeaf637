//! A file read passed on from the remote engine socket to socket, the mirror of
//! `upload.rs`: for a caller whose connection can splice (the engine asks through
//! `Sandbox::read_file_spliced`), this provider opens its own HTTP/1.1 connection to an
//! `http://` remote, reads the answer's head, and hands the engine the remote's socket with
//! the body still on it (`FileBody::Socket`); the engine's connection then splices the body
//! into the caller's socket (`crate::zero_copy`), never through the process's memory
//! (through reqwest every byte was read into a buffer and written out again).
//!
//! The bounds are reqwest's path's: the head within the call limit, the body's silences
//! within the idle one (the connection ends the answer, the caller sees it short). An error
//! answer is read whole and becomes the remote's own error, as on every route. A remote
//! reached over TLS goes through reqwest (`files.rs`): TLS needs the bytes in memory.

use super::sandbox::RestSandbox;
use crate::engine::provider::{FileBody, FileRead, ProviderResult};
use crate::zero_copy::{SocketBody, http1};

impl RestSandbox {
    pub async fn read_spliced(&self, file: &str) -> ProviderResult<FileRead> {
        let segments = self.at(&["files", "content"]);
        let url = self.remote.url(&segments, &[("path", file.to_owned())]);
        if url.scheme() != "http" {
            return self.read(file).await;
        }
        let limit = self.remote.timeouts.call;
        tokio::time::timeout(limit, self.open_body(&url))
            .await
            .map_err(|_| self.remote.failure.no_answer(limit))?
    }

    /// Sends the read to `url` and reads the answer's head: a success is its socket with the
    /// body on it, anything else the remote's error.
    async fn open_body(&self, url: &url::Url) -> ProviderResult<FileRead> {
        let failure = &self.remote.failure;
        let mut stream = self.connect(url).await?;
        let head = self.request_head("GET", url, None)?;
        http1::send_head(&mut stream, &head)
            .await
            .map_err(|e| failure.cut(e))?;
        let (head, early) = http1::read_head(&mut stream)
            .await
            .map_err(|e| self.io_failure(&e))?;
        if !head.success() {
            let bytes = http1::read_short(&mut stream, &head, early)
                .await
                .map_err(|e| self.io_failure(&e))?;
            return Err(failure.answer(head.status, &bytes));
        }
        let size = head
            .length
            .ok_or_else(|| failure.garbled("a file's bytes came without their length"))?;
        let idle = self.remote.timeouts.idle;
        Ok(FileRead {
            size,
            body: FileBody::Socket(SocketBody::new(stream, early, size, idle)),
        })
    }
}
