//! Helpers of the `engine/*` cases (no cases here): requests carrying the
//! profile's connection, one helper per common route, the engine error body
//! checked against its table row, whole command streams, and snapshots with the
//! values that vary by run (ids, pids, times) checked, then replaced.

use crate::engine::{CONNECTION_HEADER, connection_header, profile_connection};
use crate::{Ctx, Resp, SseFrame};
use anyhow::{Context as _, anyhow, bail, ensure};
use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The rows of the engine's error table (spec 7.2): code, status, the client's
/// exception class (`type`).
pub const TABLE: &[(&str, u16, &str)] = &[
    ("E1001", 401, "AuthenticationError"),
    ("E1002", 401, "ProviderAuthenticationError"),
    ("E1003", 403, "ForbiddenError"),
    ("E2000", 404, "NotFoundError"),
    ("E2004", 404, "FileNotFoundError"),
    ("E2005", 404, "ProcessNotFoundError"),
    ("E2006", 404, "ContextNotFoundError"),
    ("E2009", 404, "SandboxNotFoundError"),
    ("E2010", 404, "TemplateNotFoundError"),
    ("E4001", 400, "InvalidArgumentError"),
    ("E4002", 400, "ConfigurationError"),
    ("E4003", 400, "SandboxStateError"),
    ("E4004", 400, "FileExistsError"),
    ("E4005", 400, "PathNotAllowedError"),
    ("E4006", 400, "FileTypeError"),
    ("E4007", 400, "ProcessExitedError"),
    ("E8004", 501, "FeatureNotSupportedError"),
    ("E8005", 501, "IsolationUnavailableError"),
    ("E9001", 500, "ProviderError"),
    ("E9002", 500, "ProviderTimeoutError"),
    ("E9000", 500, "EngineError"),
];

/// The profile's connection header (its provider), when it has one.
pub fn own(ctx: &Ctx) -> Option<String> {
    profile_connection(ctx.connection())
}

/// The header of another account of the profile's provider: a different `api_key`
/// makes a different fingerprint, so a different owner of sandboxes. A `rest`
/// connection's own `api_key` is the remote engine's token, so there the account is
/// its remote connection's (`provider_options.remote`).
pub fn account(ctx: &Ctx, api_key: &str) -> String {
    connection_header(&account_fields(ctx, api_key))
}

/// The connection of [`account`] as JSON, for a POST body that carries it.
pub fn account_fields(ctx: &Ctx, api_key: &str) -> Value {
    let mut conn = ctx.connection().cloned().unwrap_or_else(|| json!({}));
    let mut at = &mut conn;
    while at.get("api_url").is_some() {
        let remote = &mut at["provider_options"]["remote"];
        if remote.is_null() {
            *remote = json!({ "provider": "local" });
        }
        at = remote;
    }
    at["api_key"] = json!(api_key);
    conn
}

/// A request with the engine token and the given connection header.
pub fn as_conn(ctx: &Ctx, conn: Option<&str>, method: Method, path: &str) -> RequestBuilder {
    let rb = ctx.request(method, path);
    match conn {
        Some(c) => rb.header(CONNECTION_HEADER, c),
        None => rb,
    }
}

/// A request with the engine token and the profile's connection.
pub fn req(ctx: &Ctx, method: Method, path: &str) -> RequestBuilder {
    as_conn(ctx, own(ctx).as_deref(), method, path)
}

pub async fn get(ctx: &Ctx, path: &str) -> anyhow::Result<Resp> {
    ctx.send(req(ctx, Method::GET, path)).await
}

pub async fn post(ctx: &Ctx, path: &str, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(req(ctx, Method::POST, path).json(body)).await
}

pub async fn delete(ctx: &Ctx, path: &str) -> anyhow::Result<Resp> {
    ctx.send(req(ctx, Method::DELETE, path)).await
}

/// `/v1/sandboxes/{id}{rest}`.
pub fn sb(id: &str, rest: &str) -> String {
    format!("/v1/sandboxes/{id}{rest}")
}

/// Percent-encodes a query value.
pub fn q(value: &str) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Creates a sandbox as `conn` (201 expected) and remembers it for the runner's
/// cleanup; answers the record.
pub async fn create_as(ctx: &Ctx, conn: Option<&str>, body: &Value) -> anyhow::Result<Value> {
    let resp = ctx
        .send(as_conn(ctx, conn, Method::POST, "/v1/sandboxes").json(body))
        .await?;
    resp.expect_status(201)?;
    let record = resp.json()?;
    let id = record["sandbox_id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| anyhow!("the create answer has no `sandbox_id`: {record}"))?;
    ctx.track_sandbox(conn.map(str::to_owned), id);
    Ok(record)
}

/// Creates a sandbox as the profile's connection; answers the record.
pub async fn create(ctx: &Ctx, body: &Value) -> anyhow::Result<Value> {
    create_as(ctx, own(ctx).as_deref(), body).await
}

/// A fresh sandbox (lifetime 300 s) of the profile's connection: its id.
pub async fn sandbox(ctx: &Ctx) -> anyhow::Result<String> {
    let record = create(ctx, &json!({ "timeout": 300 })).await?;
    Ok(record["sandbox_id"].as_str().unwrap_or_default().to_owned())
}

/// Kills a sandbox (its answer is not checked: cleanup).
pub async fn kill(ctx: &Ctx, id: &str) {
    let _ = delete(ctx, &sb(id, "")).await;
}

/// `commands/run` with `body`, which must answer 200; answers the body.
pub async fn run(ctx: &Ctx, id: &str, body: &Value) -> anyhow::Result<Value> {
    let resp = post(ctx, &sb(id, "/commands/run"), body).await?;
    resp.expect_status(200)?;
    resp.json()
}

/// Runs a shell line to completion; it must exit 0. Answers its stdout.
pub async fn sh(ctx: &Ctx, id: &str, line: &str) -> anyhow::Result<String> {
    let out = run(ctx, id, &json!({ "cmd": line })).await?;
    ensure!(out["exit_code"] == 0, "`{line}` failed: {out}");
    Ok(out["stdout"].as_str().unwrap_or_default().to_owned())
}

/// Opens `commands/stream` and reads every event to the end (at most `within`).
pub async fn stream_all(
    ctx: &Ctx,
    id: &str,
    body: &Value,
    within: Duration,
) -> anyhow::Result<Vec<SseFrame>> {
    let rb = req(ctx, Method::POST, &sb(id, "/commands/stream")).json(body);
    let mut stream = ctx.sse(rb).await?;
    let mut frames = Vec::new();
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.next_event()).await {
            Ok(Ok(Some(frame))) => frames.push(frame),
            Ok(Ok(None)) => return Ok(frames),
            Ok(Err(e)) => return Err(e),
            Err(_) => bail!("the stream did not end within {within:?}: {frames:?}"),
        }
    }
}

/// The event names of `frames`, in order.
pub fn names(frames: &[SseFrame]) -> Vec<String> {
    frames
        .iter()
        .map(|f| f.event.clone().unwrap_or_else(|| "message".into()))
        .collect()
}

/// The bytes of the `stdout` (or `stderr`) events, in order (`data` or `data_b64`).
pub fn stream_bytes(frames: &[SseFrame], event: &str) -> anyhow::Result<Vec<u8>> {
    use base64::Engine as _;
    let mut out = Vec::new();
    for frame in frames.iter().filter(|f| f.event.as_deref() == Some(event)) {
        let data = frame.json()?;
        match (data.get("data"), data.get("data_b64")) {
            (_, Some(Value::String(b64))) => out.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .context("data_b64 is base64")?,
            ),
            (Some(Value::String(text)), None) => out.extend_from_slice(text.as_bytes()),
            _ => bail!("a `{event}` event carries `data` or `data_b64`: {data}"),
        }
    }
    Ok(out)
}

/// Checks an engine error answer: the status, a JSON body that is exactly
/// `{error: {type, code, message, suggestion, docs_url}}` (strings), the code,
/// the `type` of its table row and the row's anchor in `docs_url`. Answers the body.
pub fn expect_error(resp: &Resp, status: u16, code: &str) -> anyhow::Result<Value> {
    resp.expect_status(status)?;
    let ct = resp.header("content-type").unwrap_or_default();
    ensure!(
        ct.starts_with("application/json"),
        "an engine error is application/json, got {ct:?}\n{}",
        resp.describe()
    );
    let body = resp.json()?;
    check_error_body(&body, code).map_err(|e| anyhow!("{e}\n{}", resp.describe()))?;
    let (_, row_status, _) = row(code)?;
    ensure!(
        row_status == status,
        "the table answers {code} with {row_status}, the case expected {status}"
    );
    Ok(body)
}

/// The shape of an engine error body (an answer's, or an `error` event's data).
pub fn check_error_body(body: &Value, code: &str) -> anyhow::Result<()> {
    let obj = body
        .as_object()
        .ok_or_else(|| anyhow!("the error body is not an object: {body}"))?;
    ensure!(obj.len() == 1, "the error body holds `error` alone: {body}");
    let err = obj
        .get("error")
        .and_then(Value::as_object)
        .ok_or_else(|| anyhow!("the error body has an `error` object: {body}"))?;
    let mut keys: Vec<&str> = err.keys().map(String::as_str).collect();
    keys.sort_unstable();
    ensure!(
        keys == ["code", "docs_url", "message", "suggestion", "type"],
        "`error` is {{type, code, message, suggestion, docs_url}}, got {keys:?}"
    );
    for key in keys {
        ensure!(
            err[key].as_str().is_some_and(|s| !s.is_empty()),
            "`error.{key}` is a non-empty string: {body}"
        );
    }
    let got = err["code"].as_str().unwrap_or_default();
    ensure!(
        got == code,
        "expected error code {code:?}, got {got:?}: {body}"
    );
    let (_, _, class) = row(code)?;
    ensure!(
        err["type"] == class,
        "`type` of {code} is the class {class:?}: {body}"
    );
    let anchor = format!("#{}", code.to_ascii_lowercase());
    ensure!(
        err["docs_url"]
            .as_str()
            .is_some_and(|u| u.ends_with(&anchor)),
        "`docs_url` links the row ({anchor}): {body}"
    );
    Ok(())
}

fn row(code: &str) -> anyhow::Result<(&'static str, u16, &'static str)> {
    TABLE
        .iter()
        .copied()
        .find(|(c, _, _)| *c == code)
        .ok_or_else(|| anyhow!("{code} is not a row of the engine table"))
}

/// The features the profile's provider declares (`GET /v1/providers`).
pub async fn declared(ctx: &Ctx) -> anyhow::Result<Vec<String>> {
    let body = ctx
        .send(ctx.request(Method::GET, "/v1/providers"))
        .await?
        .json()?;
    let provider = ctx.provider().unwrap_or("local");
    let record = body["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["id"] == provider)
        .ok_or_else(|| anyhow!("no provider {provider}: {body}"))?;
    Ok(record["features"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect())
}

/// Checks the sandbox record's fields and their types.
pub fn check_record(r: &Value) -> anyhow::Result<()> {
    for key in [
        "sandbox_id",
        "provider",
        "template",
        "status",
        "created_at",
        "expires_at",
        "metadata",
        "envs_keys",
        "cpu",
        "memory",
        "disk",
        "secure",
        "limits_enforced",
    ] {
        ensure!(r.get(key).is_some(), "the sandbox record has `{key}`: {r}");
    }
    ensure!(
        [
            "creating", "running", "paused", "stopping", "stopped", "error"
        ]
        .contains(&r["status"].as_str().unwrap_or_default()),
        "`status` is a known value: {r}"
    );
    ensure!(
        r["metadata"].is_object() && r["envs_keys"].is_array() && r["secure"].is_boolean(),
        "{r}"
    );
    ensure!(
        r["limits_enforced"]
            .as_object()
            .is_some_and(|m| m.contains_key("timeout") && m.values().all(Value::is_boolean)),
        "`limits_enforced` says for `timeout` (and every other limit) whether it holds: {r}"
    );
    for key in ["created_at", "expires_at"] {
        ensure!(
            r[key].as_str().is_some_and(is_utc),
            "`{key}` is RFC 3339 UTC: {r}"
        );
    }
    Ok(())
}

/// `YYYY-MM-DDTHH:MM:SS[.frac]Z`.
pub fn is_utc(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && s.ends_with('Z')
}

/// Seconds since the epoch of an RFC 3339 UTC time (to the second).
pub fn epoch(s: &str) -> anyhow::Result<i64> {
    ensure!(is_utc(s), "not RFC 3339 UTC: {s}");
    let n = |from: usize, len: usize| -> anyhow::Result<i64> {
        s.get(from..from + len)
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| anyhow!("not RFC 3339: {s}"))
    };
    let (y, m, d) = (n(0, 4)?, n(5, 2)?, n(8, 2)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(days * 86_400 + n(11, 2)? * 3600 + n(14, 2)? * 60 + n(17, 2)?)
}

/// Now, in seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Checks entry info: `{name, path, type, size, mode, modified_at}` at least.
pub fn check_entry(e: &Value) -> anyhow::Result<()> {
    for key in ["name", "path", "type", "size", "mode", "modified_at"] {
        ensure!(e.get(key).is_some(), "entry info has `{key}`: {e}");
    }
    ensure!(
        ["file", "dir", "symlink", "other"].contains(&e["type"].as_str().unwrap_or_default()),
        "`type` is file, dir, symlink or other: {e}"
    );
    ensure!(e["size"].is_u64(), "`size` is a byte count: {e}");
    ensure!(
        e["modified_at"].as_str().is_some_and(is_utc),
        "`modified_at` is RFC 3339 UTC: {e}"
    );
    Ok(())
}

/// Whether `pid` is a live process on this machine (the engine's: it listens on
/// loopback), a zombie not counting.
pub fn alive(pid: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .is_some_and(|s| s != 'Z' && s != 'X')
}

/// A folder of the engine's machine outside every sandbox, for escapes to aim at: under
/// `/var/tmp`, which no sandbox shows. Not under the temp dir or the runner's checkout: an
/// isolated sandbox has a `/tmp` (and a `/home/user`) of its own, so a host path there
/// names a place inside the sandbox (where it is missing) rather than one outside it.
pub fn outside_dir() -> anyhow::Result<tempfile::TempDir> {
    let base = std::path::Path::new("/var/tmp");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::current_dir().context("the runner's working directory")?
    };
    tempfile::Builder::new()
        .prefix(".svc-conformance-outside-")
        .tempdir_in(base)
        .context("a folder outside the sandboxes")
}

/// A process left in a sandbox: the pid the API and the sandbox give it, and a word of
/// its command line unique to this run, by which the runner finds it on the engine's
/// machine (profile `LOCAL`) whatever the sandbox numbers it (an isolated sandbox has a
/// pid namespace of its own, so its pids are not the host's).
#[derive(Debug, Clone)]
pub struct Left {
    pub pid: u64,
    pub word: String,
}

impl Left {
    /// Whether it runs on the machine (a zombie not counting).
    pub fn alive(&self) -> bool {
        !host_pids(&self.word).is_empty()
    }

    /// Waits until nothing with its word runs on the machine (at most `within`).
    pub async fn gone(&self, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let left = host_pids(&self.word);
            if left.is_empty() {
                return Ok(());
            }
            ensure!(
                Instant::now() < deadline,
                "{left:?} (`{}`, pid {} in the sandbox) still alive after {within:?}",
                self.word,
                self.pid
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A `sleep` argument of about 300 s no other process of the machine has, so a `sleep`
/// started with it is found by [`host_pids`].
pub fn sleep_word() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    // The fraction makes it unique: this run's count, this runner's pid, the time.
    format!(
        "300.{}{:07}{nanos:09}",
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::process::id()
    )
}

/// The live processes of this machine with `word` in their command line (as an argument
/// or in a script's text).
pub fn host_pids(word: &str) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.windows(word.len()).any(|w| w == word.as_bytes()))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// Leaves `n` sleeps in the background of the sandbox with one command: each with its pid
/// (from `echo $!`) and its word.
pub async fn leave_sleeps(ctx: &Ctx, id: &str, n: usize) -> anyhow::Result<Vec<Left>> {
    let words: Vec<String> = (0..n).map(|_| sleep_word()).collect();
    let line: String = words
        .iter()
        .map(|w| format!("sleep {w} >/dev/null 2>&1 & echo $!; "))
        .collect();
    let out = sh(ctx, id, &line).await?;
    let pids: Vec<u64> = out.lines().filter_map(|l| l.trim().parse().ok()).collect();
    ensure!(pids.len() == n, "{n} pids from {out:?}");
    Ok(pids
        .into_iter()
        .zip(words)
        .map(|(pid, word)| Left { pid, word })
        .collect())
}

/// Polls `probe` until it answers `Some` (at most `within`).
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut probe: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe().await? {
            return Ok(v);
        }
        ensure!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The processes of a sandbox (`GET .../processes`, which must answer 200).
pub async fn processes(ctx: &Ctx, id: &str) -> anyhow::Result<Vec<Value>> {
    let resp = get(ctx, &sb(id, "/processes")).await?;
    resp.expect_status(200)?;
    let body = resp.json()?;
    body["processes"]
        .as_array()
        .cloned()
        .ok_or_else(|| anyhow!("`processes` is a list: {body}"))
}

/// A snapshot with the values that vary by run checked, then replaced: the
/// sandbox and context ids (also inside strings, with the state folder), pids,
/// counts, versions, tokens, ports and file times; the size of a directory (the
/// file system's). Times and durations are redacted by the snapshot itself.
pub fn snapshot(ctx: &Ctx, name: &str, value: &Value) -> anyhow::Result<()> {
    let mut ids = needles(ctx);
    collect_ids(value, &mut ids);
    let redacted = walk(value, &ids)?;
    ctx.snapshot(name, &redacted)
}

/// What stands for a run's own values inside strings: every sandbox the cases
/// made, and the state folder (messages name paths anywhere, not only first).
fn needles(ctx: &Ctx) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = ctx
        .tracked_sandboxes()
        .into_iter()
        .map(|(_, id)| (id, "[sandbox_id]"))
        .collect();
    if let Some(dir) = ctx.dir() {
        if let Ok(canonical) = dir.canonicalize() {
            out.push((canonical.to_string_lossy().into_owned(), "[dir]"));
        }
        out.push((dir.to_string_lossy().into_owned(), "[dir]"));
    }
    // Longest first, so a path is replaced before a part of it.
    out.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
    out.retain(|(n, _)| !n.is_empty());
    out
}

fn collect_ids(v: &Value, out: &mut Vec<(String, &'static str)>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let placeholder = match k.as_str() {
                    "sandbox_id" => Some("[sandbox_id]"),
                    "context_id" => Some("[context_id]"),
                    _ => None,
                };
                if let (Some(p), Some(s)) = (placeholder, v.as_str())
                    && !s.is_empty()
                {
                    out.push((s.to_owned(), p));
                }
                collect_ids(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_ids(i, out)),
        _ => {}
    }
}

fn walk(v: &Value, ids: &[(String, &'static str)]) -> anyhow::Result<Value> {
    Ok(match v {
        Value::Object(map) => {
            let is_dir = map.get("type").and_then(Value::as_str) == Some("dir");
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let at = |what: &str| anyhow!("`{k}` is {what}: {v}");
                let replaced = match k.as_str() {
                    "sandbox_id" | "context_id" => {
                        v.as_str()
                            .filter(|s| !s.is_empty())
                            .ok_or_else(|| at("a non-empty id"))?;
                        Value::from(format!("[{k}]"))
                    }
                    "pid" | "pgid" => {
                        v.as_u64()
                            .filter(|p| *p > 0)
                            .ok_or_else(|| at("a positive pid"))?;
                        Value::from("[pid]")
                    }
                    "uptime_s" | "sessions" | "port" | "e2b_port" => {
                        v.as_u64().ok_or_else(|| at("a non-negative integer"))?;
                        Value::from(format!("[{k}]"))
                    }
                    "version" => {
                        v.as_str()
                            .filter(|s| !s.is_empty())
                            .ok_or_else(|| at("a version"))?;
                        Value::from("[version]")
                    }
                    "token" | "e2b_api_key" => {
                        v.as_str()
                            .filter(|s| s.len() >= 16)
                            .ok_or_else(|| at("a token"))?;
                        Value::from(format!("[{k}]"))
                    }
                    "modified_at" => {
                        v.as_str()
                            .filter(|s| is_utc(s))
                            .ok_or_else(|| at("RFC 3339 UTC"))?;
                        Value::from("[timestamp]")
                    }
                    "size" if is_dir => {
                        v.as_u64().ok_or_else(|| at("a byte count"))?;
                        Value::from("[size]")
                    }
                    _ => walk(v, ids)?,
                };
                out.insert(k.clone(), replaced);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| walk(i, ids))
                .collect::<anyhow::Result<_>>()?,
        ),
        Value::String(s) => {
            let mut s = s.clone();
            for (id, placeholder) in ids {
                s = s.replace(id.as_str(), placeholder);
            }
            Value::String(s)
        }
        other => other.clone(),
    })
}

/// An error body for a snapshot, with the run's own values (see [`snapshot`])
/// and `extra` (pids in its message) replaced.
pub fn error_snapshot(
    ctx: &Ctx,
    name: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> anyhow::Result<()> {
    let mut text = body.to_string();
    for (needle, placeholder) in needles(ctx) {
        text = text.replace(&needle, placeholder);
    }
    for (needle, placeholder) in extra {
        text = text.replace(needle, placeholder);
    }
    ctx.snapshot(name, &serde_json::from_str(&text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_seconds() {
        assert_eq!(epoch("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(epoch("2000-03-01T00:00:01Z").unwrap(), 951_868_801);
        assert_eq!(epoch("2024-02-29T12:00:00.5Z").unwrap(), 1_709_208_000);
        assert!(epoch("2024-02-29 12:00:00").is_err());
    }

    #[test]
    fn error_bodies_are_checked_against_the_table() {
        let good = json!({"error": {"type": "SandboxNotFoundError", "code": "E2009", "message": "no sandbox", "suggestion": "list them", "docs_url": "docs/errors.md#e2009"}});
        assert!(check_error_body(&good, "E2009").is_ok());
        assert!(check_error_body(&good, "E2004").is_err());
        let mut wrong_type = good.clone();
        wrong_type["error"]["type"] = json!("NotFoundError");
        assert!(check_error_body(&wrong_type, "E2009").is_err());
        let mut extra = good.clone();
        extra["error"]["param"] = json!(null);
        assert!(check_error_body(&extra, "E2009").is_err());
        let mut beside = good;
        beside["x"] = json!(1);
        assert!(check_error_body(&beside, "E2009").is_err());
    }

    #[test]
    fn snapshots_replace_ids_everywhere() {
        let v = json!({"sandbox_id": "sb_1x", "cwd": "/s/sb_1x/w", "pid": 7, "entries": [{"type": "dir", "size": 4096}]});
        let ids = {
            let mut ids = Vec::new();
            collect_ids(&v, &mut ids);
            ids
        };
        assert_eq!(
            walk(&v, &ids).unwrap(),
            json!({"sandbox_id": "[sandbox_id]", "cwd": "/s/[sandbox_id]/w", "pid": "[pid]", "entries": [{"type": "dir", "size": "[size]"}]})
        );
        assert!(walk(&json!({"pid": 0}), &[]).is_err());
    }
}
