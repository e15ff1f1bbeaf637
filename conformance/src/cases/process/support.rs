//! Helpers of the `process/*` cases (no cases here): a fresh directory per case, one
//! request helper per route, the whole event stream of a shell, what `/proc` says about a
//! pid, and snapshots with the values that vary by run (pids, times, durations) checked,
//! then replaced.

use crate::{Ctx, Resp, SseFrame};
use anyhow::{Context, anyhow, ensure};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The profile's temp dir (`{dir}`).
pub fn base(ctx: &Ctx) -> anyhow::Result<PathBuf> {
    Ok(ctx
        .dir()
        .context("needs the profile directory (launch the server with --server-cmd)")?
        .to_path_buf())
}

/// A fresh directory `{dir}/work/<name>` for one case.
pub fn area(ctx: &Ctx, name: &str) -> anyhow::Result<PathBuf> {
    let dir = base(ctx)?.join("work").join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

pub fn s(path: &Path) -> String {
    path.display().to_string()
}

pub async fn shell(ctx: &Ctx, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/shell", body)).await
}

pub async fn start(ctx: &Ctx, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/processes", body)).await
}

/// Starts a process and answers its pid (the start must succeed).
pub async fn started(ctx: &Ctx, body: &Value) -> anyhow::Result<u32> {
    let resp = start(ctx, body).await?;
    resp.expect_status(200)?;
    pid_of(&resp.json()?)
}

pub fn pid_of(record: &Value) -> anyhow::Result<u32> {
    record["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| anyhow!("no positive `pid` in {record}"))
}

pub async fn get(ctx: &Ctx, pid: u32, query: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.get(&format!("/processes/{pid}{query}"))).await
}

pub async fn signal(ctx: &Ctx, pid: u32, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json(&format!("/processes/{pid}/signal"), body))
        .await
}

pub async fn stdin(ctx: &Ctx, pid: u32, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json(&format!("/processes/{pid}/stdin"), body))
        .await
}

pub async fn kill(ctx: &Ctx, pid: u32) -> anyhow::Result<Resp> {
    ctx.send(ctx.delete(&format!("/processes/{pid}"))).await
}

/// Polls the record until it says `exited` (or `within` runs out).
pub async fn exited(ctx: &Ctx, pid: u32, within: Duration) -> anyhow::Result<Value> {
    let deadline = Instant::now() + within;
    loop {
        let record = get(ctx, pid, "").await?;
        record.expect_status(200)?;
        let record = record.json()?;
        if record["status"] == "exited" {
            return Ok(record);
        }
        ensure!(
            Instant::now() < deadline,
            "process {pid} still runs after {within:?}: {record}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Opens `POST /shell/stream` and reads every frame to the end (at most `within`).
pub async fn stream_all(
    ctx: &Ctx,
    body: &Value,
    within: Duration,
) -> anyhow::Result<Vec<SseFrame>> {
    let mut stream = ctx.sse(ctx.post_json("/shell/stream", body)).await?;
    ensure!(stream.status == 200, "status {}", stream.status);
    let ct = stream
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    ensure!(ct.starts_with("text/event-stream"), "content type {ct}");
    let mut frames = Vec::new();
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.next_event()).await {
            Ok(Ok(Some(frame))) => frames.push(frame),
            Ok(Ok(None)) => return Ok(frames),
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(anyhow!(
                    "the stream did not end within {within:?}: {frames:?}"
                ));
            }
        }
    }
}

/// The bytes of the `stdout` (or `stderr`) events, in order (`data` or `data_b64`).
pub fn stream_bytes(frames: &[SseFrame], event: &str) -> anyhow::Result<Vec<u8>> {
    use base64::Engine as _;
    let mut out = Vec::new();
    for frame in frames.iter().filter(|f| f.event.as_deref() == Some(event)) {
        let data = frame.json()?;
        match (data.get("data"), data.get("data_b64")) {
            (Some(Value::String(text)), None) => out.extend_from_slice(text.as_bytes()),
            (None, Some(Value::String(b64))) => out.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .context("data_b64 is base64")?,
            ),
            _ => {
                return Err(anyhow!(
                    "a `{event}` event carries `data` or `data_b64`: {data}"
                ));
            }
        }
    }
    Ok(out)
}

/// Whether `pid` is a live process here (a zombie is not live, but it is not reaped either:
/// see [`zombie`]).
pub fn alive(pid: u32) -> bool {
    proc_state(pid).is_some_and(|s| s != 'Z')
}

/// Whether `pid` is a zombie nobody reaped.
pub fn zombie(pid: u32) -> bool {
    proc_state(pid) == Some('Z')
}

fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ...`: the state follows the last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Waits until none of `pids` is alive or a zombie (at most `within`).
pub async fn all_gone(pids: &[u32], within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| alive(*p) || zombie(*p))
            .collect();
        if left.is_empty() {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "still there after {within:?} (alive or unreaped): {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Pids written by the command into `file`, one per line.
pub async fn pids_in(file: &Path, count: usize, within: Duration) -> anyhow::Result<Vec<u32>> {
    let deadline = Instant::now() + within;
    loop {
        let pids: Vec<u32> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.len() >= count {
            return Ok(pids);
        }
        ensure!(
            Instant::now() < deadline,
            "{} did not get {count} pids within {within:?}",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A snapshot of a process body: `pid` (a positive integer) and `ended_at` (RFC 3339 UTC
/// or null) checked, then replaced; the profile dir as `[dir]`. `started_at` and
/// `duration_ms` are redacted by the snapshot itself.
pub fn snapshot(ctx: &Ctx, name: &str, v: &Value) -> anyhow::Result<()> {
    fn walk(v: &Value, dir: &str) -> anyhow::Result<Value> {
        Ok(match v {
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    let v = match k.as_str() {
                        "pid" => {
                            ensure!(v.as_u64().is_some_and(|p| p > 0), "`pid` is positive: {v}");
                            Value::from("[pid]")
                        }
                        "ended_at" if !v.is_null() => {
                            let at = v.as_str().unwrap_or_default();
                            ensure!(
                                at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
                                "`ended_at` is RFC 3339 UTC to the second: {v}"
                            );
                            Value::from("[timestamp]")
                        }
                        _ => walk(v, dir)?,
                    };
                    out.insert(k.clone(), v);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| walk(i, dir))
                    .collect::<anyhow::Result<_>>()?,
            ),
            Value::String(text) => Value::String(text.replace(dir, "[dir]")),
            other => other.clone(),
        })
    }
    let dir = s(&base(ctx)?);
    ctx.snapshot(name, &walk(v, &dir)?)
}

/// Checks the record's shape: every field, of its type.
pub fn check_record(r: &Value) -> anyhow::Result<()> {
    pid_of(r)?;
    for key in [
        "pid",
        "tag",
        "cmd",
        "args",
        "cwd",
        "status",
        "exit_code",
        "signal",
        "started_at",
        "ended_at",
    ] {
        ensure!(r.get(key).is_some(), "the record has `{key}`: {r}");
    }
    ensure!(
        r["status"] == "running" || r["status"] == "exited",
        "status is running or exited: {r}"
    );
    ensure!(r["tag"].is_string() && r["cmd"].is_string(), "{r}");
    Ok(())
}
