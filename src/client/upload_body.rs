//! An upload's request body when it is not a local file (a local file leaves with
//! `sendfile`, `raw_files.rs`): a reader (stdin) is read as it comes, half a MiB at most
//! per chunk.

use super::types::Progress;
use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The size of an upload's body chunks.
const CHUNK: usize = 512 * 1024;

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
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[tokio::test]
    async fn a_reader_body_is_the_reader_whole_and_its_progress_adds_up_to_its_size() {
        // More than a chunk, and not a whole number of them.
        let bytes: Vec<u8> = (0..(3 * CHUNK + CHUNK / 3))
            .map(|i| (i % 253) as u8)
            .collect();
        let seen = Arc::new(AtomicU64::new(0));
        let counted = seen.clone();
        let progress: Progress = Arc::new(move |n| {
            counted.fetch_add(n, Ordering::Relaxed);
        });
        let body = reader_body(std::io::Cursor::new(bytes.clone()), Some(progress));
        let mut frames = http_body_util::BodyExt::into_data_stream(body);
        let mut got = Vec::new();
        while let Some(chunk) = frames.next().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        assert!(got == bytes, "{} bytes back of {}", got.len(), bytes.len());
        assert_eq!(seen.load(Ordering::Relaxed), bytes.len() as u64);
    }
}
