//! Code runs and code contexts (a context keeps its interpreter's state between runs).

use super::super::extract::{Body, NoFields, PathParams};
use super::super::wire::{CodeRunBody, ContextList, ContextRecord, CreateContext};
use super::support::Sandboxed;
use crate::error::engine::{Code, EngineError};
use crate::services::output_json::put_bytes;
use axum::Json;
use http::StatusCode;
use serde_json::{Map, Value, json};

pub async fn run(
    sb: Sandboxed,
    Body(conn, body): Body<CodeRunBody>,
) -> Result<Json<Value>, EngineError> {
    if body.timeout == Some(0) {
        return Err(EngineError::new(
            Code::InvalidArgument,
            "`timeout` is in seconds, at least 1",
        ));
    }
    let outcome = sb
        .with(conn)
        .on(|s| {
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
    sb: Sandboxed,
    Body(conn, body): Body<CreateContext>,
) -> Result<(StatusCode, Json<ContextRecord>), EngineError> {
    let record = sb
        .with(conn)
        .on(|s| {
            let body = body.clone();
            async move { s.context_create(body).await }
        })
        .await?;
    Ok((StatusCode::CREATED, Json(record)))
}

pub async fn list_contexts(sb: Sandboxed) -> Result<Json<ContextList>, EngineError> {
    let contexts = sb.on(|s| async move { s.context_list().await }).await?;
    Ok(Json(ContextList { contexts }))
}

pub async fn restart_context(
    sb: Sandboxed,
    PathParams((_, context_id)): PathParams<(String, String)>,
    Body(conn, NoFields {}): Body<NoFields>,
) -> Result<Json<ContextRecord>, EngineError> {
    Ok(Json(
        sb.with(conn)
            .on(|s| {
                let context_id = context_id.clone();
                async move { s.context_restart(&context_id).await }
            })
            .await?,
    ))
}

pub async fn delete_context(
    sb: Sandboxed,
    PathParams((_, context_id)): PathParams<(String, String)>,
) -> Result<Json<Value>, EngineError> {
    sb.on(|s| {
        let context_id = context_id.clone();
        async move { s.context_delete(&context_id).await }
    })
    .await?;
    Ok(Json(json!({ "context_id": context_id, "deleted": true })))
}
