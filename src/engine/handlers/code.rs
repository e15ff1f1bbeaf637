//! Code runs and code contexts (a context keeps its interpreter's state between runs).

use super::super::extract::{Body, NoFields, PathParams};
use super::super::routes::RouteId;
use super::support::Sandboxed;
use super::{Op, Request, schema};
use crate::error::engine::{Code, EngineError};
use crate::wire::output::Printed;
use crate::wire::{
    CodeResult, CodeRunBody, ContextDeleted, ContextList, ContextRecord, CreateContext,
};
use axum::Json;
use axum::routing::on;
use http::StatusCode;

pub async fn run(
    sb: Sandboxed,
    Body(conn, body): Body<CodeRunBody>,
) -> Result<Json<CodeResult>, EngineError> {
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
    Ok(Json(CodeResult {
        printed: Printed::new(&outcome.stdout, &outcome.stderr),
        exit_code: outcome.exit_code,
        timed_out: outcome.timed_out,
        duration_ms: outcome.duration_ms,
    }))
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
) -> Result<Json<ContextDeleted>, EngineError> {
    sb.on(|s| {
        let context_id = context_id.clone();
        async move { s.context_delete(&context_id).await }
    })
    .await?;
    Ok(Json(ContextDeleted {
        context_id,
        deleted: true,
    }))
}

pub const OPS: &[Op] = &[
    Op {
        request: Request::Json(schema::<CodeRunBody>),
        answer: Some(schema::<CodeResult>),
        ..Op::new(RouteId::CodeRun, |m| on(m, run))
    },
    Op {
        request: Request::Json(schema::<CreateContext>),
        answer: Some(schema::<ContextRecord>),
        creates: true,
        ..Op::new(RouteId::CodeContextsCreate, |m| on(m, create_context))
    },
    Op {
        answer: Some(schema::<ContextList>),
        ..Op::new(RouteId::CodeContextsList, |m| on(m, list_contexts))
    },
    Op {
        request: Request::Json(schema::<NoFields>),
        answer: Some(schema::<ContextRecord>),
        ..Op::new(RouteId::CodeContextsRestart, |m| on(m, restart_context))
    },
    Op {
        answer: Some(schema::<ContextDeleted>),
        ..Op::new(RouteId::CodeContextsDelete, |m| on(m, delete_context))
    },
];
