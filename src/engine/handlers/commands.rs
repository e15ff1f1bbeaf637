//! Commands (run to completion, or streamed as events) and the processes of a sandbox.

use super::super::extract::{Body, PathParams};
use super::super::wire::{CommandBody, SignalBody, StdinBody};
use super::support::Sandboxed;
use crate::error::engine::{Code, EngineError};
use crate::services::output_json::put_bytes;
use axum::Json;
use axum::response::Response;
use base64::Engine as _;
use serde_json::{Map, Value, json};

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
) -> Result<Json<Value>, EngineError> {
    check(&body)?;
    let outcome = sb
        .with(conn)
        .on(|s| {
            let body = body.clone();
            async move { s.run(body).await }
        })
        .await?;
    let mut map = Map::new();
    map.insert("pid".into(), outcome.pid.into());
    put_bytes(&mut map, "stdout", &outcome.stdout);
    put_bytes(&mut map, "stderr", &outcome.stderr);
    map.insert("exit_code".into(), outcome.exit_code.into());
    map.insert("timed_out".into(), outcome.timed_out.into());
    Ok(Json(Value::Object(map)))
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

pub async fn processes(sb: Sandboxed) -> Result<Json<Value>, EngineError> {
    let list = sb.on(|s| async move { s.processes().await }).await?;
    Ok(Json(json!({ "processes": list })))
}

/// Spec 4.4: the signal numbers delivered are 15 and 9 only.
pub fn check_signal(signal: i32) -> Result<i32, EngineError> {
    match signal {
        15 | 9 => Ok(signal),
        other => Err(invalid(format!(
            "signal {other} is refused: only 15 (TERM) and 9 (KILL) are delivered"
        ))),
    }
}

pub async fn signal(
    sb: Sandboxed,
    PathParams((_, pid)): PathParams<(String, u32)>,
    Body(conn, body): Body<SignalBody>,
) -> Result<Json<Value>, EngineError> {
    let signal = check_signal(body.signal)?;
    sb.with(conn)
        .on(|s| async move { s.signal(pid, signal).await })
        .await?;
    Ok(Json(json!({ "pid": pid, "signal": signal })))
}

pub async fn stdin(
    sb: Sandboxed,
    PathParams((_, pid)): PathParams<(String, u32)>,
    Body(conn, body): Body<StdinBody>,
) -> Result<Json<Value>, EngineError> {
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
    Ok(Json(
        json!({ "pid": pid, "written": written, "closed": close }),
    ))
}

pub async fn kill(
    sb: Sandboxed,
    PathParams((_, pid)): PathParams<(String, u32)>,
) -> Result<Json<Value>, EngineError> {
    sb.on(|s| async move { s.kill_process(pid).await }).await?;
    Ok(Json(json!({ "pid": pid, "killed": true })))
}
