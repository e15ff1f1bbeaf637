//! `GET .../terminal?cols=&rows=&shell=`: a WebSocket terminal. Binary frames carry bytes
//! both ways; the one text frame is `{"type":"resize","cols":C,"rows":R}` (spec 4.4).
//! The socket closes with 1000 when the shell exits (the reason `{"exit_code":N}`), 1003 for
//! a text frame that is not a resize, 1007 for a size out of range.

use super::super::extract::Query;
use super::super::provider::{TerminalInput, TerminalIo, TerminalOpen};
use super::super::routes::RouteId;
use super::super::state::OpenGuard;
use super::support::Sandboxed;
use super::{Op, schema};
use crate::error::engine::{Code, EngineError};
use crate::services::pty::Size;
use crate::wire::{TerminalControl, TerminalExit, TerminalQuery};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::on;
use futures::{SinkExt, StreamExt};
use std::time::Duration;

/// Spec 4.4: the client defaults.
const DEFAULT_COLS: u32 = 80;
const DEFAULT_ROWS: u32 = 24;
const DEFAULT_SHELL: &str = "/bin/bash";
/// The largest input frame read.
const MAX_INPUT_FRAME: usize = 1024 * 1024;

pub async fn connect(
    sb: Sandboxed,
    Query(query): Query<TerminalQuery>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, EngineError> {
    let cols = query.cols.unwrap_or(DEFAULT_COLS);
    let rows = query.rows.unwrap_or(DEFAULT_ROWS);
    Size::new(cols, rows).map_err(|e| EngineError::new(Code::InvalidArgument, e.to_string()))?;
    let shell = query.shell.unwrap_or_else(|| DEFAULT_SHELL.to_owned());
    let upgrade = upgrade.map_err(|_| {
        EngineError::new(
            Code::InvalidArgument,
            "the terminal is a WebSocket: send the upgrade handshake",
        )
    })?;
    let open = TerminalOpen {
        cols,
        rows,
        shell,
        user: query.user,
        args: query.args.unwrap_or_default(),
        env: query.env.unwrap_or_default(),
        cwd: query.cwd,
    };
    let io = sb
        .on(|s| {
            let open = open.clone();
            async move { s.terminal(&open).await }
        })
        .await?;
    let open = sb.state.activity.open();
    Ok(upgrade
        .max_message_size(MAX_INPUT_FRAME)
        .max_frame_size(MAX_INPUT_FRAME)
        .on_upgrade(move |socket| serve(socket, io, open)))
}

async fn serve(socket: WebSocket, io: TerminalIo, _open: OpenGuard) {
    let TerminalIo {
        input,
        mut output,
        exit,
    } = io;
    let (mut sink, mut stream) = socket.split();
    let reader = async {
        while let Some(message) = stream.next().await {
            match message {
                Ok(Message::Binary(bytes)) => {
                    if input.send(TerminalInput::Bytes(bytes)).await.is_err() {
                        return std::future::pending().await;
                    }
                }
                Ok(Message::Text(text)) => match control(text.as_str()) {
                    Ok(resize) => {
                        let _ = input.send(resize).await;
                    }
                    Err(close) => return Some(close),
                },
                Ok(Message::Ping(_) | Message::Pong(_)) => {}
                Ok(Message::Close(_)) | Err(_) => return None,
            }
        }
        None
    };
    let writer = async {
        while let Some(bytes) = output.next().await {
            if sink.send(Message::Binary(bytes)).await.is_err() {
                return None;
            }
        }
        // The reason says how the shell ended, when the provider knows.
        let reason = match exit.await {
            Some(exit_code) => TerminalExit::reason(exit_code),
            None => "the shell has exited".to_owned(),
        };
        Some((1000, reason))
    };
    let close = tokio::select! {
        close = reader => close,
        close = writer => close,
    };
    if let Some((code, reason)) = close {
        let frame = Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        }));
        let _ = tokio::time::timeout(Duration::from_secs(1), sink.send(frame)).await;
    }
}

fn control(text: &str) -> Result<TerminalInput, (u16, String)> {
    let TerminalControl::Resize { cols, rows } = serde_json::from_str(text).map_err(|_| {
        (
            1003,
            r#"text frames are {"type":"resize","cols":C,"rows":R}; input goes in binary frames"#
                .to_owned(),
        )
    })?;
    Size::new(cols, rows).map_err(|e| (1007, e.to_string()))?;
    Ok(TerminalInput::Resize { cols, rows })
}

pub const OPS: &[Op] = &[Op {
    query: Some(schema::<TerminalQuery>),
    ..Op::new(RouteId::Terminal, |m| on(m, connect))
}];
