//! Helpers of the `terminal/*` cases (no cases here): the `terminal` profile, requests as
//! one of its identities, the WebSocket on the terminal port (input lines, reading output
//! until a marker, the close frame), and `/proc` checks.

use crate::profiles::Profile;
use crate::{Contract, Ctx, Resp, WsStream};
use anyhow::{Context, anyhow, bail, ensure};
use futures::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// Three identities (two with every scope, one with `terminal:use` only), the path guard on
/// `{dir}/work`, a command guard that admits the usual shells (and `cat` to callers with
/// `ops:cat`), variable rules (`SECRET_*` refused, only `APP_*`, `TERM` and `LANG` may be
/// set), and a variable of the server's own that no shell may see.
pub static TERMINAL: Profile = Profile {
    name: "terminal",
    contract: Contract::Server,
    provider: None,
    env: &[("TERMINAL_CANARY", "server-only")],
    template: Some(
        r#"
identities:
  - {id: alice, token: alice-token, scopes: ["*"]}
  - {id: bob, token: bob-token, scopes: ["*"]}
  - {id: typist, token: typist-token, scopes: ["terminal:use"]}
paths:
  allow: ["{dir}/work"]
process:
  allow_commands: ["bash", "sh", "dash", "setsid", {command: "cat", scopes: ["ops:cat"]}]
  deny_env: ["SECRET_*"]
  allow_env: ["APP_*", "TERM", "LANG"]
"#,
    ),
    args: &[],
    files: &[("work/readme.txt", "terminal cases run here\n")],
};

pub const ALICE: &str = "alice-token";
pub const BOB: &str = "bob-token";
pub const TYPIST: &str = "typist-token";

/// How long output may take to show up.
pub const WAIT: Duration = Duration::from_secs(20);

/// `{dir}/work`, the allowed directory.
pub fn work(ctx: &Ctx) -> anyhow::Result<PathBuf> {
    Ok(ctx
        .dir()
        .context("needs the profile directory (launch the server with --server-cmd)")?
        .join("work"))
}

pub fn s(path: &std::path::Path) -> String {
    path.display().to_string()
}

pub async fn call(
    ctx: &Ctx,
    token: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<Resp> {
    let rb = ctx.anonymous(method, path).bearer_auth(token);
    let rb = match body {
        Some(body) => rb.json(body),
        None => rb,
    };
    ctx.send(rb).await
}

/// POST /pty as `token` with `body`.
pub async fn create(ctx: &Ctx, token: &str, body: &Value) -> anyhow::Result<Resp> {
    call(ctx, token, Method::POST, "/pty", Some(body)).await
}

/// A terminal of alice's in `{dir}/work` with `extra` members; its record.
pub async fn terminal(ctx: &Ctx, extra: Value) -> anyhow::Result<Value> {
    let mut body = json!({"cwd": s(&work(ctx)?)});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let resp = create(ctx, ALICE, &body).await?;
    resp.expect_status(200)?;
    let record = resp.json()?;
    ensure!(
        record["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("pty_")),
        "a record with a pty_ id: {record}"
    );
    Ok(record)
}

pub fn id_of(record: &Value) -> String {
    record["id"].as_str().unwrap_or_default().to_string()
}

pub fn pid_of(record: &Value) -> anyhow::Result<u32> {
    record["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| anyhow!("`pid` is a positive integer: {record}"))
}

/// A record with its pid checked and replaced, for snapshots (ids and times are redacted
/// by the snapshot itself).
pub fn stable(record: &Value) -> anyhow::Result<Value> {
    pid_of(record)?;
    let mut out = record.clone();
    out["pid"] = json!("[pid]");
    Ok(out)
}

/// Attaches to terminal `id` as `token` (in `Authorization`).
pub async fn attach(ctx: &Ctx, id: &str, token: &str) -> anyhow::Result<WsStream> {
    let bearer = format!("Bearer {token}");
    ctx.ws_terminal(&format!("/pty/{id}/connect"), &[("authorization", &bearer)])
        .await
}

/// Types `line` and Enter.
pub async fn type_line(ws: &mut WsStream, line: &str) -> anyhow::Result<()> {
    ws.send(Message::Binary(format!("{line}\n").into_bytes().into()))
        .await
        .context("sending input")
}

/// What a client read: the output bytes, and the close frame if one came.
#[derive(Debug, Default)]
pub struct Read {
    pub bytes: Vec<u8>,
    pub close: Option<(u16, String)>,
}

impl Read {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    pub fn has(&self, needle: &[u8]) -> bool {
        self.bytes.windows(needle.len()).any(|w| w == needle)
    }
}

/// Reads binary frames until `needle` shows up in the output, or the socket closes, or
/// `WAIT` passes (both failures, naming what was read).
pub async fn read_until(ws: &mut WsStream, needle: &[u8]) -> anyhow::Result<Read> {
    let mut read = Read::default();
    let mut checked: usize = 0;
    let outcome = tokio::time::timeout(WAIT, async {
        loop {
            // Only the new bytes (and a needle's length before them) are searched.
            let from = checked.saturating_sub(needle.len());
            if read.bytes[from..]
                .windows(needle.len())
                .any(|w| w == needle)
            {
                return Ok(());
            }
            checked = read.bytes.len();
            match next_frame(ws).await? {
                Frame::Bytes(b) => read.bytes.extend_from_slice(&b),
                Frame::Close(code, reason) => {
                    read.close = Some((code, reason));
                    bail!(
                        "the socket closed before {:?}",
                        String::from_utf8_lossy(needle)
                    );
                }
            }
        }
    })
    .await;
    let tail = |r: &Read| {
        let text = r.text();
        let start = text.len().saturating_sub(400);
        let start = (start..=text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        text[start..].to_string()
    };
    match outcome {
        Ok(Ok(())) => Ok(read),
        Ok(Err(e)) => Err(e).with_context(|| format!("read so far (end): {:?}", tail(&read))),
        Err(_) => bail!(
            "no {:?} within {WAIT:?}; read {} bytes, ending {:?}",
            String::from_utf8_lossy(needle),
            read.bytes.len(),
            tail(&read)
        ),
    }
}

/// Reads until the close frame (output before it collected); fails after `WAIT`.
pub async fn read_to_close(ws: &mut WsStream) -> anyhow::Result<Read> {
    let mut read = Read::default();
    tokio::time::timeout(WAIT, async {
        loop {
            match next_frame(ws).await? {
                Frame::Bytes(b) => read.bytes.extend_from_slice(&b),
                Frame::Close(code, reason) => {
                    read.close = Some((code, reason));
                    return anyhow::Ok(());
                }
            }
        }
    })
    .await
    .map_err(|_| anyhow!("no close frame within {WAIT:?}"))??;
    Ok(read)
}

enum Frame {
    Bytes(Vec<u8>),
    Close(u16, String),
}

async fn next_frame(ws: &mut WsStream) -> anyhow::Result<Frame> {
    loop {
        match ws.next().await {
            None => bail!("the socket ended without a close frame"),
            Some(Err(e)) => bail!("reading the socket: {e}"),
            Some(Ok(Message::Binary(b))) => return Ok(Frame::Bytes(b.to_vec())),
            Some(Ok(Message::Text(t))) => bail!("the server sent a text frame: {t}"),
            Some(Ok(Message::Close(frame))) => {
                let (code, reason) = frame
                    .map(|f| (u16::from(f.code), f.reason.to_string()))
                    .unwrap_or((1005, String::new()));
                return Ok(Frame::Close(code, reason));
            }
            Some(Ok(_)) => continue,
        }
    }
}

/// Whether `pid` runs (a zombie or no process at all does not).
pub fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").and_then(|(_, s)| s.chars().next());
    matches!(state, Some(c) if c != 'Z' && c != 'X')
}

/// Waits up to 10 s for `pid` to stop running.
pub async fn gone(pid: u32) -> anyhow::Result<()> {
    for _ in 0..200 {
        if !running(pid) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("process {pid} still runs")
}

/// The number a line `<label>=<digits>=end` printed (by `printf '<label>=%s=%s\n' N end`,
/// which the typed line's echo cannot match).
pub fn number_after(read: &Read, label: &str) -> anyhow::Result<u32> {
    let text = read.text();
    let marker = format!("{label}=");
    text.rsplit(marker.as_str())
        .next()
        .and_then(|rest| rest.split('=').next())
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| anyhow!("no {marker}N= in {text:?}"))
}

/// An error body's check plus the parameter it names.
pub fn refused(resp: &Resp, status: u16, code: &str, param: Option<&str>) -> anyhow::Result<Value> {
    let body = resp.expect_error(status, code)?;
    if let Some(param) = param {
        ensure!(body["param"] == param, "names `{param}`: {body}");
    }
    Ok(body)
}
