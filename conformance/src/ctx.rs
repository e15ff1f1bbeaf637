//! What a case gets: a base URL, an HTTP client, helpers that read whole
//! responses, and typed checks that explain themselves on failure.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail, ensure};
use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use reqwest::{Method, RequestBuilder};
use serde_json::Value;

/// Request timeout; the runner's per-case timeout is the outer bound.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Bodies longer than this are cut in failure messages.
const BODY_IN_MESSAGE: usize = 4000;

/// An engine sandbox a case made: (its connection header, its id).
pub type Tracked = (Option<String>, String);

/// Per-case handle on the server under test. Cheap to clone.
#[derive(Clone)]
pub struct Ctx {
    shared: Arc<Shared>,
    case_id: &'static str,
}

#[derive(Clone)]
struct Shared {
    base_url: String,
    /// The terminal listener (`pty_connect`), when the runner knows it.
    terminal_url: Option<String>,
    client: reqwest::Client,
    dir: Option<PathBuf>,
    token: Option<String>,
    profile: &'static str,
    /// Whether this is an engine (its cases speak `svc-engine/1`).
    engine: bool,
    /// Engine profiles: the provider the cases connect as.
    provider: Option<&'static str>,
    /// Engine profiles: the whole connection the cases send (the provider, and for a
    /// `rest` provider the remote engine's `api_url` and `api_key`).
    connection: Option<serde_json::Value>,
    /// Engine sandboxes the cases created, as (connection header, sandbox id): the
    /// runner kills those still alive before it stops the engine, since a
    /// sandbox outlives the engine that made it.
    sandboxes: Arc<Mutex<Vec<Tracked>>>,
}

impl Ctx {
    /// `base_url` without trailing slash is kept as is; one trailing slash is dropped.
    pub fn new(
        base_url: &str,
        dir: Option<PathBuf>,
        token: Option<String>,
        profile: &'static str,
    ) -> anyhow::Result<Ctx> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(REQUEST_TIMEOUT)
            // A proxy from the environment must never see loopback traffic.
            .no_proxy()
            .build()
            .context("building the HTTP client")?;
        Ok(Ctx {
            shared: Arc::new(Shared {
                base_url: base_url.trim_end_matches('/').to_string(),
                terminal_url: None,
                client,
                dir,
                token,
                profile,
                engine: false,
                provider: None,
                connection: None,
                sandboxes: Arc::default(),
            }),
            case_id: "",
        })
    }

    /// The same base URL as an engine, its cases connecting as `provider` with
    /// `connection` (`{"provider": provider}` when `None`).
    pub fn for_engine(
        self,
        provider: Option<&'static str>,
        connection: Option<serde_json::Value>,
    ) -> Ctx {
        let mut shared = (*self.shared).clone();
        shared.engine = true;
        shared.provider = provider;
        shared.connection =
            connection.or_else(|| provider.map(|p| serde_json::json!({ "provider": p })));
        Ctx {
            shared: Arc::new(shared),
            case_id: self.case_id,
        }
    }

    /// Whether this reaches an engine.
    pub fn is_engine(&self) -> bool {
        self.shared.engine
    }

    /// The provider of an engine profile.
    pub fn provider(&self) -> Option<&'static str> {
        self.shared.provider
    }

    /// The connection of an engine profile (JSON, before it is encoded as a header).
    pub fn connection(&self) -> Option<&serde_json::Value> {
        self.shared.connection.as_ref()
    }

    /// Remembers an engine sandbox made with the connection header `connection`, so
    /// the runner can kill it when the cases are done.
    pub fn track_sandbox(&self, connection: Option<String>, sandbox_id: &str) {
        if let Ok(mut list) = self.shared.sandboxes.lock() {
            list.push((connection, sandbox_id.to_owned()));
        }
    }

    /// Every sandbox [`Ctx::track_sandbox`] remembered.
    pub fn tracked_sandboxes(&self) -> Vec<Tracked> {
        self.shared
            .sandboxes
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    /// The same server, whose terminal listener is at `url`.
    pub fn with_terminal_url(self, url: Option<String>) -> Ctx {
        let mut shared = (*self.shared).clone();
        shared.terminal_url = url.map(|u| u.trim_end_matches('/').to_string());
        Ctx {
            shared: Arc::new(shared),
            case_id: self.case_id,
        }
    }

    /// The terminal listener's base URL; cases that need it carry the
    /// `needs:terminal-port` tag, so the runner skips them when it is unknown.
    pub fn terminal_url(&self) -> anyhow::Result<&str> {
        self.shared.terminal_url.as_deref().ok_or_else(|| {
            anyhow!(
                "the terminal port is unknown: put --terminal-port {{terminal_port}} in \
                 --server-cmd, or give --terminal-url with --base-url"
            )
        })
    }

    /// The same server, labelled for one case.
    pub fn for_case(&self, case_id: &'static str) -> Ctx {
        Ctx {
            shared: self.shared.clone(),
            case_id,
        }
    }

    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    /// The profile temp dir, when the runner launched the server.
    pub fn dir(&self) -> Option<&Path> {
        self.shared.dir.as_deref()
    }

    /// No default auth header, no redirects, 30 s timeout.
    pub fn client(&self) -> &reqwest::Client {
        &self.shared.client
    }

    /// The `--token` given to the runner, if any.
    pub fn token(&self) -> Option<&str> {
        self.shared.token.as_deref()
    }

    pub fn profile_name(&self) -> &'static str {
        self.shared.profile
    }

    pub fn case_id(&self) -> &'static str {
        self.case_id
    }

    pub fn url(&self, path_and_query: &str) -> String {
        format!("{}{}", self.shared.base_url, path_and_query)
    }

    /// A request carrying the runner's `--token` (if any) as a bearer token.
    pub fn request(&self, method: Method, path_and_query: &str) -> RequestBuilder {
        let rb = self.anonymous(method, path_and_query);
        match self.token() {
            Some(token) => rb.bearer_auth(token),
            None => rb,
        }
    }

    /// A request with no auth at all.
    pub fn anonymous(&self, method: Method, path_and_query: &str) -> RequestBuilder {
        self.shared.client.request(method, self.url(path_and_query))
    }

    pub fn get(&self, p: &str) -> RequestBuilder {
        self.request(Method::GET, p)
    }

    pub fn delete(&self, p: &str) -> RequestBuilder {
        self.request(Method::DELETE, p)
    }

    pub fn post_json(&self, p: &str, body: &Value) -> RequestBuilder {
        self.request(Method::POST, p).json(body)
    }

    pub fn put_json(&self, p: &str, body: &Value) -> RequestBuilder {
        self.request(Method::PUT, p).json(body)
    }

    /// Sends and reads the whole body.
    pub async fn send(&self, rb: RequestBuilder) -> anyhow::Result<Resp> {
        let (client, req) = rb.build_split();
        let req = req.context("building the request")?;
        let method = req.method().clone();
        let path = req.url().path().to_string();
        let what = format!("{method} {}", request_target(req.url()));
        let resp = client
            .execute(req)
            .await
            .with_context(|| format!("{what}: sending"))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp
            .bytes()
            .await
            .with_context(|| format!("{what}: reading the body"))?;
        Ok(Resp {
            status,
            headers,
            body,
            method,
            path,
        })
    }

    /// Opens a `text/event-stream`. Fails unless the answer is 200 with that
    /// content type. The client's 30 s timeout covers the whole stream; set
    /// `.timeout(..)` on the builder for longer ones.
    pub async fn sse(&self, rb: RequestBuilder) -> anyhow::Result<SseStream> {
        let rb = rb.header(reqwest::header::ACCEPT, "text/event-stream");
        let (client, req) = rb.build_split();
        let req = req.context("building the request")?;
        let what = format!("{} {}", req.method(), request_target(req.url()));
        let method = req.method().clone();
        let path = req.url().path().to_string();
        let resp = client
            .execute(req)
            .await
            .with_context(|| format!("{what}: sending"))?;
        let status = resp.status().as_u16();
        let ct = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if status != 200 || !ct.starts_with("text/event-stream") {
            let headers = resp.headers().clone();
            let body = resp.bytes().await.unwrap_or_default();
            let r = Resp {
                status,
                headers,
                body,
                method,
                path,
            };
            bail!(
                "expected 200 text/event-stream, got {status} {ct:?}\n{}",
                r.describe()
            );
        }
        Ok(SseStream {
            status,
            headers: resp.headers().clone(),
            stream: resp.bytes_stream().boxed(),
            parser: SseParser::default(),
            queue: VecDeque::new(),
            done: false,
        })
    }

    /// Opens a WebSocket at `path` with the runner's token (if any).
    pub async fn ws(&self, path_and_query: &str) -> anyhow::Result<WsStream> {
        self.ws_with(path_and_query, self.token()).await
    }

    /// Opens a WebSocket with no auth at all.
    pub async fn ws_anonymous(&self, path_and_query: &str) -> anyhow::Result<WsStream> {
        self.ws_with(path_and_query, None).await
    }

    async fn ws_with(&self, path_and_query: &str, token: Option<&str>) -> anyhow::Result<WsStream> {
        let bearer = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = bearer
            .iter()
            .map(|b| (AUTHORIZATION.as_str(), b.as_str()))
            .collect();
        ws_connect(&self.url(path_and_query), &headers).await
    }

    /// Opens a WebSocket on the terminal listener with exactly these request headers (the
    /// token, when a case sends one, among them).
    pub async fn ws_terminal(
        &self,
        path_and_query: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<WsStream> {
        let url = format!("{}{path_and_query}", self.terminal_url()?);
        ws_connect(&url, headers).await
    }

    /// A WebSocket handshake on the terminal listener that the server must refuse: its
    /// answer, read whole, for the usual checks (fails when the upgrade succeeds).
    pub async fn ws_terminal_refused(
        &self,
        path_and_query: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Resp> {
        let url = format!("{}{path_and_query}", self.terminal_url()?);
        ws_refused(&url, path_and_query, headers).await
    }

    /// Opens a WebSocket at `path` on the base URL with exactly these request headers.
    pub async fn ws_with_headers(
        &self,
        path_and_query: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<WsStream> {
        ws_connect(&self.url(path_and_query), headers).await
    }

    /// A WebSocket handshake at `path` on the base URL that must be refused: the answer,
    /// read whole (fails when the upgrade succeeds).
    pub async fn ws_refused(
        &self,
        path_and_query: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Resp> {
        ws_refused(&self.url(path_and_query), path_and_query, headers).await
    }

    /// Redacts volatile values (checking their shape) and compares with the
    /// insta snapshot `<snapshots>/<name>.snap`.
    pub fn snapshot(&self, name: &str, value: &Value) -> anyhow::Result<()> {
        match (self.profile_name().starts_with("engine@"), self.provider()) {
            // A provider case's copy for another provider: compared with local's.
            (true, Some(provider)) => {
                crate::redact::assert_variant_snapshot(name, value, self.dir(), provider)
            }
            _ => crate::redact::assert_snapshot(name, value, self.dir()),
        }
    }
}

/// A handshake that must be refused: the refusal read whole as a [`Resp`].
async fn ws_refused(
    url: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<Resp> {
    use tokio_tungstenite::tungstenite::Error;
    match ws_connect_raw(url, headers).await? {
        Ok(_) => bail!("WebSocket {url}: the upgrade was accepted, a refusal was expected"),
        Err(Error::Http(response)) => {
            let (parts, body) = response.into_parts();
            Ok(Resp {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body: Bytes::from(body.unwrap_or_default()),
                method: Method::GET,
                path: path_and_query
                    .split('?')
                    .next()
                    .unwrap_or(path_and_query)
                    .to_string(),
            })
        }
        Err(e) => Err(anyhow!(e)).with_context(|| format!("WebSocket {url}: handshake")),
    }
}

/// Opens a WebSocket at an `http(s)://` URL with exactly these request headers.
async fn ws_connect(url: &str, headers: &[(&str, &str)]) -> anyhow::Result<WsStream> {
    ws_connect_raw(url, headers)
        .await?
        .with_context(|| format!("WebSocket {url}: handshake"))
}

/// The handshake's own outcome (a refusal is `Err(Error::Http(response))`); the outer
/// error is a bad URL, header or a timeout.
async fn ws_connect_raw(
    url: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<Result<WsStream, tokio_tungstenite::tungstenite::Error>> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
    let url = match url.strip_prefix("http") {
        Some(rest) => format!("ws{rest}"),
        None => url.to_string(),
    };
    let mut req = url
        .as_str()
        .into_client_request()
        .with_context(|| format!("bad WebSocket URL {url}"))?;
    for (name, value) in headers {
        let name: reqwest::header::HeaderName = name
            .parse()
            .with_context(|| format!("{name:?} is not a header name"))?;
        let value = value
            .parse()
            .with_context(|| format!("the {name} value is not a valid header value"))?;
        req.headers_mut().append(name, value);
    }
    let outcome = tokio::time::timeout(REQUEST_TIMEOUT, tokio_tungstenite::connect_async(req))
        .await
        .map_err(|_| anyhow!("WebSocket {url}: handshake timed out"))?;
    Ok(outcome.map(|(stream, _)| stream))
}

pub type WsStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn request_target(url: &reqwest::Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    }
}

/// A fully read response, remembering what was asked so checks can tell.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub method: Method,
    /// The request path (no query): decides the error shape.
    pub path: String,
}

impl Resp {
    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_slice(&self.body)
            .map_err(|e| anyhow!("body is not JSON ({e})\n{}", self.describe()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn expect_status(&self, status: u16) -> anyhow::Result<&Self> {
        ensure!(
            self.status == status,
            "expected status {status}, got {}\n{}",
            self.status,
            self.describe()
        );
        Ok(self)
    }

    /// Checks status, a JSON content type, the error shape for the path
    /// (flat outside `/v1`, OpenAI-style nested under it) and the code.
    /// Returns the parsed body.
    pub fn expect_error(&self, status: u16, code: &str) -> anyhow::Result<Value> {
        self.expect_status(status)?;
        let ct = self.header("content-type").unwrap_or_default();
        ensure!(
            ct.starts_with("application/json"),
            "expected an application/json error body, got Content-Type {ct:?}\n{}",
            self.describe()
        );
        let body = self.json()?;
        let got = if self.path == "/v1" || self.path.starts_with("/v1/") {
            check_nested_error(&body)
        } else {
            check_flat_error(&body)
        }
        .map_err(|e| anyhow!("{e}\n{}", self.describe()))?;
        ensure!(
            got == code,
            "expected error code {code:?}, got {got:?}\n{}",
            self.describe()
        );
        Ok(body)
    }

    /// Status line, headers and (cut) body, for failure messages.
    pub fn describe(&self) -> String {
        let mut out = format!("  {} {} -> {}\n", self.method, self.path, self.status);
        for (name, value) in &self.headers {
            let value = value.to_str().unwrap_or("<binary>");
            out.push_str(&format!("  {name}: {value}\n"));
        }
        let body = self.text();
        if body.is_empty() {
            out.push_str("  <empty body>");
        } else if body.len() > BODY_IN_MESSAGE {
            let cut = (0..=BODY_IN_MESSAGE)
                .rev()
                .find(|i| body.is_char_boundary(*i))
                .unwrap_or(0);
            out.push_str(&format!(
                "  {}... ({} bytes)",
                &body[..cut],
                self.body.len()
            ));
        } else {
            out.push_str(&format!("  {body}"));
        }
        out
    }
}

/// `{"error": str, "type": str, "code": str, "endpoint"?: str, "rule"?: str}`
fn check_flat_error(body: &Value) -> anyhow::Result<String> {
    let obj = body
        .as_object()
        .ok_or_else(|| anyhow!("error body is not a JSON object"))?;
    for key in ["error", "type", "code"] {
        ensure!(
            obj.get(key).is_some_and(Value::is_string),
            "error body needs string field {key:?} (flat shape outside /v1)"
        );
    }
    // Further fields (`param`, extensions) are allowed; the named ones must be strings.
    for key in ["endpoint", "rule", "param"] {
        ensure!(
            obj.get(key).is_none_or(Value::is_string),
            "error field {key:?} must be a string when present"
        );
    }
    Ok(obj["code"].as_str().unwrap_or_default().to_string())
}

/// `{"error": {"message": str, "type": str, "param": str|null, "code": str}}`
fn check_nested_error(body: &Value) -> anyhow::Result<String> {
    let obj = body
        .as_object()
        .ok_or_else(|| anyhow!("error body is not a JSON object"))?;
    // Extension members beside `error` (such as `x_svc`) are allowed.
    let err = obj
        .get("error")
        .and_then(Value::as_object)
        .ok_or_else(|| anyhow!("/v1 error body needs an \"error\" object (nested shape)"))?;
    for key in ["message", "type", "code"] {
        ensure!(
            err.get(key).is_some_and(Value::is_string),
            "/v1 error object needs string field {key:?}"
        );
    }
    ensure!(
        err.get("param")
            .is_some_and(|p| p.is_string() || p.is_null()),
        "/v1 error object needs field \"param\" (string or null)"
    );
    for key in ["endpoint", "rule"] {
        ensure!(
            err.get(key).is_none_or(Value::is_string),
            "/v1 error field {key:?} must be a string when present"
        );
    }
    Ok(err["code"].as_str().unwrap_or_default().to_string())
}

/// One `text/event-stream` frame: everything up to a blank line. Comment-only
/// frames (keep-alives) are frames too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseFrame {
    pub id: Option<String>,
    pub event: Option<String>,
    /// `data` lines joined with `\n`; `None` when the frame had none.
    pub data: Option<String>,
    pub comments: Vec<String>,
    pub retry: Option<u64>,
}

impl SseFrame {
    pub fn json(&self) -> anyhow::Result<Value> {
        let data = self
            .data
            .as_deref()
            .ok_or_else(|| anyhow!("SSE frame has no data: {self:?}"))?;
        serde_json::from_str(data).map_err(|e| anyhow!("SSE data is not JSON ({e}): {data}"))
    }

    fn is_empty(&self) -> bool {
        *self == SseFrame::default()
    }
}

/// Incremental parser, kept apart from the network for unit tests.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    frame: SseFrame,
}

impl SseParser {
    /// Feeds bytes; returns the frames completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseFrame> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.buf.iter().position(|b| *b == b'\n' || *b == b'\r') {
            // A CR at the very end may be half of a CRLF split across chunks.
            let len = match (self.buf[end], self.buf.get(end + 1)) {
                (b'\r', Some(b'\n')) => 2,
                (b'\r', None) => break,
                _ => 1,
            };
            let line: Vec<u8> = self.buf.drain(..end + len).take(end).collect();
            self.line(&String::from_utf8_lossy(&line), &mut out);
        }
        out
    }

    /// End of stream: a lone trailing CR ends a line; an unterminated frame is dropped, as browsers do.
    pub fn finish(&mut self) -> Vec<SseFrame> {
        let mut out = Vec::new();
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
            let line = std::mem::take(&mut self.buf);
            self.line(&String::from_utf8_lossy(&line), &mut out);
        }
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseFrame>) {
        if line.is_empty() {
            let frame = std::mem::take(&mut self.frame);
            if !frame.is_empty() {
                out.push(frame);
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            let comment = comment.strip_prefix(' ').unwrap_or(comment);
            self.frame.comments.push(comment.to_string());
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.frame.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.frame.data = Some(value.to_string()),
            },
            "event" => self.frame.event = Some(value.to_string()),
            "id" if !value.contains('\0') => self.frame.id = Some(value.to_string()),
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.frame.retry = Some(ms);
                }
            }
            _ => {}
        }
    }
}

/// An open event stream.
pub struct SseStream {
    pub status: u16,
    pub headers: HeaderMap,
    stream: BoxStream<'static, reqwest::Result<Bytes>>,
    parser: SseParser,
    queue: VecDeque<SseFrame>,
    done: bool,
}

impl SseStream {
    /// The next frame (comment-only ones included); `None` at end of stream.
    pub async fn next_frame(&mut self) -> anyhow::Result<Option<SseFrame>> {
        loop {
            if let Some(frame) = self.queue.pop_front() {
                return Ok(Some(frame));
            }
            if self.done {
                return Ok(None);
            }
            match self.stream.next().await {
                Some(chunk) => {
                    let chunk = chunk.context("reading the event stream")?;
                    self.queue.extend(self.parser.push(&chunk));
                }
                None => {
                    self.done = true;
                    self.queue.extend(self.parser.finish());
                }
            }
        }
    }

    /// The next frame that carries data or an event name.
    pub async fn next_event(&mut self) -> anyhow::Result<Option<SseFrame>> {
        while let Some(frame) = self.next_frame().await? {
            if frame.data.is_some() || frame.event.is_some() {
                return Ok(Some(frame));
            }
        }
        Ok(None)
    }

    /// Like [`SseStream::next_event`], failing when nothing comes within `wait`.
    pub async fn next_event_within(&mut self, wait: Duration) -> anyhow::Result<Option<SseFrame>> {
        tokio::time::timeout(wait, self.next_event())
            .await
            .map_err(|_| anyhow!("no SSE event within {wait:?}"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_frames_split_across_chunks() {
        let mut p = SseParser::default();
        assert!(p.push(b": keep\r").is_empty());
        let frames = p.push(b"\n\r\nid: 7\nevent: x\ndata: {\"a\":\ndata:1}\n");
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].comments, vec!["keep".to_string()]);
        let frames = p.push(b"\n");
        assert_eq!(frames[0].id.as_deref(), Some("7"));
        assert_eq!(frames[0].event.as_deref(), Some("x"));
        assert_eq!(frames[0].data.as_deref(), Some("{\"a\":\n1}"));
        assert!(frames[0].json().is_ok());
    }

    #[test]
    fn sse_unterminated_frame_is_dropped() {
        let mut p = SseParser::default();
        assert!(p.push(b"data: x\n").is_empty());
        assert!(p.finish().is_empty());
    }

    fn resp(path: &str, body: &str) -> Resp {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "application/json".parse().unwrap());
        Resp {
            status: 404,
            headers,
            body: Bytes::from(body.to_string()),
            method: Method::GET,
            path: path.to_string(),
        }
    }

    #[test]
    fn error_shapes_follow_the_path() {
        let flat = r#"{"error":"no such thing","type":"NotFound","code":"not_found"}"#;
        let nested = r#"{"error":{"message":"m","type":"t","param":null,"code":"not_found"}}"#;
        assert!(resp("/files", flat).expect_error(404, "not_found").is_ok());
        assert!(
            resp("/v1/models", nested)
                .expect_error(404, "not_found")
                .is_ok()
        );
        assert!(
            resp("/v1/models", flat)
                .expect_error(404, "not_found")
                .is_err()
        );
        assert!(
            resp("/files", nested)
                .expect_error(404, "not_found")
                .is_err()
        );
        let err = resp("/files", flat).expect_error(404, "other").unwrap_err();
        assert!(err.to_string().contains("\"not_found\""), "{err}");
        assert!(resp("/files", flat).expect_error(400, "not_found").is_err());
    }
}
