//! GET /files/watch?path=[&recursive=true]: changes under a directory (or of one file) as
//! server-sent events, from the file service's watch (`services/files/watch.rs`), each
//! rendered by `wire/watch.rs` (shared with the engine's watch).
//!
//! The path is judged and opened before the stream starts, so a refusal or a missing path
//! is a normal typed answer. Then:
//!
//! - `create`, `modify`, `delete`: `{path, type, entry?}`; `rename`: `{path, from, type,
//!   entry?}` (`path` the new name). `type` is what the kernel reported (`file`, `dir`,
//!   `symlink`, `other`; a delete says only `dir` or `file`), `entry` the entry info of the
//!   path as it is when the event is sent (absent when it is gone or refused).
//! - `overflow`: `{path, message}`: events were lost (this reader fell the watch's buffer
//!   behind, or the kernel's queue overflowed); list the path again to resynchronize.
//! - `error`: the server's flat error body of a row: `internal_error` when a directory
//!   cannot be watched (the system's watch limit; the stream goes on) or the watch failed,
//!   `not_found` when the watched path went away; the stream ends after those two.
//! - `: keep-alive` comments every 15 s.
//!
//! A reader that stops reading costs the watch's bounded buffer and hyper's write buffer,
//! never more: the watch drops what does not fit and owes an `overflow`.

use super::{Route, blocking, required, service};
use crate::error::{ApiError, ApiResult, Code};
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::route::on;
use crate::services::files::FileService;
use crate::services::files::watch::{DEFAULT_CAPACITY, Watch, WatchEvent};
use crate::wire::watch::{Rendered, render};
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use std::time::Duration;

pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// The most handed to the connection at once: a burst of small events goes out in one
/// write, and a reader that does not read holds at most hyper's buffer of them.
const CHUNK: usize = 32 * 1024;

pub(super) static ROUTE: Route = Route {
    bind: |f| on(f, watch),
    example: &EXAMPLE,
    doc: &DOC,
};

/// A watch of a file that is not there: the path is judged and opened before the stream
/// starts (the stream itself never ends on its own, so it cannot be an example here).
static EXAMPLE: Example = Example {
    method: "GET",
    target: "/files/watch?path=/workspace/missing&recursive=true",
    body: ExampleBody::None,
    files: &[],
    status: 404,
    headers: &[],
    answer: r#"{"error": "`/workspace/missing` does not exist", "type": "NotFoundError", "code": "not_found"}"#,
};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct WatchQuery {
    /// A directory (its changes) or a file; absolute, or relative to the working directory.
    #[schemars(required, with = "String", length(min = 1))]
    path: Option<String>,
    #[serde(default)]
    recursive: bool,
}

/// The stream's events (the module's comment says when each comes), for the OpenAPI document.
pub(super) const DOC: crate::server::openapi::op::Doc = {
    use super::entry::FileEntry;
    use crate::server::openapi::op::{Answer, Doc, Event, JsonSchema, PATH_READ, json_schema};
    fn change(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let entry = g.subschema_for::<FileEntry>();
        json_schema!({
            "type": "object",
            "required": ["path", "type"],
            "properties": {
                "path": {"type": "string"},
                "from": {"type": "string", "description": "`rename` only: the old name."},
                "type": {"type": "string", "enum": ["file", "dir", "symlink", "other"]},
                "entry": entry,
            },
        })
    }
    Doc::new(EndpointId::FilesWatch, "Watch changes")
        .describe("Changes under a directory (or of one file) as server-sent events, with `: keep-alive` comments every 15 s. The path is judged and opened before the stream starts, so a refusal or a missing path is a normal typed answer.")
        .query(WatchQuery::json_schema)
        .answers(&[Answer::events("The changes, until the watched path goes away.", &[
            Event::new("create", "A path was created.", change),
            Event::new("modify", "A file was written.", change),
            Event::new("delete", "A path was removed (`type` is `dir` or `file`).", change),
            Event::new("rename", "A path was renamed: `path` the new name, `from` the old.", change),
            Event::new("overflow", "Events were lost; list the path again.", |_| {
                json_schema!({
                    "type": "object",
                    "required": ["path", "message"],
                    "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
                })
            }),
            Event::new(
                "error",
                "The flat error body: `internal_error` (a directory cannot be watched; the stream goes on, or the watch failed) or `not_found` (the path went away; the stream ends).",
                |_| json_schema!({"$ref": "#/components/schemas/Error"}),
            ),
        ])])
        .errors(&[PATH_READ, &[Code::NotFound, Code::NotADirectory]])
};

async fn watch(
    State(app): State<SharedState>,
    Query(query): Query<WatchQuery>,
) -> ApiResult<Response> {
    let raw = required(query.path, "path")?;
    let files = service(&app);
    let started = {
        let files = files.clone();
        blocking(move || files.watch(&raw, query.recursive, DEFAULT_CAPACITY)).await?
    };
    Ok(sse(Stream::new(started, files)))
}

fn sse(stream: Stream) -> Response {
    let body = futures::stream::unfold(stream, |mut stream| async move {
        stream
            .next()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), stream))
    });
    (
        [
            (http::header::CONTENT_TYPE, "text/event-stream"),
            (http::header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// The body: events as frames, taken from the watch only when hyper asks for more.
struct Stream {
    watch: Watch,
    files: FileService,
    keepalive: tokio::time::Interval,
    /// The watch ended (its last event sent).
    done: bool,
}

impl Stream {
    fn new(watch: Watch, files: FileService) -> Stream {
        let mut keepalive =
            tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
        keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Stream {
            watch,
            files,
            keepalive,
            done: false,
        }
    }

    /// The next chunk: the next event, with those already waiting behind it (up to
    /// [`CHUNK`] bytes), or a keep-alive.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let first = tokio::select! {
            event = self.watch.next() => event,
            _ = self.keepalive.tick() => return Some(Bytes::from_static(b": keep-alive\n\n")),
        };
        let Some(first) = first else {
            self.done = true;
            return None;
        };
        let mut chunk = BytesMut::new();
        self.push(&mut chunk, first);
        while !self.done && chunk.len() < CHUNK {
            match self.watch.try_next() {
                Some(event) => self.push(&mut chunk, event),
                None => break,
            }
        }
        Some(chunk.freeze())
    }

    fn push(&mut self, chunk: &mut BytesMut, event: WatchEvent) {
        let (name, data) = match render(event, &self.files, self.watch.path()) {
            Rendered::Event(change) => (change.name(), change.data()),
            Rendered::Unwatched(message) => {
                ("error", ApiError::new(Code::Internal, message).flat_body())
            }
            Rendered::Gone(message) => {
                self.done = true;
                ("error", ApiError::new(Code::NotFound, message).flat_body())
            }
            Rendered::Failed(message) => {
                self.done = true;
                ("error", ApiError::new(Code::Internal, message).flat_body())
            }
        };
        chunk.extend_from_slice(format!("event: {name}\ndata: {data}\n\n").as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use std::path::Path;

    fn stream_on(root: &Path) -> Stream {
        let files = crate::wire::watch::tests::files_on(root);
        let watch = files.watch(".", true, 16).unwrap();
        Stream::new(watch, files)
    }

    fn frame(chunk: &Bytes) -> (String, Value) {
        let text = std::str::from_utf8(chunk).unwrap();
        let rest = text.strip_prefix("event: ").unwrap();
        let (name, rest) = rest.split_once("\ndata: ").unwrap();
        let data = rest.strip_suffix("\n\n").unwrap();
        (name.to_owned(), serde_json::from_str(data).unwrap())
    }

    #[tokio::test]
    async fn a_change_is_a_named_event_with_the_entry_as_it_is_now() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut stream = stream_on(&root);
        std::fs::write(root.join(".env"), "hidden").unwrap();
        std::fs::File::create(root.join("a.txt")).unwrap();
        let (name, data) = frame(&stream.next().await.unwrap());
        assert_eq!(name, "create");
        let path = root.join("a.txt").display().to_string();
        assert_eq!(data["path"], path);
        assert_eq!(data["type"], "file");
        assert_eq!(data["entry"]["path"], path);
        assert_eq!(data["entry"]["size"], 0);

        std::fs::rename(root.join("a.txt"), root.join("b.txt")).unwrap();
        let (name, data) = frame(&stream.next().await.unwrap());
        assert_eq!(name, "rename");
        assert_eq!(data["from"], path);
        assert_eq!(data["path"], root.join("b.txt").display().to_string());

        std::fs::remove_file(root.join("b.txt")).unwrap();
        let (name, data) = frame(&stream.next().await.unwrap());
        assert_eq!(name, "delete");
        assert_eq!(
            data,
            json!({"path": root.join("b.txt").display().to_string(), "type": "file"})
        );
    }

    #[tokio::test]
    async fn overflow_and_the_end_are_events_too() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut stream = stream_on(&root);
        let mut chunk = BytesMut::new();
        stream.push(&mut chunk, WatchEvent::Overflow);
        let (name, data) = frame(&chunk.split().freeze());
        assert_eq!(name, "overflow");
        assert_eq!(data["path"], root.display().to_string());
        assert!(!stream.done);

        stream.push(&mut chunk, WatchEvent::Gone { path: root.clone() });
        let (name, data) = frame(&chunk.split().freeze());
        assert_eq!(name, "error");
        assert_eq!(data["code"], "not_found");
        assert_eq!(data["type"], "NotFoundError");
        assert!(stream.done);
        assert_eq!(stream.next().await, None);
    }
}
