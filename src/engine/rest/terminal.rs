//! The remote's terminal: a client WebSocket to its terminal route (the token and the
//! connection in the upgrade's headers, like any call), bridged to the provider's
//! [`TerminalIo`]. Bytes go both ways as binary frames, a resize as the protocol's one text
//! frame. When either side ends, both are closed: the caller's input closing closes the
//! socket (the remote then ends its shell), the socket closing ends the output. A quiet
//! terminal is pinged; a remote silent for the idle limit is given up with a notice in the
//! output, since the output has no error channel. An `https` remote is reached over TLS
//! (`wss`), its certificate checked against the platform's roots as the HTTP calls' are.

use super::remote::Remote;
use crate::engine::provider::{ProviderResult, TerminalInput, TerminalIo, TerminalOpen};
use crate::wire::{TerminalControl, TerminalExit};
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Frames queued each way.
const QUEUE: usize = 64;
/// What the output says when the remote stopped answering (the shell's fate is unknown).
const GONE_NOTICE: &[u8] = b"\r\n[svc: the remote engine stopped answering; terminal closed]\r\n";

pub async fn open(
    remote: &Remote,
    sandbox_id: &str,
    open: &TerminalOpen,
) -> ProviderResult<TerminalIo> {
    let mut query = vec![
        ("cols", open.cols.to_string()),
        ("rows", open.rows.to_string()),
        ("shell", open.shell.clone()),
    ];
    query.extend(open.user.clone().map(|user| ("user", user)));
    query.extend(open.cwd.clone().map(|cwd| ("cwd", cwd)));
    // JSON text, as the route takes them (`wire::TerminalQuery`).
    if !open.args.is_empty() {
        query.push((
            "args",
            serde_json::to_string(&open.args).unwrap_or_default(),
        ));
    }
    if !open.env.is_empty() {
        query.push(("env", serde_json::to_string(&open.env).unwrap_or_default()));
    }
    let mut url = remote.url(&["sandboxes", sandbox_id, "terminal"], &query);
    let secure = url.scheme() == "https";
    let _ = url.set_scheme(if secure { "wss" } else { "ws" });
    let connector = match secure {
        true => Some(tls().map_err(|e| remote.failure.socket(e))?),
        false => None,
    };
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| remote.failure.socket(e))?;
    for (name, value) in remote.headers() {
        request.headers_mut().insert(name, value);
    }
    let limit = remote.timeouts.call;
    let connect = tokio_tungstenite::connect_async_tls_with_config(request, None, true, connector);
    let socket = match tokio::time::timeout(limit, connect).await {
        Err(_) => return Err(remote.failure.no_answer(limit)),
        Ok(Ok((socket, _))) => socket,
        // The remote refused the upgrade with an engine error (E2009, E4001, its door's 401).
        Ok(Err(tungstenite::Error::Http(response))) => {
            let body = response.body().as_deref().unwrap_or_default();
            return Err(remote.failure.answer(response.status().as_u16(), body));
        }
        Ok(Err(e)) => return Err(remote.failure.socket(e)),
    };
    Ok(bridge(socket, remote.timeouts.idle))
}

/// The TLS settings of every `wss` terminal: made once, at the first (loading the platform's
/// roots is not for the engine's start), and shared.
fn tls() -> Result<Connector, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        use rustls_platform_verifier::BuilderVerifierExt;
        // The provider named, not the process default: the build links one, and a second
        // crate enabling another must not leave this without one.
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|builder| builder.with_platform_verifier())
            .map(|builder| Arc::new(builder.with_no_client_auth()))
            .map_err(|e| format!("no TLS settings for the terminal: {e}"))
    });
    config.clone().map(Connector::Rustls)
}

fn bridge(socket: Socket, idle: Duration) -> TerminalIo {
    let (sink, stream) = socket.split();
    let (input, inputs) = mpsc::channel::<TerminalInput>(QUEUE);
    let (outputs, output) = mpsc::channel::<Bytes>(QUEUE);
    let heard = Arc::new(AtomicBool::new(true));
    let (gone, given_up) = oneshot::channel();
    let (exited, exit) = oneshot::channel();
    tokio::spawn(read(stream, outputs, heard.clone(), given_up, exited));
    tokio::spawn(async move {
        if write(sink, inputs, heard, idle).await {
            let _ = gone.send(());
        }
    });
    let output = futures::stream::unfold(output, |mut output| async move {
        output.recv().await.map(|bytes| (bytes, output))
    });
    TerminalIo {
        input,
        output: output.boxed(),
        exit: Box::pin(async move { exit.await.ok().flatten() }),
    }
}

/// The remote's frames into the output until the socket ends, the output is dropped, or
/// the writer ends (with a notice when it gave the remote up). The output ends with it;
/// `exited` gets the exit code the remote's close frame gave, if any.
async fn read(
    mut stream: SplitStream<Socket>,
    outputs: mpsc::Sender<Bytes>,
    heard: Arc<AtomicBool>,
    mut given_up: oneshot::Receiver<()>,
    exited: oneshot::Sender<Option<i32>>,
) {
    loop {
        let message = tokio::select! {
            message = stream.next() => message,
            outcome = &mut given_up => {
                if outcome.is_ok() {
                    let _ = outputs.send(Bytes::from_static(GONE_NOTICE)).await;
                }
                return;
            }
        };
        heard.store(true, Ordering::Relaxed);
        let bytes = match message {
            Some(Ok(Message::Binary(bytes))) => bytes,
            Some(Ok(Message::Text(text))) => Bytes::copy_from_slice(text.as_bytes()),
            Some(Ok(Message::Close(Some(frame)))) => {
                let _ = exited.send(TerminalExit::from_reason(&frame.reason));
                return;
            }
            Some(Ok(Message::Close(None)) | Err(_)) | None => return,
            Some(Ok(_)) => continue,
        };
        if outputs.send(bytes).await.is_err() {
            return;
        }
    }
}

/// The caller's input into the socket, a ping each third of `idle`; closes the socket when
/// the input ends. `true` when the remote was silent for `idle` or stopped taking frames.
async fn write(
    mut sink: SplitSink<Socket, Message>,
    mut inputs: mpsc::Receiver<TerminalInput>,
    heard: Arc<AtomicBool>,
    idle: Duration,
) -> bool {
    let mut ping = tokio::time::interval(idle / 3);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    let mut silent_ticks = 0;
    let gone = loop {
        let message = tokio::select! {
            input = inputs.recv() => match input {
                Some(TerminalInput::Bytes(bytes)) => Message::Binary(bytes),
                Some(TerminalInput::Resize { cols, rows }) => {
                    let control = TerminalControl::Resize { cols, rows };
                    Message::text(serde_json::to_string(&control).unwrap_or_default())
                }
                None => break false,
            },
            _ = ping.tick() => {
                silent_ticks = if heard.swap(false, Ordering::Relaxed) { 0 } else { silent_ticks + 1 };
                if silent_ticks >= 3 {
                    break true;
                }
                Message::Ping(Bytes::new())
            }
        };
        match tokio::time::timeout(idle, sink.send(message)).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => break false,
            Err(_) => break true,
        }
    };
    let close = Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "the terminal's client has gone".into(),
    }));
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.send(close)).await;
    gone
}
