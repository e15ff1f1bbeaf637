//! Files of a sandbox: content (raw bytes both ways, streamed), list, info, exists, mkdir,
//! move, remove, and changes as events. Entry info is the server's file_ops shape.

use super::super::extract::{Body, Conn, Matched, PathParams, Query};
use super::super::state::Shared;
use super::super::wire::{MkdirBody, MoveBody, PathQuery, WriteQuery};
use super::support::{on, sse};
use crate::error::engine::{Code, EngineError};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use serde_json::{Value, json};

fn required(path: Option<String>) -> Result<String, EngineError> {
    path.filter(|p| !p.is_empty()).ok_or_else(|| {
        EngineError::new(Code::InvalidArgument, "query parameter `path` is required")
    })
}

pub async fn read(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams(id): PathParams<String>,
    Query(query): Query<PathQuery>,
) -> Result<Response, EngineError> {
    let path = required(query.path)?;
    let provider = state.provider(route, &conn)?;
    let sandbox = state.sessions.sandbox(&*provider, &conn, &id).await?;
    let file = sandbox.read_file(&path).await?;
    Ok((
        [
            (
                http::header::CONTENT_TYPE,
                "application/octet-stream".to_owned(),
            ),
            (http::header::CONTENT_LENGTH, file.size.to_string()),
        ],
        axum::body::Body::from_stream(file.body),
    )
        .into_response())
}

pub async fn write(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams(id): PathParams<String>,
    Query(query): Query<WriteQuery>,
    body: axum::body::Body,
) -> Result<Json<Value>, EngineError> {
    required(query.path.clone())?;
    let provider = state.provider(route, &conn)?;
    // The body can be read once only: the session is checked first, so a stale one is
    // rebuilt before the bytes flow.
    let sandbox = state.sessions.sandbox(&*provider, &conn, &id).await?;
    let stream = body.into_data_stream().map_err(std::io::Error::other);
    Ok(Json(sandbox.write_file(query, Box::pin(stream)).await?))
}

pub async fn list(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams(id): PathParams<String>,
    Query(query): Query<PathQuery>,
) -> Result<Json<Value>, EngineError> {
    let path = required(query.path)?;
    let depth = query.depth.unwrap_or(1);
    if !(1..=10).contains(&depth) {
        return Err(EngineError::new(
            Code::InvalidArgument,
            format!("`depth` must be 1 to 10, not {depth}"),
        ));
    }
    let entries = on(&state, route, &conn, &id, |s| {
        let path = path.clone();
        async move { s.list_files(&path, depth).await }
    })
    .await?;
    Ok(Json(json!({ "entries": entries })))
}

pub async fn info(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams(id): PathParams<String>,
    Query(query): Query<PathQuery>,
) -> Result<Json<Value>, EngineError> {
    let path = required(query.path)?;
    Ok(Json(
        on(&state, route, &conn, &id, |s| {
            let path = path.clone();
            async move { s.file_info(&path).await }
        })
        .await?,
    ))
}

pub async fn exists(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams(id): PathParams<String>,
    Query(query): Query<PathQuery>,
) -> Result<Json<Value>, EngineError> {
    let path = required(query.path)?;
    let exists = on(&state, route, &conn, &id, |s| {
        let path = path.clone();
        async move { s.file_exists(&path).await }
    })
    .await?;
    Ok(Json(json!({ "exists": exists })))
}

pub async fn mkdir(
    State(state): State<Shared>,
    Matched(route): Matched,
    PathParams(id): PathParams<String>,
    Body(conn, body): Body<MkdirBody>,
) -> Result<Json<Value>, EngineError> {
    Ok(Json(
        on(&state, route, &conn, &id, |s| {
            let body = body.clone();
            async move { s.mkdir(body).await }
        })
        .await?,
    ))
}

pub async fn rename(
    State(state): State<Shared>,
    Matched(route): Matched,
    PathParams(id): PathParams<String>,
    Body(conn, body): Body<MoveBody>,
) -> Result<Json<Value>, EngineError> {
    Ok(Json(
        on(&state, route, &conn, &id, |s| {
            let body = body.clone();
            async move { s.rename(body).await }
        })
        .await?,
    ))
}

pub async fn remove(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams(id): PathParams<String>,
    Query(query): Query<PathQuery>,
) -> Result<Json<Value>, EngineError> {
    let path = required(query.path)?;
    let recursive = query.recursive.unwrap_or(false);
    let removed = on(&state, route, &conn, &id, |s| {
        let path = path.clone();
        async move { s.remove(&path, recursive).await }
    })
    .await?;
    Ok(Json(json!({ "path": removed, "deleted": true })))
}

pub async fn watch(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams(id): PathParams<String>,
    Query(query): Query<PathQuery>,
) -> Result<Response, EngineError> {
    let path = required(query.path)?;
    let recursive = query.recursive.unwrap_or(false);
    let events = on(&state, route, &conn, &id, |s| {
        let path = path.clone();
        async move { s.watch(&path, recursive).await }
    })
    .await?;
    Ok(sse(events, state.activity.open(), false))
}
