//! Helpers of the `e2b/*` cases (no cases here): the front's address and key
//! from the engine's descriptor, a sandbox made through it, and Connect calls
//! with their envelopes read back.

use crate::Ctx;
use anyhow::{Context as _, anyhow, ensure};
use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The E2B front of the case's engine.
pub struct Front {
    pub ctx: Ctx,
    pub url: String,
    pub key: String,
}

/// A sandbox of the front: its id and its envd access token.
pub struct Made {
    pub id: String,
    pub token: String,
}

/// The flag of a stream's end frame.
pub const END: u8 = 0x02;

impl Front {
    /// The front named by the descriptor in the engine's state folder.
    pub fn of(ctx: &Ctx) -> anyhow::Result<Front> {
        let dir = ctx
            .dir()
            .ok_or_else(|| anyhow!("needs the state folder (launch the engine with --engine-cmd)"))?;
        let text = std::fs::read_to_string(dir.join("engine.json")).context("reading engine.json")?;
        let descriptor: Value = serde_json::from_str(&text)?;
        let port = descriptor["e2b_port"]
            .as_u64()
            .ok_or_else(|| anyhow!("engine.json names no `e2b_port`: {descriptor}"))?;
        let key = descriptor["e2b_api_key"]
            .as_str()
            .ok_or_else(|| anyhow!("engine.json names no `e2b_api_key`"))?
            .to_owned();
        Ok(Front {
            ctx: ctx.clone(),
            url: format!("http://127.0.0.1:{port}"),
            key,
        })
    }

    /// The front and a sandbox made through it: how every envd case starts.
    pub async fn with_sandbox(ctx: &Ctx) -> anyhow::Result<(Front, Made)> {
        let front = Front::of(ctx)?;
        let made = front.create().await?;
        Ok((front, made))
    }

    /// A control-plane request without the key.
    pub fn anonymous(&self, method: Method, path: &str) -> RequestBuilder {
        self.ctx.client().request(method, format!("{}{path}", self.url))
    }

    /// A control-plane request with the key.
    pub fn control(&self, method: Method, path: &str) -> RequestBuilder {
        self.anonymous(method, path).header("x-api-key", &self.key)
    }

    /// A sandbox made through the control plane (tracked, so it is killed after the case).
    pub async fn create(&self) -> anyhow::Result<Made> {
        let resp = self
            .ctx
            .send(self.control(Method::POST, "/v2/sandboxes").json(&json!({"templateID": "base", "timeout": 120})))
            .await?;
        resp.expect_status(201)?;
        let body = resp.json()?;
        let id = body["sandboxID"].as_str().ok_or_else(|| anyhow!("no sandboxID: {body}"))?.to_owned();
        self.ctx.track_sandbox(None, &id);
        let token = body["envdAccessToken"]
            .as_str()
            .ok_or_else(|| anyhow!("no envdAccessToken: {body}"))?
            .to_owned();
        Ok(Made { id, token })
    }

    /// An envd request to `made`'s sandbox with its token.
    pub fn envd(&self, made: &Made, path: &str) -> RequestBuilder {
        self.envd_as(&made.id, Some(&made.token), path)
    }

    /// An envd request naming sandbox `id`, with `token` when given.
    pub fn envd_as(&self, id: &str, token: Option<&str>, path: &str) -> RequestBuilder {
        self.port_as(Method::POST, "49983", id, token, path)
    }

    /// A request to the code interpreter's port (49999) of sandbox `id`, with `token` when given.
    pub fn code_as(&self, method: Method, id: &str, token: Option<&str>, path: &str) -> RequestBuilder {
        self.port_as(method, "49999", id, token, path)
    }

    /// envd's `GET /health` of sandbox `id` (it takes no token).
    pub fn health(&self, id: &str) -> RequestBuilder {
        self.port_as(Method::GET, "49983", id, None, "/health")
    }

    /// A request to `port` of sandbox `id`, with `token` when given.
    pub fn port_as(&self, method: Method, port: &str, id: &str, token: Option<&str>, path: &str) -> RequestBuilder {
        let rb = self.anonymous(method, path).header("e2b-sandbox-id", id).header("e2b-sandbox-port", port);
        match token {
            Some(token) => rb.header("x-access-token", token),
            None => rb,
        }
    }

    /// A unary Connect call: the status and the JSON answer.
    pub async fn unary(&self, made: &Made, method: &str, body: &Value) -> anyhow::Result<(u16, Value)> {
        self.unary_as(&made.id, Some(&made.token), method, body).await
    }

    /// A unary Connect call naming sandbox `id`, with `token` when given: the status and the
    /// JSON answer.
    pub async fn unary_as(&self, id: &str, token: Option<&str>, method: &str, body: &Value) -> anyhow::Result<(u16, Value)> {
        let resp = self
            .ctx
            .send(self.envd_as(id, token, method).header("content-type", "application/json").body(body.to_string()))
            .await?;
        Ok((resp.status, resp.json().unwrap_or(Value::Null)))
    }
}

/// One envelope of `json`.
pub fn envelope(flags: u8, json: &Value) -> Vec<u8> {
    let bytes = json.to_string().into_bytes();
    let mut out = vec![flags];
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(&bytes);
    out
}

/// The envelopes of a stream's answer, each its flags and its JSON.
pub fn frames(mut body: &[u8]) -> anyhow::Result<Vec<(u8, Value)>> {
    let mut out = Vec::new();
    while !body.is_empty() {
        ensure!(body.len() >= 5, "a truncated envelope prefix: {body:?}");
        let length = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        ensure!(body.len() >= 5 + length, "a truncated envelope");
        let json: Value = serde_json::from_slice(&body[5..5 + length]).context("an envelope that is not JSON")?;
        out.push((body[0], json));
        body = &body[5 + length..];
    }
    Ok(out)
}

/// A server-stream call: its status, content type and envelopes; the last must be the
/// one end frame.
pub async fn stream(
    front: &Front,
    rb: RequestBuilder,
    request: &[u8],
) -> anyhow::Result<(u16, Vec<(u8, Value)>)> {
    let resp = front
        .ctx
        .send(rb.header("content-type", "application/connect+json").body(request.to_vec()))
        .await?;
    let content_type = resp.header("content-type").unwrap_or("").to_owned();
    ensure!(
        content_type.starts_with("application/connect+json"),
        "a stream answered `{content_type}`: {}",
        resp.text()
    );
    let frames = frames(&resp.body)?;
    let ends = frames.iter().filter(|(flags, _)| flags & END != 0).count();
    ensure!(ends == 1, "{ends} end frames: {frames:?}");
    ensure!(frames.last().is_some_and(|(flags, _)| flags & END != 0), "the end frame is not last: {frames:?}");
    Ok((resp.status, frames))
}

/// The Connect error of a unary answer or an end frame: its code and message.
pub fn connect_error(body: &Value) -> anyhow::Result<(&str, &str)> {
    let code = body["code"].as_str().ok_or_else(|| anyhow!("no string `code`: {body}"))?;
    let message = body["message"].as_str().ok_or_else(|| anyhow!("no `message`: {body}"))?;
    ensure!(!message.is_empty(), "an empty message: {body}");
    Ok((code, message))
}

impl Front {
    /// Kills `made`'s sandbox through the control plane: every case ends with its sandboxes
    /// gone, as an SDK's `kill()` leaves them.
    pub async fn kill(&self, made: &Made) -> anyhow::Result<()> {
        self.ctx
            .send(self.control(Method::DELETE, &format!("/sandboxes/{}", made.id)))
            .await?
            .expect_status(204)?;
        Ok(())
    }

    /// A request to the code interpreter's port of `made`'s sandbox, with its token.
    pub fn code(&self, method: Method, made: &Made, path: &str) -> RequestBuilder {
        self.code_as(method, &made.id, Some(&made.token), path)
    }

    /// A server stream of `made`'s sandbox opened and read as its envelopes come.
    pub async fn live(&self, made: &Made, method: &str, request: &Value) -> anyhow::Result<Live> {
        Live::open(self.envd(made, method), &envelope(0, request)).await
    }
}

/// Base64 of `bytes`, as proto3 JSON spells `bytes` fields.
pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The bytes of a base64 field, empty when it is absent or not base64.
pub fn unb64(field: &Value) -> Vec<u8> {
    use base64::Engine as _;
    field
        .as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .unwrap_or_default()
}

/// How a case waits for what the engine does in its own time: the engine cases' poll.
pub use super::super::engine::support::eventually;

/// A server stream read while it is open: a background process's `Start`, `Connect` to
/// one that runs on, `WatchDir`. Dropping it closes the stream, not what it follows.
pub struct Live {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
}

impl Live {
    /// Opens the stream: 200 `application/connect+json`, else the answer is the error.
    pub async fn open(rb: RequestBuilder, request: &[u8]) -> anyhow::Result<Live> {
        use futures::StreamExt as _;
        // Longer than the client's default, so a stream a case waits on is not cut short.
        let rb = rb
            .header("content-type", "application/connect+json")
            .body(request.to_vec())
            .timeout(Duration::from_secs(120));
        let (client, request) = rb.build_split();
        let resp = client.execute(request?).await.context("opening a stream")?;
        let status = resp.status().as_u16();
        let content_type = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        ensure!(
            status == 200 && content_type.starts_with("application/connect+json"),
            "a stream answered {status} `{content_type}`"
        );
        Ok(Live { body: resp.bytes_stream().boxed(), buffer: Vec::new() })
    }

    /// The next envelope (flags, JSON) within `within`; `None` once the stream is over.
    pub async fn next(&mut self, within: Duration) -> anyhow::Result<Option<(u8, Value)>> {
        use futures::StreamExt as _;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.buffer.len() >= 5 {
                let length = u32::from_be_bytes([self.buffer[1], self.buffer[2], self.buffer[3], self.buffer[4]]) as usize;
                if self.buffer.len() >= 5 + length {
                    let json: Value = serde_json::from_slice(&self.buffer[5..5 + length]).context("an envelope that is not JSON")?;
                    let flags = self.buffer[0];
                    self.buffer.drain(..5 + length);
                    return Ok(Some((flags, json)));
                }
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => anyhow::bail!("no envelope within {within:?}"),
                Ok(None) => {
                    ensure!(self.buffer.is_empty(), "the stream ended inside an envelope");
                    return Ok(None);
                }
                Ok(Some(chunk)) => self.buffer.extend_from_slice(&chunk.context("reading a stream")?),
            }
        }
    }

    /// The messages read until one satisfies `wanted` (included, last), within `within`;
    /// an end frame first is an error naming what was read.
    pub async fn until(&mut self, within: Duration, what: &str, wanted: impl Fn(&Value) -> bool) -> anyhow::Result<Vec<Value>> {
        let deadline = Instant::now() + within;
        let mut read = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let next = self.next(left).await.with_context(|| format!("waiting for {what}, after {read:?}"))?;
            match next {
                Some((flags, json)) if flags & END == 0 => {
                    let done = wanted(&json);
                    read.push(json);
                    if done {
                        return Ok(read);
                    }
                }
                other => anyhow::bail!("the stream ended before {what}: {other:?} after {read:?}"),
            }
        }
    }
}
