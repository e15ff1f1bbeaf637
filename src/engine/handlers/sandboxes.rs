//! `/v1/sandboxes`: create (every field validated here, the same for every provider),
//! list, connect, info, kill, running, timeout, pause, resume, port URLs.

use super::super::extract::{Body, Conn, Matched, NoFields, PathParams, Query};
use super::super::provider::{check_env, check_timeout};
use super::super::routes::RouteId;
use super::super::state::Shared;
use super::support::Sandboxed;
use super::{Op, Request, schema};
use crate::error::engine::{Code, EngineError};
use crate::wire::{
    CPU_MAX, CreateSandbox, ListSandboxes, MAX_PROCESSES_MAX, PortUrl, Running,
    SANDBOX_TIMEOUT_DEFAULT_S, SandboxList, SandboxRecord, SandboxStatus, SetTimeout,
};
use axum::Json;
use axum::extract::State;
use axum::routing::on;
use http::StatusCode;

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::new(Code::InvalidArgument, message)
}

/// The engine's checks of a create, whichever door it came through (`/v1` or the E2B
/// front), with its defaults filled in.
pub(in crate::engine) fn check_create(body: &mut CreateSandbox) -> Result<(), EngineError> {
    body.timeout = Some(check_timeout(
        body.timeout.unwrap_or(SANDBOX_TIMEOUT_DEFAULT_S),
    )?);
    if body
        .template
        .as_deref()
        .is_some_and(|t| t.trim().is_empty())
    {
        return Err(invalid("`template` must not be empty (default `base`)"));
    }
    // An empty `gpu` asks for nothing a provider could give: refused rather than read as a
    // GPU request (or as none) by each provider in its own way.
    if body.gpu.as_deref().is_some_and(|g| g.trim().is_empty()) {
        return Err(invalid(
            "`gpu` must not be empty: name a GPU kind, or leave `gpu` out for none",
        ));
    }
    // Past these bounds the kernel refuses the cgroup's limit: refused here, by name,
    // rather than as the engine's own failure once the sandbox is half made.
    if let Some(cpu) = body.cpu.filter(|c| !(1..=CPU_MAX).contains(c)) {
        return Err(invalid(format!(
            "`cpu` is a number of cores, 1-{CPU_MAX} (asked: {cpu})"
        )));
    }
    if body.memory == Some(0) {
        return Err(invalid("`memory` is in MB, at least 1"));
    }
    if body.disk == Some(0) {
        return Err(invalid("`disk` is in MB, at least 1"));
    }
    if let Some(most) = body
        .max_processes
        .filter(|n| !(1..=MAX_PROCESSES_MAX).contains(n))
    {
        return Err(invalid(format!(
            "`max_processes` is 1-{MAX_PROCESSES_MAX}, Linux's own ceiling (asked: {most})"
        )));
    }
    if let Some(envs) = &body.envs {
        check_env("envs", envs)?;
    }
    body.secure.get_or_insert(true);
    Ok(())
}

pub async fn create(
    State(state): State<Shared>,
    Matched(route): Matched,
    Body(conn, mut body): Body<CreateSandbox>,
) -> Result<(StatusCode, Json<SandboxRecord>), EngineError> {
    check_create(&mut body)?;
    let provider = state.provider(route, &conn)?;
    let record = provider.create(&conn, body).await?;
    Ok((StatusCode::CREATED, Json(record)))
}

pub async fn list(
    State(state): State<Shared>,
    Matched(route): Matched,
    Conn(conn): Conn,
    Query(query): Query<ListSandboxes>,
) -> Result<Json<SandboxList>, EngineError> {
    query.page_size().map_err(invalid)?;
    let provider = state.provider(route, &conn)?;
    let sandboxes = provider.list(&conn, &query).await?;
    Ok(Json(SandboxList { sandboxes }))
}

pub async fn connect(
    sb: Sandboxed,
    Body(conn, NoFields {}): Body<NoFields>,
) -> Result<Json<SandboxRecord>, EngineError> {
    let sb = sb.with(conn);
    // A connect always builds a fresh session: the caller asked to attach anew.
    sb.forget();
    Ok(Json(sb.on(|s| async move { s.info().await }).await?))
}

pub async fn info(sb: Sandboxed) -> Result<Json<SandboxRecord>, EngineError> {
    Ok(Json(sb.on(|s| async move { s.info().await }).await?))
}

pub async fn kill(sb: Sandboxed) -> Result<Json<SandboxRecord>, EngineError> {
    let record = sb.on(|s| async move { s.kill().await }).await?;
    sb.forget();
    // Every provider's kill passes here; the log says why a sandbox ended, as the
    // providers' timers log an expiry.
    tracing::info!(sandbox = %record.sandbox_id, provider = %record.provider, "the sandbox was killed");
    Ok(Json(record))
}

pub async fn running(sb: Sandboxed) -> Result<Json<Running>, EngineError> {
    let record = sb.on(|s| async move { s.info().await }).await?;
    Ok(Json(Running {
        running: record.status == SandboxStatus::Running,
    }))
}

pub async fn timeout(
    sb: Sandboxed,
    Body(conn, body): Body<SetTimeout>,
) -> Result<Json<SandboxRecord>, EngineError> {
    let seconds = check_timeout(body.timeout)?;
    let sb = sb.with(conn);
    Ok(Json(
        sb.on(|s| async move { s.set_timeout(seconds).await })
            .await?,
    ))
}

pub async fn pause(
    sb: Sandboxed,
    Body(conn, NoFields {}): Body<NoFields>,
) -> Result<Json<SandboxRecord>, EngineError> {
    let sb = sb.with(conn);
    Ok(Json(sb.on(|s| async move { s.pause().await }).await?))
}

pub async fn resume(
    sb: Sandboxed,
    Body(conn, NoFields {}): Body<NoFields>,
) -> Result<Json<SandboxRecord>, EngineError> {
    let sb = sb.with(conn);
    Ok(Json(sb.on(|s| async move { s.resume().await }).await?))
}

pub async fn port_url(
    sb: Sandboxed,
    PathParams((_, port)): PathParams<(String, String)>,
) -> Result<Json<PortUrl>, EngineError> {
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| invalid(format!("`port` must be 1 to 65535, not `{port}`")))?;
    Ok(Json(
        sb.on(|s| async move { s.port_url(port).await }).await?,
    ))
}

pub const OPS: &[Op] = &[
    Op {
        request: Request::Json(schema::<CreateSandbox>),
        answer: Some(schema::<SandboxRecord>),
        creates: true,
        codes: &[Code::TemplateNotFound],
        ..Op::new(RouteId::SandboxesCreate, |m| on(m, create))
    },
    Op {
        query: Some(schema::<ListSandboxes>),
        answer: Some(schema::<SandboxList>),
        ..Op::new(RouteId::SandboxesList, |m| on(m, list))
    },
    Op {
        request: Request::Json(schema::<NoFields>),
        answer: Some(schema::<SandboxRecord>),
        ..Op::new(RouteId::SandboxesConnect, |m| on(m, connect))
    },
    Op {
        answer: Some(schema::<SandboxRecord>),
        ..Op::new(RouteId::SandboxesInfo, |m| on(m, info))
    },
    Op {
        answer: Some(schema::<SandboxRecord>),
        ..Op::new(RouteId::SandboxesKill, |m| on(m, kill))
    },
    Op {
        answer: Some(schema::<Running>),
        ..Op::new(RouteId::SandboxesRunning, |m| on(m, running))
    },
    Op {
        request: Request::Json(schema::<SetTimeout>),
        answer: Some(schema::<SandboxRecord>),
        ..Op::new(RouteId::SandboxesTimeout, |m| on(m, timeout))
    },
    Op {
        request: Request::Json(schema::<NoFields>),
        answer: Some(schema::<SandboxRecord>),
        ..Op::new(RouteId::SandboxesPause, |m| on(m, pause))
    },
    Op {
        request: Request::Json(schema::<NoFields>),
        answer: Some(schema::<SandboxRecord>),
        ..Op::new(RouteId::SandboxesResume, |m| on(m, resume))
    },
    Op {
        answer: Some(schema::<PortUrl>),
        ..Op::new(RouteId::SandboxesPortUrl, |m| on(m, port_url))
    },
];
