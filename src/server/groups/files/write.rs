//! `files_write`: PUT /files/content?path=[&overwrite=false][&parents=true][&sync=true]
//! streams the raw body into the service's atomic write (a temp file beside the target,
//! then a rename), so a reader never sees half a file (over HTTP/1 with a declared length
//! the connection splices the body into the temp file: `crate::zero_copy`); `sync=true` also flushes it to the
//! disk before the answer. The body limit of the pipeline and the per-file limit
//! (`paths.max_file_bytes`) both end it with 413 and leave nothing behind.

use super::entry::FileEntry;
use super::{Route, required, service};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Body as RequestBody, Code, Doc, JsonSchema, PATH_WRITE};
use crate::server::route::on;
use crate::services::files::WriteOptions;
use crate::wire::EntryInfo;
use crate::zero_copy::{self, Channel};
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use http::HeaderMap;
use serde::Deserialize;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, write),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "PUT",
    target: "/files/content?path=/workspace/notes.txt",
    body: ExampleBody::Raw("hello, files"),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"name":"notes.txt","path":"/workspace/notes.txt","type":"file","size":12,"mode":"0644","modified_at":"2025-06-01T12:00:00Z"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesWrite, "Write a file")
    .describe("Streams the raw body into an atomic write (a temp file beside the target, then a rename); the body limit and `paths.max_file_bytes` end it with 413 and leave nothing behind. Over HTTP/1 a large body (more than 8 MiB still to come once the write starts) goes from the socket into the file past the HTTP layer, and its answer closes the connection (`Connection: close`).")
    .query(WriteQuery::json_schema)
    .body(RequestBody::Bytes("application/octet-stream"))
    .answers(&[Answer::json("The file's entry.", |g| g.subschema_for::<FileEntry>())])
    .errors(&[
        PATH_WRITE,
        &[Code::NotFound, Code::NotADirectory, Code::IsADirectory, Code::FileExists],
    ]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteQuery {
    /// Absolute, or relative to the server's working directory.
    #[schemars(required, with = "String", length(min = 1))]
    path: Option<String>,
    /// Replace an existing file (default); `false` answers 409 `file_exists` instead.
    #[serde(default = "yes")]
    overwrite: bool,
    /// Create missing parent directories (default: a missing parent is 404).
    #[serde(default)]
    parents: bool,
    /// Flush the file and the rename to the disk before answering (survives a power cut;
    /// slower). Without it the write is still atomic for every reader.
    #[serde(default)]
    sync: bool,
}

fn yes() -> bool {
    true
}

async fn write(
    State(app): State<SharedState>,
    Query(query): Query<WriteQuery>,
    Channel(channel): Channel,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let path = required(query.path, "path")?;
    // Over HTTP/1 the connection puts the body's bytes into the temp file itself
    // (`splice`), once the service has made it.
    let body = zero_copy::upload_body(channel.clone(), &headers, body);
    let options = WriteOptions {
        overwrite: query.overwrite,
        parents: query.parents,
        sync: query.sync,
        expected_len: body.declared_len(),
        // The server's write takes no metadata (its route has no such parameter).
        metadata: None,
    };
    let arming = body.arming();
    let written = service(&app)
        .write_pieces(&path, body, options, move |file| arming.arm(file))
        .await;
    let written = written.map(|entry| axum::Json(EntryInfo::from(&entry)));
    Ok(zero_copy::upload_answer(
        channel.as_ref(),
        written.map_err(ApiError::from),
    ))
}
