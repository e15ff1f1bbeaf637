//! envd's plain HTTP routes: `GET /health` (what `is_running()` asks: 204 while the
//! sandbox runs, 502 "was not found" once it is gone, as E2B's proxy answers), and
//! `GET`/`POST /files` (a file's bytes; a write from a raw `application/octet-stream` body
//! or from the parts of a `multipart/form-data` one, each part's file name its path;
//! a raw body may come gzip-compressed; each `X-Metadata-<key>` header a pair of the
//! written files' metadata, which the engine's write keeps).

use super::super::provider::{ByteStream, Sandbox};
use super::super::routes::RouteId;
use super::errors::{ApiError, envd_http, sandbox_gone};
use super::routes::{At, Door, Op};
use super::{Front, sandbox_id};
use crate::error::engine::EngineError;
use crate::services::files::Metadata;
use crate::wire::{SandboxStatus, WriteQuery};
use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{FromRequest, Multipart, Query, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use bytes::Bytes;
use futures::{SinkExt, TryStreamExt};
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use tower_http::decompression::RequestDecompressionLayer;

pub const OPS: &[Op] = &[
    Op {
        id: "e2b_health",
        door: Door::Envd,
        method: "GET",
        at: At::Path("/health"),
        summary: "204 while the sandbox runs (no token needed)",
        bind: || get(health),
    },
    Op {
        id: "e2b_files_read",
        door: Door::Envd,
        method: "GET",
        at: At::Path("/files"),
        summary: "a file's bytes (`path`, `username`)",
        bind: || get(read),
    },
    Op {
        id: "e2b_files_write",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/files"),
        summary: "write files: a raw body or multipart parts, gzip accepted, `X-Metadata-*` kept",
        bind: upload,
    },
];

/// The write route: a file's bytes flow to the provider as they come, a multipart part's
/// too: no limit here. The SDKs' `gzip=True` upload (`Content-Encoding: gzip`) is inflated
/// as it streams; any other encoding reaches `write`, which refuses it.
fn upload() -> MethodRouter<Arc<Front>> {
    post(write)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(
            tower::ServiceBuilder::new()
                // Only to make the route's error type `Infallible`: the route never
                // fails, and a body that does not inflate fails as the write reads
                // it (400), not here.
                .layer(HandleErrorLayer::new(|e: tower::BoxError| async move {
                    envd_http(400, format!("the upload cannot be decoded: {e}"))
                }))
                .layer(RequestDecompressionLayer::new().pass_through_unaccepted(true)),
        )
}

fn failed(id: &str, e: EngineError) -> Response {
    ApiError::envd(id, e).into_response()
}

async fn health(State(front): State<Arc<Front>>, headers: HeaderMap) -> Response {
    let id = sandbox_id(&headers);
    // One `info`: the handle's own lookup reads the record this answers from.
    match front.with_record(&id, RouteId::SandboxesInfo).await {
        Ok((_, record)) if record.status == SandboxStatus::Running => {
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(_) => envd_http(502, sandbox_gone(&id)),
        Err(e) => failed(&id, e),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FileQuery {
    path: Option<String>,
    /// Who reads or writes: the engine's file calls act as the sandbox's user.
    #[allow(dead_code)]
    username: Option<String>,
}

async fn read(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    Query(query): Query<FileQuery>,
) -> Response {
    let Some(path) = query.path.filter(|p| !p.is_empty()) else {
        return envd_http(400, "`path` is required");
    };
    let (id, sandbox) = match front
        .envd_sandbox(&headers, RouteId::FilesRead, failed)
        .await
    {
        Ok(found) => found,
        Err(refused) => return refused,
    };
    match sandbox.read_file(&path).await {
        Ok(file) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
                (header::CONTENT_LENGTH, file.size.to_string()),
            ],
            Body::from_stream(file.body.into_stream()),
        )
            .into_response(),
        Err(e) => failed(&id, e),
    }
}

/// envd's upload answer for one file: its metadata only when it has some, as envd reads
/// it back from the file.
fn written(info: &crate::wire::EntryInfo) -> serde_json::Value {
    let mut value = json!({"name": info.name, "type": if info.is_dir() { "directory" } else { "file" }, "path": info.path});
    if !info.metadata.is_empty() {
        value["metadata"] = json!(info.metadata);
    }
    value
}

fn query(path: String, metadata: &Metadata) -> WriteQuery {
    WriteQuery {
        path: Some(path),
        overwrite: Some(true),
        parents: Some(true),
        metadata: Some(metadata.clone()),
    }
}

/// The prefix of the upload headers that carry metadata (envd's `X-Metadata-`; header
/// names arrive lowercase, so keys are lowercase, as envd makes them).
const METADATA_HEADER: &str = "x-metadata-";

/// The upload's metadata from its `X-Metadata-<key>` headers (the first value of a key
/// sent twice, as envd takes it); envd's rules broken are its 400 `invalid metadata`.
fn metadata(headers: &HeaderMap) -> Result<Metadata, String> {
    let mut pairs = std::collections::BTreeMap::new();
    for name in headers.keys() {
        let Some(key) = name.as_str().strip_prefix(METADATA_HEADER) else {
            continue;
        };
        if key.is_empty() || pairs.contains_key(key) {
            continue;
        }
        let value = headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| format!("the metadata value of {key:?} is not printable ASCII"))?;
        pairs.insert(key.to_owned(), value.to_owned());
    }
    Metadata::new(pairs)
}

async fn write(
    State(front): State<Arc<Front>>,
    Query(asked): Query<FileQuery>,
    request: Request,
) -> Response {
    let headers = request.headers().clone();
    // Left by the decompression layer only when it is no encoding it inflates.
    if headers
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| v != "identity")
    {
        return envd_http(
            415,
            "an upload is accepted as it is or gzip-compressed (`Content-Encoding: gzip`), \
             no other encoding",
        );
    }
    let metadata = match metadata(&headers) {
        Ok(metadata) => metadata,
        Err(e) => return envd_http(400, format!("invalid metadata: {e}")),
    };
    let (id, sandbox) = match front
        .envd_sandbox(&headers, RouteId::FilesWrite, failed)
        .await
    {
        Ok(found) => found,
        Err(refused) => return refused,
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let path = asked.path.filter(|p| !p.is_empty());
    if content_type.starts_with("multipart/form-data") {
        let multipart = match Multipart::from_request(request, &()).await {
            Ok(m) => m,
            Err(e) => return envd_http(400, format!("a bad multipart body: {}", e.body_text())),
        };
        return write_parts(&id, sandbox, path, &metadata, multipart).await;
    }
    let Some(path) = path else {
        return envd_http(400, "`path` is required for an octet-stream upload");
    };
    let body: ByteStream = Box::pin(
        request
            .into_body()
            .into_data_stream()
            .map_err(std::io::Error::other),
    );
    match sandbox.write_file(query(path, &metadata), body).await {
        Ok(info) => axum::Json(json!([written(&info)])).into_response(),
        Err(e) => failed(&id, e),
    }
}

/// Each part is a file: its name the query's `path` when one file is sent, else the part's
/// file name; every part gets the upload's metadata, as envd gives it.
async fn write_parts(
    id: &str,
    sandbox: Arc<dyn Sandbox>,
    path: Option<String>,
    metadata: &Metadata,
    mut multipart: Multipart,
) -> Response {
    let mut answers = Vec::new();
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return envd_http(400, format!("a bad multipart body: {}", e.body_text())),
        };
        let target = match (&path, field.file_name()) {
            (Some(path), _) => path.clone(),
            (None, Some(name)) if !name.is_empty() => name.to_owned(),
            _ => return envd_http(400, "a part without a file name, and no `path`"),
        };
        // The part flows into the write as it comes (it borrows the body, so it is fed
        // through a channel): a large part, or a small gzip one that inflates to a large
        // one, is never held whole.
        let (mut feed, body) = futures::channel::mpsc::channel::<std::io::Result<Bytes>>(4);
        let body: ByteStream = Box::pin(body);
        let feeding = async move {
            let mut field = field;
            loop {
                let chunk = match field.chunk().await {
                    Ok(Some(chunk)) => Ok(chunk),
                    Ok(None) => return,
                    Err(e) => Err(std::io::Error::other(e.body_text())),
                };
                let failed = chunk.is_err();
                // A write that ended early (refused, failed) drops the receiver.
                if feed.send(chunk).await.is_err() || failed {
                    return;
                }
            }
        };
        let (wrote, ()) = tokio::join!(sandbox.write_file(query(target, metadata), body), feeding);
        match wrote {
            Ok(info) => answers.push(written(&info)),
            Err(e) => return failed(id, e),
        }
    }
    axum::Json(answers).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_comes_from_the_x_metadata_headers_as_envd_reads_them() {
        let mut headers = HeaderMap::new();
        headers.insert("X-Metadata-Owner", "me".parse().unwrap());
        headers.append("x-metadata-owner", "second".parse().unwrap());
        headers.insert("x-metadata-", "no key".parse().unwrap());
        headers.insert("content-type", "text/plain".parse().unwrap());
        let kept = metadata(&headers).unwrap();
        // Keys lowercased, the first of two values, the prefix alone no key.
        assert_eq!(
            kept.pairs(),
            &std::collections::BTreeMap::from([("owner".to_owned(), "me".to_owned())])
        );
        assert!(metadata(&HeaderMap::new()).unwrap().is_empty());
        headers.insert("x-metadata-long", "v".repeat(5000).parse().unwrap());
        assert!(metadata(&headers).unwrap_err().contains("4096"));
    }
}
