//! One HTTP/1.1 exchange the client makes itself, on a fresh connection of its own, for a
//! file's body: reqwest takes and gives a body as bytes in the process's memory, which
//! costs a copy each way that `sendfile(2)` and `splice(2)` do not (`raw_files.rs` moves
//! the body). What is said around the body is small: the request's head carries the same
//! token and connection headers as every other request of the client, and the answer's
//! head and a short body (an engine error, a written file's info) are read with
//! `crate::zero_copy::http1`, shared with the `rest` provider.

use super::error::{ApiError, ClientError, ClientResult};
use crate::wire::{CONNECTION_HEADER, Descriptor};
use crate::zero_copy::http1::{self, Head};
use std::io;
use std::time::Duration;
use tokio::net::TcpStream;

/// As reqwest's connect timeout in `Client::new`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One exchange's request head, before it is sent.
pub(super) struct Request {
    /// Where to connect: `HOST:PORT` of the engine's URL.
    authority: String,
    head: String,
}

impl Request {
    /// `method` to `url` with the engine's token and `connection` (the client's encoded
    /// connection), and a `body_len` bytes long octet stream when there is a body.
    pub(super) fn new(
        url: &url::Url,
        method: &str,
        engine: &Descriptor,
        connection: &str,
        body_len: Option<u64>,
    ) -> ClientResult<Request> {
        let authority = url[url::Position::BeforeHost..url::Position::AfterPort].to_owned();
        let bearer = format!("Bearer {}", engine.token);
        let mut headers = vec![
            ("authorization", bearer.as_str()),
            (CONNECTION_HEADER, connection),
        ];
        if body_len.is_some() {
            headers.push(("content-type", "application/octet-stream"));
        }
        let head = http1::request_head(method, url, &headers, body_len)
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        Ok(Request { authority, head })
    }

    /// Connects to the engine and sends the head. The flag says whether another engine
    /// might answer (nothing listens there: the engine went away), as `Client::send`'s.
    pub(super) async fn open(&self) -> Result<TcpStream, (ClientError, bool)> {
        let connected = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&self.authority))
            .await
            .map_err(|_| {
                let e = format!("no connection to {} within 5 s", self.authority);
                (ClientError::Transport(e), true)
            })?;
        let mut stream = connected.map_err(|e| {
            let e = ClientError::Transport(format!("cannot connect to {}: {e}", self.authority));
            (e, true)
        })?;
        // As every connection of the client (`tcp_nodelay` in `Client::new`).
        let _ = stream.set_nodelay(true);
        http1::send_head(&mut stream, &self.head)
            .await
            .map_err(|e| (broken(&e), false))?;
        Ok(stream)
    }
}

/// The connection failed under an exchange, or what came was not HTTP/1.
pub(super) fn broken(e: &io::Error) -> ClientError {
    ClientError::Transport(match e.kind() {
        io::ErrorKind::InvalidData => {
            format!("the engine's answer is not what the protocol says: {e}")
        }
        io::ErrorKind::UnexpectedEof => "the engine closed the connection before its answer".into(),
        _ => format!("the connection to the engine broke: {e}"),
    })
}

/// The answer's head and the body bytes read with it.
pub(super) async fn read_head(stream: &mut TcpStream) -> ClientResult<(Head, Vec<u8>)> {
    http1::read_head(stream).await.map_err(|e| broken(&e))
}

/// A short answer's whole body.
pub(super) async fn read_short(
    stream: &mut TcpStream,
    head: &Head,
    early: Vec<u8>,
) -> ClientResult<Vec<u8>> {
    http1::read_short(stream, head, early)
        .await
        .map_err(|e| broken(&e))
}

/// The typed error of an answer that is not a success, and whether another engine might
/// not give it (a 401 other than the provider's: the token changed with a new engine), as
/// `Client::send` decides.
pub(super) async fn refusal(
    stream: &mut TcpStream,
    head: &Head,
    early: Vec<u8>,
) -> (ClientError, bool) {
    match read_short(stream, head, early).await {
        Ok(body) => {
            let error: ClientError = ApiError::from_body(head.status, &body).into();
            let recoverable = head.status == 401 && !super::transport::is_provider_auth(&error);
            (error, recoverable)
        }
        Err(e) => (e, false),
    }
}
