//! An upload's request body. A file is read on a blocking thread into a ring of buffers that
//! are used again once the connection has sent them: one copy per byte (file to buffer;
//! the socket's copy is the kernel's), one hand-over per half MiB, and no fresh memory per
//! chunk, which costs a page fault per 4 KiB and had made the client the slowest stage of
//! an upload to a local engine. A reader (stdin) is read as it comes.

use super::types::Progress;
use bytes::{Bytes, BytesMut};
use std::io::{self, Read};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The size of an upload's body chunks.
const CHUNK: usize = 512 * 1024;
/// How many chunks of a file may be read and not yet sent (8 MiB at most per upload).
const RING: usize = 16;

/// `file`'s bytes from where it stands as a streamed request body.
pub(super) fn file_body(mut file: std::fs::File, progress: Option<Progress>) -> reqwest::Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<io::Result<Bytes>>(RING / 2);
    tokio::task::spawn_blocking(move || {
        let mut ring: Vec<Arc<Vec<u8>>> = Vec::with_capacity(RING);
        for turn in 0.. {
            if ring.len() < RING {
                ring.push(Arc::new(vec![0; CHUNK]));
            }
            let slot = &mut ring[turn % RING];
            if Arc::get_mut(slot).is_none() {
                // Still held by the connection: this turn reads into a new one.
                *slot = Arc::new(vec![0; CHUNK]);
            }
            // The slot's buffer is no one else's now: `make_mut` hands it out without a copy.
            let n = match fill(&mut file, Arc::<Vec<u8>>::make_mut(slot)) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    // The error ends the body (the request fails with it).
                    let _ = tx.blocking_send(Err(e));
                    break;
                }
            };
            if let Some(p) = &progress {
                p(n as u64);
            }
            let chunk = Bytes::from_owner(Filled(Arc::clone(slot), n));
            if tx.blocking_send(Ok(chunk)).is_err() {
                break; // the request was dropped
            }
        }
    });
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    reqwest::Body::wrap_stream(chunks)
}

/// Reads until `buf` is full or the file ends: the bytes read.
fn fill(file: &mut std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(got) => n += got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The first `len` bytes of a ring buffer, as the owner of a chunk.
struct Filled(Arc<Vec<u8>>, usize);

impl AsRef<[u8]> for Filled {
    fn as_ref(&self) -> &[u8] {
        &self.0[..self.1]
    }
}

/// A reader as a streamed request body.
pub(super) fn reader_body(
    reader: impl AsyncRead + Send + Unpin + 'static,
    progress: Option<Progress>,
) -> reqwest::Body {
    let stream = futures::stream::unfold(Some(reader), move |state| {
        let progress = progress.clone();
        async move {
            let mut reader = state?;
            let mut buf = BytesMut::with_capacity(CHUNK);
            match reader.read_buf(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    if let Some(p) = &progress {
                        p(n as u64);
                    }
                    Some((Ok(buf.freeze()), Some(reader)))
                }
                // The error ends the body (the request fails with it).
                Err(e) => Some((Err(e), None)),
            }
        }
    });
    reqwest::Body::wrap_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use http_body_util::BodyExt;
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[tokio::test]
    async fn a_file_body_is_the_file_whole_and_its_progress_adds_up_to_its_size() {
        // More than the ring holds at once, and not a whole number of chunks.
        let bytes: Vec<u8> = (0..(RING * CHUNK + CHUNK / 3))
            .map(|i| (i % 253) as u8)
            .collect();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        std::io::Seek::rewind(&mut file).unwrap();
        let seen = Arc::new(AtomicU64::new(0));
        let counted = seen.clone();
        let progress: Progress = Arc::new(move |n| {
            counted.fetch_add(n, Ordering::Relaxed);
        });
        let body = file_body(file, Some(progress));
        let mut frames = body.into_data_stream();
        let mut got = Vec::new();
        while let Some(chunk) = frames.next().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        assert!(got == bytes, "{} bytes back of {}", got.len(), bytes.len());
        assert_eq!(seen.load(Ordering::Relaxed), bytes.len() as u64);
    }

    #[tokio::test]
    async fn an_empty_file_is_an_empty_body() {
        let body = file_body(tempfile::tempfile().unwrap(), None);
        assert!(body.collect().await.unwrap().to_bytes().is_empty());
    }
}
