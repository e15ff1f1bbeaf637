//! A sandbox's files. Content flows both ways as it is read, so a large file is never held
//! whole: a local file goes up with `sendfile` and a download lands in a local file with
//! `splice` (`raw_files.rs`); any other writer gets the bytes chunk by chunk, and any other
//! upload is the request's streamed body.

use super::Client;
use super::error::{ClientError, ClientResult};
use super::events::{EventStream, typed};
use super::raw_files::{Opened, RawBody};
use super::types::{EntryInfo, Progress, WatchEvent, items};
use super::upload_body::reader_body;
use crate::wire::{MkdirBody, MoveBody};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::Method;
use serde_json::Value;
use std::any::Any;
use std::path::PathBuf;
use std::sync::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// What an upload sends.
pub enum Upload {
    /// A local file, opened again when the request is retried on a new engine.
    File(PathBuf),
    Bytes(Bytes),
    /// A reader that can be read once (stdin): a retry cannot send it again and says so.
    Reader(Mutex<Option<Box<dyn AsyncRead + Send + Unpin>>>),
}

impl Upload {
    pub fn reader(reader: impl AsyncRead + Send + Unpin + 'static) -> Upload {
        Upload::Reader(Mutex::new(Some(Box::new(reader))))
    }

    /// The body of one attempt (a local file goes with `sendfile` instead, `raw_files.rs`;
    /// as a body it is read as it comes).
    fn body(&self, progress: Option<Progress>) -> ClientResult<reqwest::Body> {
        match self {
            Upload::Bytes(bytes) => {
                if let Some(p) = &progress {
                    p(bytes.len() as u64);
                }
                Ok(reqwest::Body::from(bytes.clone()))
            }
            Upload::File(path) => {
                let file = std::fs::File::open(path)
                    .map_err(|e| ClientError::io(format!("cannot read {}", path.display()), e))?;
                Ok(reader_body(tokio::fs::File::from_std(file), progress))
            }
            Upload::Reader(slot) => {
                let reader = slot.lock().ok().and_then(|mut r| r.take()).ok_or_else(|| {
                    ClientError::Transport(
                        "the engine restarted during the upload, and a stream cannot be sent twice"
                            .into(),
                    )
                })?;
                Ok(reader_body(reader, progress))
            }
        }
    }
}

/// `PUT .../files/content` options.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Replace an existing file (the engine's default when `None`).
    pub overwrite: Option<bool>,
    /// Make missing parent directories.
    pub parents: Option<bool>,
}

/// A file being read: its size when the engine said it, and its bytes as they come.
pub struct Download {
    pub size: Option<u64>,
    body: Body,
}

/// Where a download's bytes are.
enum Body {
    /// On a connection of the client's own (`raw_files.rs`): spliced into a file, or read
    /// as a stream for any other writer.
    Raw(RawBody),
    Stream(BoxStream<'static, ClientResult<Bytes>>),
}

impl Download {
    /// The bytes as they arrive.
    pub fn into_stream(self) -> BoxStream<'static, ClientResult<Bytes>> {
        match self.body {
            Body::Raw(raw) => raw.into_stream(),
            Body::Stream(stream) => stream,
        }
    }

    /// Writes the bytes to `writer` as they arrive, then flushes it; answers how many were
    /// written. A failed write is reported under `context`. A local file
    /// (`tokio::fs::File`) takes them with `splice(2)`, never through the client's memory.
    pub async fn write_to<W: AsyncWrite + Unpin + 'static>(
        &mut self,
        writer: &mut W,
        context: &str,
        progress: Option<Progress>,
    ) -> ClientResult<u64> {
        // Taken: the bytes can be written once.
        let taken = std::mem::replace(
            &mut self.body,
            Body::Stream(futures::stream::empty().boxed()),
        );
        let body = match taken {
            Body::Raw(raw) => match (writer as &mut dyn Any).downcast_mut::<tokio::fs::File>() {
                Some(file) => return raw.into_file(file, context, progress).await,
                None => raw.into_stream(),
            },
            Body::Stream(stream) => stream,
        };
        write_stream(body, writer, context, progress).await
    }
}

async fn write_stream<W: AsyncWrite + Unpin>(
    mut body: BoxStream<'static, ClientResult<Bytes>>,
    writer: &mut W,
    context: &str,
    progress: Option<Progress>,
) -> ClientResult<u64> {
    let mut total = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        writer
            .write_all(&chunk)
            .await
            .map_err(|e| ClientError::io(context, e))?;
        total += chunk.len() as u64;
        if let Some(p) = &progress {
            p(chunk.len() as u64);
        }
    }
    writer
        .flush()
        .await
        .map_err(|e| ClientError::io(context, e))?;
    Ok(total)
}

impl Client {
    /// `GET .../files/content?path=`: the bytes as they come, left on their connection until
    /// [`Download::write_to`] takes them.
    pub async fn read_file(&self, id: &str, path: &str) -> ClientResult<Download> {
        let query = [("path", path.to_owned())];
        let segments = ["sandboxes", id, "files", "content"];
        if let Opened::Raw(raw) = self.open_download(&segments, &query).await? {
            return Ok(Download {
                size: Some(raw.len()),
                body: Body::Raw(raw),
            });
        }
        // An answer without a length: asked again through reqwest, whose stream takes it.
        let (size, stream) = self
            .stream_download(&|c, e| c.request(e, Method::GET, &segments, &query))
            .await?;
        Ok(Download {
            size,
            body: Body::Stream(stream),
        })
    }

    /// Reads a file into `writer` as it arrives; answers the number of bytes written.
    pub async fn read_file_to<W: AsyncWrite + Unpin + 'static>(
        &self,
        id: &str,
        path: &str,
        writer: &mut W,
        progress: Option<Progress>,
    ) -> ClientResult<u64> {
        self.read_file(id, path)
            .await?
            .write_to(writer, "cannot write the file's bytes", progress)
            .await
    }

    /// A whole file in memory (for small files).
    pub async fn read_file_bytes(&self, id: &str, path: &str) -> ClientResult<Vec<u8>> {
        let mut out = Vec::new();
        self.read_file_to(id, path, &mut out, None).await?;
        Ok(out)
    }

    /// `PUT .../files/content?path=[&overwrite=][&parents=]`, the body streamed from
    /// `upload`; answers the written file's entry info.
    pub async fn write_file(
        &self,
        id: &str,
        path: &str,
        upload: &Upload,
        options: WriteOptions,
        progress: Option<Progress>,
    ) -> ClientResult<EntryInfo> {
        let mut query = vec![("path", path.to_owned())];
        if let Some(overwrite) = options.overwrite {
            query.push(("overwrite", overwrite.to_string()));
        }
        if let Some(parents) = options.parents {
            query.push(("parents", parents.to_string()));
        }
        let segments = ["sandboxes", id, "files", "content"];
        if let Upload::File(local) = upload {
            return self.upload_file(&segments, &query, local, progress).await;
        }
        self.send_json(&|c, e| {
            let request = c
                .request(e, Method::PUT, &segments, &query)?
                .header(reqwest::header::CONTENT_TYPE, "application/octet-stream");
            Ok(request.body(upload.body(progress.clone())?))
        })
        .await
    }

    /// `GET .../files/list?path=&depth=`.
    pub async fn list_files(
        &self,
        id: &str,
        path: &str,
        depth: Option<u32>,
    ) -> ClientResult<Vec<EntryInfo>> {
        let mut query = vec![("path", path.to_owned())];
        if let Some(depth) = depth {
            query.push(("depth", depth.to_string()));
        }
        let value: Value = self
            .get(&["sandboxes", id, "files", "list"], &query)
            .await?;
        items(value, "entries")
    }

    /// `GET .../files/info?path=`.
    pub async fn file_info(&self, id: &str, path: &str) -> ClientResult<EntryInfo> {
        let query = [("path", path.to_owned())];
        self.get(&["sandboxes", id, "files", "info"], &query).await
    }

    /// `GET .../files/exists?path=`.
    pub async fn exists(&self, id: &str, path: &str) -> ClientResult<bool> {
        #[derive(serde::Deserialize)]
        struct Exists {
            exists: bool,
        }
        let query = [("path", path.to_owned())];
        let answer: Exists = self
            .get(&["sandboxes", id, "files", "exists"], &query)
            .await?;
        Ok(answer.exists)
    }

    /// `POST .../files/mkdir`: the new directory's entry info.
    pub async fn mkdir(&self, id: &str, path: &str, parents: bool) -> ClientResult<EntryInfo> {
        let body = MkdirBody {
            path: path.to_owned(),
            parents: Some(parents),
        };
        self.post(&["sandboxes", id, "files", "mkdir"], &body).await
    }

    /// `POST .../files/move`: the moved entry's info at its new path.
    pub async fn move_file(
        &self,
        id: &str,
        from: &str,
        to: &str,
        overwrite: bool,
    ) -> ClientResult<EntryInfo> {
        let body = MoveBody {
            from: from.to_owned(),
            to: to.to_owned(),
            overwrite: Some(overwrite),
        };
        self.post(&["sandboxes", id, "files", "move"], &body).await
    }

    /// `DELETE .../files?path=[&recursive=]`.
    pub async fn remove(&self, id: &str, path: &str, recursive: bool) -> ClientResult<()> {
        let query = [
            ("path", path.to_owned()),
            ("recursive", recursive.to_string()),
        ];
        self.delete(&["sandboxes", id, "files"], &query).await?;
        Ok(())
    }

    /// `GET .../files/watch?path=[&recursive=]`: changes as they happen; the stream lasts
    /// until the caller drops it (or the engine ends it with an `error` event).
    pub async fn watch(
        &self,
        id: &str,
        path: &str,
        recursive: bool,
    ) -> ClientResult<EventStream<WatchEvent>> {
        let query = [
            ("path", path.to_owned()),
            ("recursive", recursive.to_string()),
        ];
        let response = self
            .send(&|c, e| {
                Ok(
                    c.request(e, Method::GET, &["sandboxes", id, "files", "watch"], &query)?
                        .header(reqwest::header::ACCEPT, "text/event-stream"),
                )
            })
            .await?;
        Ok(typed(response, WatchEvent::parse))
    }
}
