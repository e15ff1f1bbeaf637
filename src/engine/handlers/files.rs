//! Files of a sandbox: content (raw bytes both ways, streamed), list, info, exists, mkdir,
//! move, remove, and changes as events. Entry info is the server's file_ops shape.

use super::super::extract::{Body, Query};
use super::super::routes::RouteId;
use super::support::Sandboxed;
use super::{Op, Request, schema};
use crate::engine::provider::FileBody;
use crate::error::engine::{Code, EngineError};
use crate::wire::{
    EntryInfo, EntryList, Exists, LIST_DEPTH_MAX, MkdirBody, MoveBody, PathQuery, Removed,
    WriteQuery, watch_events,
};
use crate::zero_copy::{self, Channel};
use axum::Json;
use axum::response::{IntoResponse, Response};
use axum::routing::on;
use http::{HeaderMap, Method};

fn required(path: Option<String>) -> Result<String, EngineError> {
    path.filter(|p| !p.is_empty()).ok_or_else(|| {
        EngineError::new(Code::InvalidArgument, "query parameter `path` is required")
    })
}

/// A `local` sandbox's file goes out with `sendfile` over HTTP/1 ([`crate::zero_copy`]),
/// a `rest` sandbox's with `splice` from the remote's socket; other providers' bytes are
/// streamed as they come.
pub async fn read(
    sb: Sandboxed,
    Query(query): Query<PathQuery>,
    method: Method,
    Channel(channel): Channel,
) -> Result<Response, EngineError> {
    let path = required(query.path)?;
    // A socket body only for a connection that splices it (else it would be read through
    // buffers, where a provider's own streaming read may do better), and never for a HEAD:
    // its body is never written, and the remote's connection would wait on the channel.
    let spliced = channel.is_some() && method != Method::HEAD;
    let file = sb
        .on(|s| {
            let path = path.clone();
            async move {
                match spliced {
                    true => s.read_file_spliced(&path).await,
                    false => s.read_file(&path).await,
                }
            }
        })
        .await?;
    Ok((
        [
            (
                http::header::CONTENT_TYPE,
                "application/octet-stream".to_owned(),
            ),
            (http::header::CONTENT_LENGTH, file.size.to_string()),
        ],
        match file.body {
            FileBody::File(file) => zero_copy::file_body(channel, file),
            FileBody::Socket(socket) => zero_copy::socket_body(channel, socket),
            FileBody::Stream(stream) => axum::body::Body::from_stream(stream),
        },
    )
        .into_response())
}

/// Over HTTP/1 a `local` sandbox's file takes the body straight from the socket with
/// `splice` ([`crate::zero_copy`]); other providers get the bytes.
pub async fn write(
    sb: Sandboxed,
    Query(query): Query<WriteQuery>,
    Channel(channel): Channel,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Response, EngineError> {
    required(query.path.clone())?;
    let sandbox = sb.sandbox().await?;
    let body = zero_copy::upload_body(channel.clone(), &headers, body);
    let written = sandbox.write_upload(query, body).await.map(Json);
    Ok(zero_copy::upload_answer(channel.as_ref(), written))
}

pub async fn list(
    sb: Sandboxed,
    Query(query): Query<PathQuery>,
) -> Result<Json<EntryList>, EngineError> {
    let path = required(query.path)?;
    let depth = query.depth.unwrap_or(1);
    if !(1..=LIST_DEPTH_MAX).contains(&depth) {
        return Err(EngineError::new(
            Code::InvalidArgument,
            format!("`depth` must be 1 to {LIST_DEPTH_MAX}, not {depth}"),
        ));
    }
    let entries = sb
        .on(|s| {
            let path = path.clone();
            async move { s.list_files(&path, depth).await }
        })
        .await?;
    Ok(Json(EntryList { entries }))
}

pub async fn info(
    sb: Sandboxed,
    Query(query): Query<PathQuery>,
) -> Result<Json<EntryInfo>, EngineError> {
    let path = required(query.path)?;
    Ok(Json(
        sb.on(|s| {
            let path = path.clone();
            async move { s.file_info(&path).await }
        })
        .await?,
    ))
}

pub async fn exists(
    sb: Sandboxed,
    Query(query): Query<PathQuery>,
) -> Result<Json<Exists>, EngineError> {
    let path = required(query.path)?;
    let exists = sb
        .on(|s| {
            let path = path.clone();
            async move { s.file_exists(&path).await }
        })
        .await?;
    Ok(Json(Exists { exists }))
}

pub async fn mkdir(
    sb: Sandboxed,
    Body(conn, body): Body<MkdirBody>,
) -> Result<Json<EntryInfo>, EngineError> {
    Ok(Json(
        sb.with(conn)
            .on(|s| {
                let body = body.clone();
                async move { s.mkdir(body).await }
            })
            .await?,
    ))
}

pub async fn rename(
    sb: Sandboxed,
    Body(conn, body): Body<MoveBody>,
) -> Result<Json<EntryInfo>, EngineError> {
    Ok(Json(
        sb.with(conn)
            .on(|s| {
                let body = body.clone();
                async move { s.rename(body).await }
            })
            .await?,
    ))
}

pub async fn remove(
    sb: Sandboxed,
    Query(query): Query<PathQuery>,
) -> Result<Json<Removed>, EngineError> {
    let path = required(query.path)?;
    let recursive = query.recursive.unwrap_or(false);
    let removed = sb
        .on(|s| {
            let path = path.clone();
            async move { s.remove(&path, recursive).await }
        })
        .await?;
    Ok(Json(Removed {
        path: removed,
        deleted: true,
    }))
}

pub async fn watch(sb: Sandboxed, Query(query): Query<PathQuery>) -> Result<Response, EngineError> {
    let path = required(query.path)?;
    let recursive = query.recursive.unwrap_or(false);
    let events = sb
        .on(|s| {
            let path = path.clone();
            async move { s.watch(&path, recursive).await }
        })
        .await?;
    Ok(sb.sse(events, false))
}

pub const OPS: &[Op] = &[
    Op {
        query: Some(schema::<PathQuery>),
        ..Op::new(RouteId::FilesRead, |m| on(m, read))
    },
    Op {
        request: Request::Bytes,
        query: Some(schema::<WriteQuery>),
        answer: Some(schema::<EntryInfo>),
        ..Op::new(RouteId::FilesWrite, |m| on(m, write))
    },
    Op {
        query: Some(schema::<PathQuery>),
        answer: Some(schema::<EntryList>),
        ..Op::new(RouteId::FilesList, |m| on(m, list))
    },
    Op {
        query: Some(schema::<PathQuery>),
        answer: Some(schema::<EntryInfo>),
        ..Op::new(RouteId::FilesInfo, |m| on(m, info))
    },
    Op {
        query: Some(schema::<PathQuery>),
        answer: Some(schema::<Exists>),
        ..Op::new(RouteId::FilesExists, |m| on(m, exists))
    },
    Op {
        request: Request::Json(schema::<MkdirBody>),
        answer: Some(schema::<EntryInfo>),
        ..Op::new(RouteId::FilesMkdir, |m| on(m, mkdir))
    },
    Op {
        request: Request::Json(schema::<MoveBody>),
        answer: Some(schema::<EntryInfo>),
        ..Op::new(RouteId::FilesMove, |m| on(m, rename))
    },
    Op {
        query: Some(schema::<PathQuery>),
        answer: Some(schema::<Removed>),
        ..Op::new(RouteId::FilesRemove, |m| on(m, remove))
    },
    Op {
        query: Some(schema::<PathQuery>),
        events: Some(watch_events),
        ..Op::new(RouteId::FilesWatch, |m| on(m, watch))
    },
];
