//! Commands (run to completion, or streamed as events) and the processes of a sandbox.

use super::super::extract::{Body, PathParams};
use super::super::routes::RouteId;
use super::support::Sandboxed;
use super::{Op, Request, schema};
use crate::error::engine::{Code, EngineError};
use crate::wire::output::Printed;
use crate::wire::{
    ALLOWED_SIGNALS, CommandBody, CommandEvent, CommandResult, ProcessKilled, ProcessList,
    SignalBody, SignalSent, StdinBody, StdinWritten,
};
use axum::Json;
use axum::response::Response;
use axum::routing::on;
use base64::Engine as _;

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::new(Code::InvalidArgument, message)
}

fn check(body: &CommandBody) -> Result<(), EngineError> {
    if body.cmd.trim().is_empty() {
        return Err(invalid("`cmd` must not be empty"));
    }
    if body.cmd.contains('\0') || body.args.iter().flatten().any(|a| a.contains('\0')) {
        return Err(invalid("`cmd` and `args` must not contain NUL bytes"));
    }
    Ok(())
}

pub async fn run(
    sb: Sandboxed,
    Body(conn, body): Body<CommandBody>,
) -> Result<Json<CommandResult>, EngineError> {
    check(&body)?;
    let outcome = sb
        .with(conn)
        .on(|s| {
            let body = body.clone();
            async move { s.run(body).await }
        })
        .await?;
    Ok(Json(CommandResult {
        pid: outcome.pid,
        printed: Printed::new(&outcome.stdout, &outcome.stderr),
        exit_code: outcome.exit_code,
        timed_out: outcome.timed_out,
    }))
}

pub async fn stream(
    sb: Sandboxed,
    Body(conn, body): Body<CommandBody>,
) -> Result<Response, EngineError> {
    check(&body)?;
    let sb = sb.with(conn);
    let events = sb
        .on(|s| {
            let body = body.clone();
            async move { s.stream(body).await }
        })
        .await?;
    Ok(sb.sse(events, true))
}

pub async fn processes(sb: Sandboxed) -> Result<Json<ProcessList>, EngineError> {
    let processes = sb.on(|s| async move { s.processes().await }).await?;
    Ok(Json(ProcessList { processes }))
}

/// Spec 4.4: the signal numbers delivered are 15 and 9 only.
pub fn check_signal(signal: i32) -> Result<i32, EngineError> {
    if ALLOWED_SIGNALS.contains(&signal) {
        Ok(signal)
    } else {
        Err(invalid(format!(
            "signal {signal} is refused: only 15 (TERM) and 9 (KILL) are delivered"
        )))
    }
}

pub async fn signal(
    sb: Sandboxed,
    PathParams((_, pid)): PathParams<(String, u32)>,
    Body(conn, body): Body<SignalBody>,
) -> Result<Json<SignalSent>, EngineError> {
    let signal = check_signal(body.signal)?;
    sb.with(conn)
        .on(|s| async move { s.signal(pid, signal).await })
        .await?;
    Ok(Json(SignalSent { pid, signal }))
}

pub async fn stdin(
    sb: Sandboxed,
    PathParams((_, pid)): PathParams<(String, u32)>,
    Body(conn, body): Body<StdinBody>,
) -> Result<Json<StdinWritten>, EngineError> {
    let data = match (body.data, body.data_b64) {
        (Some(_), Some(_)) => return Err(invalid("give `data` or `data_b64`, not both")),
        (Some(text), None) => text.into_bytes(),
        (None, Some(b64)) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| invalid(format!("`data_b64` is not base64: {e}")))?,
        (None, None) if body.close => Vec::new(),
        (None, None) => {
            return Err(invalid(
                "`data` (or `data_b64`, or `close: true`) is required",
            ));
        }
    };
    let written = data.len();
    let close = body.close;
    sb.with(conn)
        .on(|s| {
            let data = data.clone();
            async move { s.stdin(pid, data, close).await }
        })
        .await?;
    Ok(Json(StdinWritten {
        pid,
        written,
        closed: close,
    }))
}

pub async fn kill(
    sb: Sandboxed,
    PathParams((_, pid)): PathParams<(String, u32)>,
) -> Result<Json<ProcessKilled>, EngineError> {
    sb.on(|s| async move { s.kill_process(pid).await }).await?;
    Ok(Json(ProcessKilled { pid, killed: true }))
}

pub const OPS: &[Op] = &[
    Op {
        request: Request::Json(schema::<CommandBody>),
        answer: Some(schema::<CommandResult>),
        ..Op::new(RouteId::CommandsRun, |m| on(m, run))
    },
    Op {
        request: Request::Json(schema::<CommandBody>),
        events: Some(CommandEvent::described),
        ..Op::new(RouteId::CommandsStream, |m| on(m, stream))
    },
    Op {
        answer: Some(schema::<ProcessList>),
        ..Op::new(RouteId::ProcessesList, |m| on(m, processes))
    },
    Op {
        request: Request::Json(schema::<SignalBody>),
        answer: Some(schema::<SignalSent>),
        ..Op::new(RouteId::ProcessesSignal, |m| on(m, signal))
    },
    Op {
        request: Request::Json(schema::<StdinBody>),
        answer: Some(schema::<StdinWritten>),
        ..Op::new(RouteId::ProcessesStdin, |m| on(m, stdin))
    },
    Op {
        answer: Some(schema::<ProcessKilled>),
        ..Op::new(RouteId::ProcessesKill, |m| on(m, kill))
    },
];
