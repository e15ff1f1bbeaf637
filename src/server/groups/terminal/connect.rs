//! `pty_connect`: GET /pty/{id}/connect on the terminal port upgrades to a WebSocket
//! attached to the terminal. The token travels in `Authorization` or `X-Access-Token` (the
//! pipeline reads nothing else, a query string least of all). The replay buffer comes
//! first, then live output, as binary frames; binary frames from the client are the
//! shell's input; a text frame `{"type":"resize","cols":C,"rows":R}` resizes, and any other
//! text frame closes the socket with the reason. When the shell exits the client gets the
//! last output and a close frame (1000, saying how it exited); a client that does not keep
//! up is dropped (1008 when the close can still be sent).

use super::Route;
use crate::error::{ApiError, Code};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Path;
use crate::server::openapi::op::{Answer, Doc};
use crate::server::pipeline::ConnectionPermit;
use crate::server::route::on;
use crate::services::pty::{Attachment, End, Exit, Size, TerminalHandle};
use axum::Extension;
use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use std::time::Duration;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, connect),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/pty/pty_5f2c0e8b9a1d4c7e6b3a2f10/connect",
    body: ExampleBody::Headers(&[
        ("Connection", "Upgrade"),
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ]),
    files: &[],
    status: 101,
    headers: &[
        ("connection", "upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
    ],
    answer: "",
};

pub(super) const DOC: Doc = Doc::new(EndpointId::PtyConnect, "Attach to a terminal (WebSocket)")
    .describe("On the terminal port. The token travels in `Authorization` or `X-Access-Token`, never in the query. Without the upgrade handshake: 400 `invalid_request`.")
    .answers(&[Answer::websocket("Attached. Server to client: the replay buffer first, then live output, as binary frames; when the shell exits, the last output and a close frame (1000, saying how it exited); a client that does not keep up is dropped (1008). Client to server: binary frames are the shell's input (at most 1 MiB each); a text frame `{\"type\":\"resize\",\"cols\":C,\"rows\":R}` resizes; any other text frame closes the socket (1003, or 1007 for a size out of range).")])
    .errors(&[&[Code::NotFound, Code::OriginRefused]]);

/// The largest frame (and message) a client may send: input is typed or pasted.
const MAX_INPUT_FRAME: usize = 1024 * 1024;
/// The replay is sent in frames of at most this many bytes.
const REPLAY_FRAME: usize = 64 * 1024;
/// A frame the client's socket has not taken in this long drops the client (the reader's
/// own check stops once the shell has exited).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the closing frame may take to go out.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

async fn connect(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    permit: Option<Extension<ConnectionPermit>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    // A handshake with an `Origin` (a web page) never gets here: the pipeline refuses it
    // on every WebSocket route.
    let terminal = app.ptys.terminal(&identity.id, &id)?;
    let upgrade = upgrade.map_err(|_| {
        ApiError::new(
            Code::InvalidRequest,
            format!("GET /pty/{id}/connect is a WebSocket: send the upgrade handshake"),
        )
    })?;
    // Held while the socket is open, so the endpoint's concurrency limit counts sockets.
    let permit = permit.map(|Extension(p)| p);
    // Attached before the handshake is answered: a client that has its `101` is counted in
    // the record's `clients` at once, and sees every byte from its replay on. Should the
    // upgrade never happen, the dropped attachment detaches it.
    let attachment = terminal.attach();
    Ok(upgrade
        .max_message_size(MAX_INPUT_FRAME)
        .max_frame_size(MAX_INPUT_FRAME)
        .on_upgrade(move |socket| serve(socket, terminal, attachment, permit)))
}

/// How a socket ends.
enum Close {
    Exited(Option<Exit>),
    Dropped,
    /// A frame the protocol does not have: closed with this code and reason.
    Refused(u16, String),
    /// The client closed or went away.
    Left,
}

async fn serve(
    socket: WebSocket,
    terminal: TerminalHandle,
    mut attachment: Attachment,
    _permit: Option<ConnectionPermit>,
) {
    let replay = std::mem::take(&mut attachment.replay);
    let (mut sink, mut stream) = socket.split();
    let close = tokio::select! {
        close = output(&mut sink, &mut attachment, replay) => close,
        close = input(&mut stream, &terminal) => close,
    };
    // Detached before the close goes out, so the record no longer counts this client.
    drop(attachment);
    let frame = match close {
        Close::Exited(exit) => (1000, exit_reason(exit)),
        Close::Dropped => (
            1008,
            "dropped: the client did not keep up with the output".to_owned(),
        ),
        Close::Refused(code, reason) => (code, reason),
        Close::Left => return,
    };
    let frame = Message::Close(Some(CloseFrame {
        code: frame.0,
        reason: frame.1.into(),
    }));
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, sink.send(frame)).await;
}

type Sink = futures::stream::SplitSink<WebSocket, Message>;
type Stream = futures::stream::SplitStream<WebSocket>;

/// The replay, then live output, until the output ends for this client.
async fn output(sink: &mut Sink, attachment: &mut Attachment, replay: Vec<u8>) -> Close {
    for piece in replay.chunks(REPLAY_FRAME) {
        if let Err(close) = deliver(sink, attachment, Bytes::copy_from_slice(piece)).await {
            return close;
        }
    }
    while let Some(chunk) = attachment.next().await {
        if let Err(close) = deliver(sink, attachment, chunk).await {
            return close;
        }
    }
    match attachment.end().await {
        End::Exited(exit) => Close::Exited(exit),
        End::Dropped => Close::Dropped,
    }
}

/// One binary frame, given up when the client is dropped meanwhile or its socket stays
/// full.
async fn deliver(sink: &mut Sink, attachment: &Attachment, bytes: Bytes) -> Result<(), Close> {
    tokio::select! {
        sent = sink.send(Message::Binary(bytes)) => sent.map_err(|_| Close::Left),
        () = attachment.dropped() => Err(Close::Dropped),
        () = tokio::time::sleep(SEND_TIMEOUT) => Err(Close::Dropped),
    }
}

/// The client's frames, until it leaves or sends one the protocol does not have.
async fn input(stream: &mut Stream, terminal: &TerminalHandle) -> Close {
    while let Some(message) = stream.next().await {
        match message {
            Ok(Message::Binary(bytes)) => {
                if terminal.write(&bytes).await.is_err() {
                    // The shell has exited: the output side delivers the rest and closes.
                    return std::future::pending().await;
                }
            }
            Ok(Message::Text(text)) => match resize_of(text.as_str()) {
                Ok(size) => {
                    if terminal.resize(size).is_err() {
                        return std::future::pending().await;
                    }
                }
                Err((code, reason)) => return Close::Refused(code, reason),
            },
            Ok(Message::Ping(_) | Message::Pong(_)) => {}
            Ok(Message::Close(_)) | Err(_) => return Close::Left,
        }
    }
    Close::Left
}

/// The one text frame there is.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResizeFrame {
    #[serde(rename = "type")]
    kind: String,
    cols: u32,
    rows: u32,
}

/// A resize frame's size, or the close code and reason for any other text: 1003 for what
/// is not a resize frame, 1007 for a size out of range.
fn resize_of(text: &str) -> Result<Size, (u16, String)> {
    let unsupported = || {
        (
            1003,
            r#"text frames are {"type":"resize","cols":C,"rows":R}; input goes in binary frames"#
                .to_owned(),
        )
    };
    let frame: ResizeFrame = serde_json::from_str(text).map_err(|_| unsupported())?;
    if frame.kind != "resize" {
        return Err(unsupported());
    }
    Size::new(frame.cols, frame.rows).map_err(|e| (1007, e.to_string()))
}

fn exit_reason(exit: Option<Exit>) -> String {
    match exit {
        Some(Exit {
            code: Some(code), ..
        }) => format!("the shell exited with code {code}"),
        Some(Exit {
            signal: Some(signal),
            ..
        }) => format!("the shell was ended by signal {signal}"),
        _ => "the shell has ended".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_resize_frame_in_range_is_accepted() {
        assert_eq!(
            resize_of(r#"{"type":"resize","cols":100,"rows":30}"#),
            Ok(Size {
                cols: 100,
                rows: 30
            })
        );
        for text in [
            "hello",
            r#"{"type":"input","cols":1,"rows":1}"#,
            r#"{"type":"resize","cols":1,"rows":1,"x":1}"#,
            r#"{"type":"resize","cols":-1,"rows":1}"#,
        ] {
            assert_eq!(resize_of(text).map_err(|e| e.0), Err(1003), "{text}");
        }
        let (code, reason) = resize_of(r#"{"type":"resize","cols":0,"rows":30}"#).unwrap_err();
        assert_eq!(code, 1007);
        assert!(reason.contains("cols") && reason.len() <= 123, "{reason}");
        assert!(resize_of("{}").unwrap_err().1.len() <= 123);
    }

    #[test]
    fn the_close_reason_says_how_the_shell_ended() {
        let exit = |code, signal| Some(Exit { code, signal });
        assert_eq!(
            exit_reason(exit(Some(0), None)),
            "the shell exited with code 0"
        );
        assert_eq!(
            exit_reason(exit(None, Some(9))),
            "the shell was ended by signal 9"
        );
        assert_eq!(exit_reason(None), "the shell has ended");
    }
}
