//! The terminal WebSocket (`GET .../terminal?cols=&rows=&shell=`): binary frames carry bytes
//! both ways, a text frame `{"type":"resize","cols":C,"rows":R}` resizes. The upgrade
//! carries the token and the connection like any request (and no `Origin`, which the engine
//! refuses), and recovers once like them.

use super::Client;
use super::error::{ApiError, ClientError, ClientResult};
use super::transport::is_provider_auth;
use crate::wire::{CONNECTION_HEADER, Descriptor, TerminalControl, TerminalExit};
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Spec 4.4: the client's defaults.
pub const DEFAULT_COLS: u32 = 80;
pub const DEFAULT_ROWS: u32 = 24;
pub const DEFAULT_SHELL: &str = "/bin/bash";

/// An open terminal. `recv` answers `None` once the shell has exited; `exit_code` then
/// says how.
pub struct Terminal {
    socket: Socket,
    exit: Exit,
}

pub struct TerminalWriter {
    sink: SplitSink<Socket, Message>,
}

pub struct TerminalReader {
    stream: SplitStream<Socket>,
    exit: Exit,
}

/// The shell's exit code, from the close frame's reason `{"exit_code":N}` (spec 4.4); unset
/// until the socket closed, and when the engine did not say (a close without that reason).
type Exit = Option<i32>;

impl Client {
    /// Opens a terminal of `cols` x `rows` running `shell` (defaults 80, 24, `/bin/bash`)
    /// as `user` (the sandbox's default when `None`).
    pub async fn terminal(
        &self,
        id: &str,
        cols: Option<u32>,
        rows: Option<u32>,
        shell: Option<&str>,
        user: Option<&str>,
    ) -> ClientResult<Terminal> {
        let mut query = vec![
            ("cols", cols.unwrap_or(DEFAULT_COLS).to_string()),
            ("rows", rows.unwrap_or(DEFAULT_ROWS).to_string()),
            ("shell", shell.unwrap_or(DEFAULT_SHELL).to_owned()),
        ];
        query.extend(user.map(|user| ("user", user.to_owned())));
        let query = &query;
        let socket = self
            .with_recovery(|engine| async move { self.open(&engine, id, query).await })
            .await?;
        Ok(Terminal { socket, exit: None })
    }

    /// One upgrade; the error says whether a new engine might take it (a 401, a refused
    /// connection).
    async fn open(
        &self,
        engine: &Descriptor,
        id: &str,
        query: &[(&str, String)],
    ) -> Result<Socket, (ClientError, bool)> {
        let url = Client::url(engine, "ws", &["sandboxes", id, "terminal"], query)
            .map_err(|e| (e, false))?;
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| (ClientError::Transport(e.to_string()), false))?;
        let headers = request.headers_mut();
        for (name, value) in [
            ("authorization", format!("Bearer {}", engine.token)),
            (CONNECTION_HEADER, self.connection_header().to_owned()),
        ] {
            let value = http::HeaderValue::from_str(&value)
                .map_err(|e| (ClientError::Transport(e.to_string()), false))?;
            headers.insert(name, value);
        }
        match tokio_tungstenite::connect_async(request).await {
            Ok((socket, _)) => Ok(socket),
            Err(tungstenite::Error::Http(response)) => {
                let status = response.status().as_u16();
                let body = response.body().as_deref().unwrap_or_default();
                let error = ApiError::from_body(status, body).into();
                let recoverable = status == 401 && !is_provider_auth(&error);
                Err((error, recoverable))
            }
            Err(tungstenite::Error::Io(e)) => {
                let refused = e.kind() == std::io::ErrorKind::ConnectionRefused
                    || !super::launch::pid_alive(engine.pid);
                Err((ClientError::Transport(e.to_string()), refused))
            }
            Err(e) => Err((ClientError::Transport(e.to_string()), false)),
        }
    }
}

fn closed(e: tungstenite::Error) -> ClientError {
    ClientError::Transport(format!("the terminal connection failed: {e}"))
}

fn resize_frame(cols: u32, rows: u32) -> Message {
    let text = serde_json::to_string(&TerminalControl::Resize { cols, rows }).unwrap_or_default();
    Message::text(text)
}

/// The next bytes of the terminal, `None` when it has ended (and `exit` then holds the
/// shell's exit code, when the close frame gave one).
async fn next_output(
    stream: &mut (impl StreamExt<Item = Result<Message, tungstenite::Error>> + Unpin),
    exit: &mut Exit,
) -> Option<ClientResult<Bytes>> {
    loop {
        match stream.next().await? {
            Ok(Message::Binary(bytes)) => return Some(Ok(bytes)),
            // A text frame is the engine's error object, or text the shell wrote.
            Ok(Message::Text(text)) => {
                let text = text.as_str();
                if text.starts_with("{\"error\"") {
                    return Some(Err(ApiError::from_event(text).into()));
                }
                return Some(Ok(Bytes::copy_from_slice(text.as_bytes())));
            }
            Ok(Message::Close(frame)) => {
                *exit = frame.and_then(|f| TerminalExit::from_reason(&f.reason));
                return None;
            }
            // Pings are answered by the socket itself.
            Ok(_) => continue,
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                return None;
            }
            Err(e) => return Some(Err(closed(e))),
        }
    }
}

impl Terminal {
    pub async fn send(&mut self, bytes: impl Into<Bytes>) -> ClientResult<()> {
        self.socket
            .send(Message::Binary(bytes.into()))
            .await
            .map_err(closed)
    }

    pub async fn resize(&mut self, cols: u32, rows: u32) -> ClientResult<()> {
        self.socket
            .send(resize_frame(cols, rows))
            .await
            .map_err(closed)
    }

    pub async fn recv(&mut self) -> Option<ClientResult<Bytes>> {
        next_output(&mut self.socket, &mut self.exit).await
    }

    /// How the shell exited (a signal as 128 + its number), once `recv` answered `None`;
    /// `None` before, or when the engine closed without saying.
    pub fn exit_code(&self) -> Option<i32> {
        self.exit
    }

    pub async fn close(mut self) -> ClientResult<()> {
        self.socket.close(None).await.map_err(closed)
    }

    /// A writer and a reader that can be used from two tasks.
    pub fn split(self) -> (TerminalWriter, TerminalReader) {
        let (sink, stream) = self.socket.split();
        (
            TerminalWriter { sink },
            TerminalReader {
                stream,
                exit: self.exit,
            },
        )
    }
}

impl TerminalWriter {
    pub async fn send(&mut self, bytes: impl Into<Bytes>) -> ClientResult<()> {
        self.sink
            .send(Message::Binary(bytes.into()))
            .await
            .map_err(closed)
    }

    pub async fn resize(&mut self, cols: u32, rows: u32) -> ClientResult<()> {
        self.sink
            .send(resize_frame(cols, rows))
            .await
            .map_err(closed)
    }

    pub async fn close(&mut self) -> ClientResult<()> {
        self.sink.close().await.map_err(closed)
    }
}

impl TerminalReader {
    pub async fn recv(&mut self) -> Option<ClientResult<Bytes>> {
        next_output(&mut self.stream, &mut self.exit).await
    }

    /// As [`Terminal::exit_code`].
    pub fn exit_code(&self) -> Option<i32> {
        self.exit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resize_frame_is_the_protocols() {
        let Message::Text(text) = resize_frame(120, 40) else {
            panic!("a text frame")
        };
        assert_eq!(text.as_str(), r#"{"type":"resize","cols":120,"rows":40}"#);
    }

    fn closed_with(reason: &str) -> Message {
        Message::Close(Some(tungstenite::protocol::CloseFrame {
            code: tungstenite::protocol::frame::coding::CloseCode::Normal,
            reason: reason.into(),
        }))
    }

    /// Output up to the close, then the exit code the close frame's reason gave.
    async fn ended(frames: Vec<Message>) -> (Vec<u8>, Exit) {
        let mut stream = futures::stream::iter(frames.into_iter().map(Ok));
        let mut exit = None;
        let mut output = Vec::new();
        while let Some(chunk) = next_output(&mut stream, &mut exit).await {
            output.extend_from_slice(&chunk.unwrap());
        }
        (output, exit)
    }

    #[tokio::test]
    async fn the_close_frame_gives_the_shells_exit_code() {
        let out = Message::Binary(Bytes::from_static(b"out"));
        assert_eq!(
            ended(vec![out.clone(), closed_with(r#"{"exit_code":3}"#)]).await,
            (b"out".to_vec(), Some(3))
        );
        assert_eq!(
            ended(vec![closed_with(r#"{"exit_code":137}"#)]).await.1,
            Some(137)
        );
        // A close that does not say (no frame, another reason) leaves it unknown.
        assert_eq!(ended(vec![out.clone(), Message::Close(None)]).await.1, None);
        assert_eq!(
            ended(vec![closed_with("the shell has exited")]).await.1,
            None
        );
    }
}
