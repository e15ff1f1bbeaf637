//! Code runs and code contexts (a context keeps its interpreter's state between runs).

use super::super::extract::{Body, Conn, Matched, NoFields, PathParams};
use super::super::state::Shared;
use super::super::wire::{CodeRunBody, ContextList, ContextRecord, CreateContext};
use super::support::on;
use crate::error::engine::{Code, EngineError};
use crate::services::output_json::put_bytes;
use axum::Json;
use axum::extract::State;
use http::StatusCode;
use serde_json::{Map, Value, json};

pub async fn run(
    State(state): State<Shared>,
    Matched(route): Matched,
    PathParams(id): PathParams<String>,
    Body(conn, body): Body<CodeRunBody>,
) -> Result<Json<Value>, EngineError> {
    if body.timeout == Some(0) {
        return Err(EngineError::new(
            Code::InvalidArgument,
            "`timeout` is in seconds, at least 1",
        ));
    }
    let outcome = on(&state, route, &conn, &id, |s| {
        let body = body.clone();
        async move { s.code_run(body).await }
    })
    .await?;
    let mut map = Map::new();
    put_bytes(&mut map, "stdout", &outcome.stdout);
    put_bytes(&mut map, "stderr", &outcome.stderr);
    map.insert("exit_code".into(), outcome.exit_code.into());
    map.insert("timed_out".into(), outcome.timed_out.into());
    map.insert("duration_ms".into(), outcome.duration_ms.into());
    Ok(Json(Value::Object(map)))
}

pub async fn create_context(
    State(state): State<Shared>,
    Matched(route): Matched,
    PathParams(id): PathParams<String>,
    Body(conn, body): Body<CreateContext>,
) -> Result<(StatusCode, Json<ContextRecord>), EngineError> {
    let record = on(&state, route, &conn, &id, |s| {
        let body = body.clone();
        async move { s.context_create(body).await }
    })
    .await?;
    Ok((StatusCode::CREATED, Json(record)))
}

pub async fn list_contexts(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams(id): PathParams<String>,
) -> Result<Json<ContextList>, EngineError> {
    let contexts = on(&state, route, &conn, &id, |s| async move {
        s.context_list().await
    })
    .await?;
    Ok(Json(ContextList { contexts }))
}

pub async fn restart_context(
    State(state): State<Shared>,
    Matched(route): Matched,
    PathParams((id, context_id)): PathParams<(String, String)>,
    Body(conn, NoFields {}): Body<NoFields>,
) -> Result<Json<ContextRecord>, EngineError> {
    Ok(Json(
        on(&state, route, &conn, &id, |s| {
            let context_id = context_id.clone();
            async move { s.context_restart(&context_id).await }
        })
        .await?,
    ))
}

pub async fn delete_context(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    PathParams((id, context_id)): PathParams<(String, String)>,
) -> Result<Json<Value>, EngineError> {
    on(&state, route, &conn, &id, |s| {
        let context_id = context_id.clone();
        async move { s.context_delete(&context_id).await }
    })
    .await?;
    Ok(Json(json!({ "context_id": context_id, "deleted": true })))
}
