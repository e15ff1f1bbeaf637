//! Bodies that flow through without being held: the remote's answer as chunks with an idle
//! limit (a file's bytes, an event stream), and an upload whose progress is watched, so a
//! transfer of any size has no total timeout yet a stalled one ends with `E9002`.

use super::failure::Failure;
use crate::engine::provider::ByteStream;
use crate::error::engine::EngineError;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The remote's body chunk by chunk; a silence of `idle` or a cut ends it with an error.
pub type Chunks = BoxStream<'static, Result<Bytes, EngineError>>;

pub fn chunks(response: reqwest::Response, idle: Duration, failure: Failure) -> Chunks {
    let body = response.bytes_stream().boxed();
    futures::stream::unfold(Some(body), move |body| {
        let failure = failure.clone();
        async move {
            let mut body = body?;
            match tokio::time::timeout(idle, body.next()).await {
                Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(body))),
                Ok(Some(Err(e))) => Some((Err(failure.transport(&e)), None)),
                Ok(None) => None,
                Err(_) => Some((Err(failure.silent(idle)), None)),
            }
        }
    })
    .boxed()
}

/// The chunks as a file body (errors become I/O errors, which end the answer early: the
/// client then sees fewer bytes than the announced length).
pub fn file_body(chunks: Chunks) -> ByteStream {
    chunks
        .map(|chunk| chunk.map_err(|e| std::io::Error::other(e.message)))
        .boxed()
}

/// When an upload last moved: each chunk the remote takes, and its end.
#[derive(Clone)]
pub struct Progress {
    origin: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            origin: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    pub(super) fn touch(&self) {
        let now = self.origin.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }

    fn still_for(&self) -> Duration {
        let now = self.origin.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }

    /// `body`, touching the progress as the remote takes each chunk and at its end.
    pub fn watch(&self, body: ByteStream) -> ByteStream {
        let progress = self.clone();
        futures::stream::unfold(Some(body), move |body| {
            let progress = progress.clone();
            async move {
                let mut body = body?;
                let next = body.next().await;
                progress.touch();
                next.map(|chunk| (chunk, Some(body)))
            }
        })
        .boxed()
    }

    /// Waits for `send` while the upload moves; `E9002` once it has stood still for
    /// `limit` (the remote stopped taking bytes, or took them all and does not answer).
    pub async fn guard<T>(
        &self,
        send: impl Future<Output = Result<T, EngineError>>,
        limit: Duration,
        failure: &Failure,
    ) -> Result<T, EngineError> {
        let check = (limit / 4).max(Duration::from_millis(10));
        tokio::pin!(send);
        loop {
            tokio::select! {
                outcome = &mut send => return outcome,
                _ = tokio::time::sleep(check) => {
                    if self.still_for() >= limit {
                        return Err(failure.silent(limit));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::engine::Code;

    #[tokio::test]
    async fn a_stalled_upload_ends_and_a_moving_one_does_not() {
        let failure = Failure::new("http://127.0.0.1:9".into());
        let progress = Progress::new();
        let limit = Duration::from_millis(100);
        let moving = async {
            for _ in 0..6 {
                tokio::time::sleep(Duration::from_millis(40)).await;
                progress.touch();
            }
            Ok(7)
        };
        assert_eq!(progress.guard(moving, limit, &failure).await.unwrap(), 7);
        let stalled = std::future::pending::<Result<(), EngineError>>();
        let e = progress.guard(stalled, limit, &failure).await.unwrap_err();
        assert_eq!(e.code, Code::ProviderTimeout);
    }
}
