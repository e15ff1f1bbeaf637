//! `files_upload`: POST /files/upload, `multipart/form-data`: a text part `path` (the
//! target directory, which must exist) and one or more file parts, answered as `{files:
//! [entry...]}` in part order. Each file is judged on its own (its name one plain name, its
//! extension by `paths.upload_extensions`, its size by `paths.max_file_bytes`) before a
//! byte of it is written, and streamed into an atomic write; file parts sent before `path`
//! are held in memory until it comes (each within the per-file limit, all within the body
//! limit). At most `paths.max_upload_files` file parts; every file is renamed into place
//! only once the whole body is read, so a refused upload leaves nothing written.

use super::entry::FileEntry;
use super::errors::over_body_limit;
use super::{Route, blocking, required, service};
use crate::error::{ApiError, Code};
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody, FormPart};
use crate::server::openapi::op::{Answer, Body, Doc, PATH_WRITE, json_schema};
use crate::server::route::on;
use crate::services::files::{FileError, FileService, PendingWrite, WriteOptions};
use crate::wire::EntryInfo;
use axum::extract::State;
use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, upload),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/files/upload",
    body: ExampleBody::Form(&[
        FormPart::Text("path", "/workspace/docs"),
        FormPart::File("file", "guide.md", "# Guide\n"),
    ]),
    files: &[("docs/index.md", "# Docs\n")],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"files":[{"name":"guide.md","path":"/workspace/docs/guide.md","type":"file","size":8,"mode":"0644","modified_at":"2025-06-01T12:00:00Z"}]}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesUpload, "Upload files")
    .describe("A text part `path` (the target directory, which must exist) and one or more file parts; each file judged on its own (one plain name, `paths.upload_extensions`, `paths.max_file_bytes`) before a byte of it is written. At most `paths.max_upload_files` file parts (more is 413 `payload_too_large`); files are renamed into place only once every part is read, so a refused upload writes nothing. A file of the same name is replaced.")
    .body(Body::Multipart(|_| {
        json_schema!({
            "type": "object",
            "required": ["path", "file"],
            "properties": {
                "path": {"type": "string", "description": "The target directory."},
                "file": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "contentMediaType": "application/octet-stream"},
                    "description": "File parts (any part name; each with a file name).",
                },
            },
        })
    }))
    .answers(&[Answer::json("The written files' entries, in part order.", |g| {
        let entry = g.subschema_for::<FileEntry>();
        json_schema!({
            "type": "object",
            "required": ["files"],
            "properties": {"files": {"type": "array", "items": entry}},
            "additionalProperties": false,
        })
    })])
    .errors(&[
        PATH_WRITE,
        &[Code::NotFound, Code::NotADirectory, Code::IsADirectory, Code::ExtensionNotAllowed],
    ]);

/// An upload replaces a file of the same name; the target directory must exist.
const OPTIONS: WriteOptions = WriteOptions {
    overwrite: true,
    parents: false,
    sync: false,
    // A part's length is not declared.
    expected_len: None,
    metadata: None,
};

async fn upload(
    State(app): State<SharedState>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<axum::Json<Value>, ApiError> {
    let mut multipart = multipart.map_err(|e| {
        ApiError::invalid(
            "Content-Type",
            format!("the body must be multipart/form-data: {}", e.body_text()),
        )
    })?;
    let files = service(&app);
    let cap = files.max_upload_files();
    let mut target: Option<String> = None;
    let mut held: Vec<(String, Bytes)> = Vec::new();
    // Every file waits in its temp file until the whole body is read and judged: a refusal
    // anywhere (a later part's name, size, the part cap) drops them all, nothing written.
    let mut staged: Vec<PendingWrite> = Vec::new();
    let mut parts = 0usize;
    while let Some(field) = multipart.next_field().await.map_err(part_error)? {
        match (field.file_name().map(str::to_owned), field.name()) {
            (Some(name), _) => {
                parts += 1;
                if parts > cap {
                    return Err(too_many_parts(cap));
                }
                match &target {
                    // The service judges the name before it reads a byte of the part.
                    Some(dir) => {
                        let pending = files
                            .stage_upload_stream(
                                dir,
                                &name,
                                field.map(|c| c.map_err(body_error)),
                                OPTIONS,
                            )
                            .await?;
                        staged.push(pending);
                    }
                    None => {
                        // Judged before the part is held in memory.
                        files.check_upload_name(&name)?;
                        let bytes = hold(&files, &name, field).await?;
                        held.push((name, bytes));
                    }
                }
            }
            (None, Some("path")) => {
                if target.is_some() {
                    return Err(ApiError::invalid("path", "send one `path` part"));
                }
                let dir = field.text().await.map_err(part_error)?;
                let (held, files, stage_dir) =
                    (std::mem::take(&mut held), files.clone(), dir.clone());
                let pending = blocking(move || {
                    held.iter()
                        .map(|(name, bytes)| files.stage_upload(&stage_dir, name, bytes, OPTIONS))
                        .collect::<Result<Vec<_>, _>>()
                })
                .await?;
                staged.extend(pending);
                target = Some(dir);
            }
            (None, other) => {
                let other = other.unwrap_or_default().to_owned();
                return Err(ApiError::invalid(
                    other.clone(),
                    format!("unknown part `{other}`: send a text part `path` and file parts"),
                ));
            }
        }
    }
    required(target, "path")?;
    if parts == 0 {
        return Err(ApiError::invalid(
            "file",
            "no file part: send one or more parts with a file name",
        ));
    }
    let written = blocking(move || {
        staged
            .into_iter()
            .map(PendingWrite::commit)
            .collect::<Result<Vec<_>, _>>()
    })
    .await?;
    Ok(axum::Json(
        json!({ "files": written.iter().map(EntryInfo::from).collect::<Vec<_>>() }),
    ))
}

/// An upload with more file parts than `paths.max_upload_files`: 413, as a body over its
/// limit is (the cap bounds what one request may make, like the size limits).
fn too_many_parts(cap: usize) -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!(
            "the upload has more than {cap} file parts (`paths.max_upload_files`); nothing was written"
        ),
    )
    .with_param("file")
}

/// A file part that came before `path`, read into memory within the per-file limit.
async fn hold(
    files: &FileService,
    name: &str,
    mut field: axum::extract::multipart::Field<'_>,
) -> Result<Bytes, ApiError> {
    let limit = files.max_file_bytes();
    let mut bytes = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(part_error)? {
        if bytes.len() as u64 + chunk.len() as u64 > limit {
            return Err(FileError::TooLarge {
                path: name.into(),
                limit,
            }
            .into());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}

/// A body error while a file part streams: the body limit stays recognisable.
fn body_error(e: MultipartError) -> Box<dyn std::error::Error + Send + Sync> {
    if e.status() == http::StatusCode::PAYLOAD_TOO_LARGE {
        Box::new(super::errors::BodyLimit)
    } else {
        Box::new(e)
    }
}

/// A malformed body (or one cut by the body limit) while reading the parts.
fn part_error(e: MultipartError) -> ApiError {
    if over_body_limit(&e) || e.status() == http::StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            Code::PayloadTooLarge,
            "the request body is over the size limit",
        )
    } else {
        ApiError::new(
            Code::InvalidRequest,
            format!("bad multipart body: {}", e.body_text()),
        )
    }
}
