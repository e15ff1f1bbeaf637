//! The E2B control plane (`E2B_API_URL`): sandboxes created, listed, read, killed, timed,
//! paused and resumed through the engine's provider layer, answered in the shapes of
//! E2B's OpenAPI (`docs/e2b.md`). What only E2B's cloud does (templates, volumes,
//! snapshots, network rules...) answers 501 with a message that says so.

use super::super::provider::Sandbox;
use super::super::routes::RouteId;
use super::errors::ApiError;
use super::routes::{At, Door, Op};
use super::{ENVD_VERSION, Front};
use crate::wire::{
    CreateSandbox, Isolation, LIST_LIMIT_MAX, ListSandboxes, SandboxRecord, SandboxStatus,
};
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, delete, get, post};
use http::{HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

type Answer = Result<Response, ApiError>;

/// The template names E2B documents for its base image: each is this engine's `base`.
const TEMPLATES: &[&str] = &[
    "base",
    "code-interpreter-v1",
    "code-interpreter-beta",
    "code-interpreter",
];

pub const OPS: &[Op] = &[
    Op {
        id: "e2b_sandboxes_create",
        door: Door::Control,
        method: "POST",
        at: At::Path("/sandboxes"),
        summary: "create a sandbox (`templateID`, `timeout`, `metadata`, `envVars`...): 201 `Sandbox`",
        bind: || post(create),
    },
    Op {
        id: "e2b_sandboxes_list",
        door: Door::Control,
        method: "GET",
        at: At::Path("/sandboxes"),
        summary: "the running sandboxes, `metadata` filter",
        bind: || get(list_v1),
    },
    Op {
        id: "e2b_sandboxes_create_v2",
        door: Door::Control,
        method: "POST",
        at: At::Path("/v2/sandboxes"),
        summary: "create a sandbox, as `POST /sandboxes`",
        bind: || post(create),
    },
    Op {
        id: "e2b_sandboxes_list_v2",
        door: Door::Control,
        method: "GET",
        at: At::Path("/v2/sandboxes"),
        summary: "sandboxes by `state` and `metadata`, `limit` and `nextToken` paging (`x-next-token`)",
        bind: || get(list_v2),
    },
    Op {
        id: "e2b_sandboxes_info",
        door: Door::Control,
        method: "GET",
        at: At::Path("/sandboxes/{id}"),
        summary: "`SandboxDetail`: state, template, times, envd version, metadata",
        bind: || get(detail),
    },
    Op {
        id: "e2b_sandboxes_kill",
        door: Door::Control,
        method: "DELETE",
        at: At::Path("/sandboxes/{id}"),
        summary: "kill it: 204, 404 when unknown",
        bind: || delete(kill),
    },
    Op {
        id: "e2b_sandboxes_timeout",
        door: Door::Control,
        method: "POST",
        at: At::Path("/sandboxes/{id}/timeout"),
        summary: "a new lifetime from now (`timeout` seconds)",
        bind: || post(timeout),
    },
    Op {
        id: "e2b_sandboxes_pause",
        door: Door::Control,
        method: "POST",
        at: At::Path("/sandboxes/{id}/pause"),
        summary: "pause every process: 204, 409 when already paused",
        bind: || post(pause),
    },
    Op {
        id: "e2b_sandboxes_resume",
        door: Door::Control,
        method: "POST",
        at: At::Path("/sandboxes/{id}/resume"),
        summary: "resume a paused sandbox",
        bind: || post(resume),
    },
    Op {
        id: "e2b_sandboxes_connect",
        door: Door::Control,
        method: "POST",
        at: At::Path("/sandboxes/{id}/connect"),
        summary: "connect (resuming it when paused), with a new `timeout`",
        bind: || post(connect),
    },
    Op {
        id: "e2b_sandboxes_connect_v2",
        door: Door::Control,
        method: "POST",
        at: At::Path("/v2/sandboxes/{id}/connect"),
        summary: "connect, as `POST /sandboxes/{id}/connect`",
        bind: || post(connect),
    },
    Op {
        id: "e2b_sandboxes_metrics",
        door: Door::Control,
        method: "GET",
        at: At::Path("/sandboxes/{id}/metrics"),
        summary: "one reading: CPU, memory, disk of the sandbox",
        bind: || get(metrics),
    },
    Op {
        id: "e2b_not_available",
        door: Door::Control,
        method: "any",
        at: At::Else,
        summary: "what only E2B's cloud serves (templates, volumes, snapshots...): 501 `... not available in a local engine`",
        bind: || any(not_available),
    },
];

/// Whatever the control plane of E2B's cloud serves and a local engine cannot.
async fn not_available(request: Request) -> ApiError {
    ApiError::not_available(&format!("`{} {}`", request.method(), request.uri().path()))
}

/// A JSON body as E2B sends it: unknown fields ignored (the SDKs add fields over time).
fn body<T: for<'de> Deserialize<'de> + Default>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::new(400, format!("a bad body: {e}")))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct NewSandbox {
    #[serde(rename = "templateID")]
    template_id: Option<String>,
    timeout: Option<u64>,
    metadata: Option<BTreeMap<String, String>>,
    env_vars: Option<BTreeMap<String, String>>,
    secure: Option<bool>,
    #[serde(rename = "allow_internet_access")]
    allow_internet_access: Option<bool>,
    mcp: Option<Value>,
    volume_mounts: Option<Vec<Value>>,
    network: Option<Value>,
}

async fn create(State(front): State<Arc<Front>>, bytes: Bytes) -> Answer {
    let asked: NewSandbox = body(&bytes)?;
    let template = asked.template_id.as_deref().unwrap_or("base");
    if !TEMPLATES.contains(&template) {
        return Err(ApiError::new(
            404,
            format!(
                "template '{template}' not found: a local engine has `base` (also named {})",
                TEMPLATES[1..].join(", ")
            ),
        ));
    }
    if asked.mcp.as_ref().is_some_and(|m| !m.is_null()) {
        return Err(ApiError::not_available("the MCP gateway"));
    }
    if asked.volume_mounts.as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(ApiError::not_available("mounting volumes"));
    }
    if asked
        .network
        .as_ref()
        .is_some_and(|n| n.as_object().is_some_and(|o| !o.is_empty()))
    {
        return Err(ApiError::not_available("network rules"));
    }
    // E2B's programs expect `/home/user` and the user `user`: a machine of namespaces,
    // wherever this one can make it.
    let isolation = match crate::services::namespaces::support().await {
        crate::services::namespaces::Support::Available(_) => Some(Isolation::Namespaces),
        crate::services::namespaces::Support::Unavailable(_) => None,
    };
    let mut create = CreateSandbox {
        // `check_create` fills in the default and checks the bounds, as on `/v1`.
        timeout: asked.timeout,
        envs: asked.env_vars,
        metadata: asked.metadata,
        secure: asked.secure,
        allow_internet_access: asked.allow_internet_access,
        isolation,
        ..CreateSandbox::default()
    };
    // What `/v1` refuses, this door refuses too, in the same words.
    super::super::handlers::check_create(&mut create)?;
    let (conn, provider) = front.provider(RouteId::SandboxesCreate)?;
    let record = provider.create(&conn, create).await?;
    tracing::info!(sandbox = %record.sandbox_id, "an E2B client created a sandbox");
    Ok((StatusCode::CREATED, axum::Json(sandbox(&front, &record))).into_response())
}

/// E2B's `Sandbox`: what a create or a connect answers.
fn sandbox(front: &Front, record: &SandboxRecord) -> Value {
    json!({
        "sandboxID": record.sandbox_id,
        "templateID": record.template,
        "clientID": "local",
        "envdVersion": ENVD_VERSION,
        "envdAccessToken": front.access_token(&record.sandbox_id),
        "domain": null,
    })
}

/// E2B's `ListedSandbox` (and, with the token, `SandboxDetail`); `machine` gives the
/// figures of a sandbox without limits of its own.
fn listed(record: &SandboxRecord, machine: &Machine) -> Value {
    json!({
        "sandboxID": record.sandbox_id,
        "templateID": record.template,
        "clientID": "local",
        "startedAt": record.created_at,
        "endAt": record.expires_at,
        "cpuCount": record.cpu.map_or(machine.cpu_count, u64::from),
        "memoryMB": record.memory.unwrap_or(machine.memory_bytes / (1024 * 1024)),
        "diskSizeMB": record.disk.unwrap_or(machine.disk.total_bytes / (1024 * 1024)),
        "state": state(record.status),
        "envdVersion": ENVD_VERSION,
        "metadata": record.metadata,
    })
}

fn state(status: SandboxStatus) -> &'static str {
    match status {
        SandboxStatus::Paused => "paused",
        _ => "running",
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ListQuery {
    state: Option<String>,
    metadata: Option<String>,
    limit: Option<u32>,
    next_token: Option<String>,
}

async fn list_v1(front: State<Arc<Front>>, query: RawQuery) -> Answer {
    let (records, _) = listing(&front, query, false).await?;
    Ok(axum::Json(records).into_response())
}

async fn list_v2(front: State<Arc<Front>>, query: RawQuery) -> Answer {
    let (records, next) = listing(&front, query, true).await?;
    let mut response = axum::Json(records).into_response();
    if let Some(next) = next
        && let Ok(value) = HeaderValue::from_str(&next.to_string())
    {
        response.headers_mut().insert("x-next-token", value);
    }
    Ok(response)
}

/// The sandboxes of the query, newest first, and the next page's token (an offset).
async fn listing(
    front: &Front,
    RawQuery(raw): RawQuery,
    paged: bool,
) -> Result<(Vec<Value>, Option<usize>), ApiError> {
    let query: ListQuery = serde_urlencoded::from_str(raw.as_deref().unwrap_or(""))
        .map_err(|e| ApiError::new(400, format!("a bad query: {e}")))?;
    let states: Vec<String> = match &query.state {
        Some(s) => s.split(',').map(|s| s.trim().to_owned()).collect(),
        // v1 lists the running ones, v2 both.
        None if paged => vec!["running".into(), "paused".into()],
        None => vec!["running".into()],
    };
    if let Some(bad) = states.iter().find(|s| *s != "running" && *s != "paused") {
        return Err(ApiError::new(
            400,
            format!("`state` `{bad}` is not running or paused"),
        ));
    }
    // `metadata` is itself a query string: `k=v&k2=v2`.
    let wanted: Vec<(String, String)> = query
        .metadata
        .as_deref()
        .map(|m| form_urlencoded::parse(m.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let limit = query.limit.unwrap_or(100) as usize;
    if paged && !(1..=LIST_LIMIT_MAX as usize).contains(&limit) {
        return Err(ApiError::new(
            400,
            format!("`limit` must be 1 to {LIST_LIMIT_MAX}"),
        ));
    }
    let offset: usize = match &query.next_token {
        Some(token) => token
            .parse()
            .map_err(|_| ApiError::new(400, format!("`nextToken` `{token}` is not one of ours")))?,
        None => 0,
    };
    let (conn, provider) = front.provider(RouteId::SandboxesList)?;
    let mut all = Vec::new();
    loop {
        let page = provider
            .list(
                &conn,
                &ListSandboxes {
                    status: None,
                    limit: Some(LIST_LIMIT_MAX),
                    offset: Some(all.len() as u32),
                },
            )
            .await?;
        let full = page.len() as u32 == LIST_LIMIT_MAX;
        all.extend(page);
        if !full {
            break;
        }
    }
    // The machine is read once for the whole listing, not once per sandbox.
    let machine = machine();
    let matching: Vec<Value> = all
        .iter()
        .filter(|r| matches!(r.status, SandboxStatus::Running | SandboxStatus::Paused))
        .filter(|r| states.iter().any(|s| s == state(r.status)))
        .filter(|r| wanted.iter().all(|(k, v)| r.metadata.get(k) == Some(v)))
        .map(|r| listed(r, &machine))
        .collect();
    if !paged {
        return Ok((matching, None));
    }
    let page: Vec<Value> = matching.iter().skip(offset).take(limit).cloned().collect();
    let next = (offset + limit < matching.len()).then_some(offset + limit);
    Ok((page, next))
}

/// The handle and record of a sandbox (one `info`), a 404 in E2B's words when there is
/// none.
async fn record(front: &Front, id: &str) -> Result<(Arc<dyn Sandbox>, SandboxRecord), ApiError> {
    front
        .with_record(id, RouteId::SandboxesInfo)
        .await
        .map_err(|e| ApiError::control(id, e))
}

async fn detail(State(front): State<Arc<Front>>, Path(id): Path<String>) -> Answer {
    let (_, record) = record(&front, &id).await?;
    let mut value = listed(&record, &machine());
    value["envdAccessToken"] = json!(front.access_token(&id));
    value["domain"] = Value::Null;
    if let Some(allowed) = record.allow_internet_access {
        value["allowInternetAccess"] = json!(allowed);
    }
    Ok(axum::Json(value).into_response())
}

async fn kill(State(front): State<Arc<Front>>, Path(id): Path<String>) -> Answer {
    let (handle, _) = record(&front, &id).await?;
    handle.kill().await.map_err(|e| ApiError::control(&id, e))?;
    front.engine.sessions.forget(&Front::conn(), &id);
    front.forget_sandbox(&id);
    tracing::info!(sandbox = %id, "an E2B client killed the sandbox");
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Timeout {
    timeout: Option<u64>,
}

async fn timeout(State(front): State<Arc<Front>>, Path(id): Path<String>, bytes: Bytes) -> Answer {
    let Timeout { timeout } = body(&bytes)?;
    let seconds = timeout.ok_or_else(|| ApiError::new(400, "`timeout` is required"))?;
    let seconds = super::super::provider::check_timeout(seconds)?;
    let (handle, _) = record(&front, &id).await?;
    handle
        .set_timeout(seconds)
        .await
        .map_err(|e| ApiError::control(&id, e))?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn pause(State(front): State<Arc<Front>>, Path(id): Path<String>) -> Answer {
    let (handle, record) = record(&front, &id).await?;
    if record.status == SandboxStatus::Paused {
        return Err(ApiError::new(
            409,
            format!("sandbox \"{id}\" is already paused"),
        ));
    }
    handle
        .pause()
        .await
        .map_err(|e| ApiError::control(&id, e))?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /sandboxes/{id}/resume` (v1): 409 when it runs.
async fn resume(front: State<Arc<Front>>, Path(id): Path<String>, bytes: Bytes) -> Answer {
    let Timeout { timeout } = body(&bytes)?;
    let (handle, record) = record(&front, &id).await?;
    if record.status != SandboxStatus::Paused {
        return Err(ApiError::new(
            409,
            format!("sandbox \"{id}\" is already running"),
        ));
    }
    attach(&front, &id, handle, record, timeout).await
}

/// `connect`: a paused sandbox is resumed (201), a running one answered as it is (200);
/// `timeout` becomes its remaining lifetime.
async fn connect(State(front): State<Arc<Front>>, Path(id): Path<String>, bytes: Bytes) -> Answer {
    let Timeout { timeout } = body(&bytes)?;
    let (handle, record) = record(&front, &id).await?;
    attach(&front, &id, handle, record, timeout).await
}

/// Resumes the sandbox when it is paused and sets its timeout when one is asked; the
/// record is read again only when either changed it.
async fn attach(
    front: &Front,
    id: &str,
    handle: Arc<dyn Sandbox>,
    mut record: SandboxRecord,
    timeout: Option<u64>,
) -> Answer {
    let failed = |e| ApiError::control(id, e);
    // A bad timeout is refused before the sandbox is resumed.
    let timeout = timeout
        .map(super::super::provider::check_timeout)
        .transpose()?;
    let resumed = record.status == SandboxStatus::Paused;
    if resumed {
        record = handle.resume().await.map_err(failed)?;
    }
    if let Some(seconds) = timeout {
        record = handle.set_timeout(seconds).await.map_err(failed)?;
    }
    let status = if resumed {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(sandbox(front, &record))).into_response())
}

/// Figures of the machine a sandbox without limits of its own shares.
struct Machine {
    cpu_count: u64,
    memory_bytes: u64,
    disk: crate::services::system::Disk,
}

fn machine() -> Machine {
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| crate::services::system::meminfo(&text).ok());
    Machine {
        cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
        memory_bytes: memory.map_or(0, |m| m.total_bytes),
        disk: crate::services::system::disk(std::path::Path::new("/")).unwrap_or(
            crate::services::system::Disk {
                total_bytes: 0,
                used_bytes: 0,
                free_bytes: 0,
            },
        ),
    }
}

/// How long a metrics reading samples the sandbox's CPU time.
const CPU_SAMPLE: std::time::Duration = std::time::Duration::from_millis(100);

/// One reading of the sandbox's processes from `/proc`: their CPU over a short sample,
/// their resident memory; the disk is the machine's (a local sandbox's files are on it).
async fn metrics(State(front): State<Arc<Front>>, Path(id): Path<String>) -> Answer {
    let (handle, record) = record(&front, &id).await?;
    // The host's pids where the provider knows them (an isolated sandbox's API pids are
    // its own numbering), else the API's.
    let pids: Vec<u32> = match handle.host_pids().await {
        Ok(Some(pids)) => pids,
        _ => handle
            .processes()
            .await
            .unwrap_or_default()
            .iter()
            .map(|p| p.pid)
            .collect(),
    };
    let before = crate::services::system::usage(&pids);
    tokio::time::sleep(CPU_SAMPLE).await;
    let after = crate::services::system::usage(&pids);
    let machine = machine();
    let cpu_count = record.cpu.map_or(machine.cpu_count, u64::from);
    let ticks = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64;
    let available = crate::services::system::USER_HZ as f64 * CPU_SAMPLE.as_secs_f64();
    let cpu_used_pct = (ticks / available / cpu_count.max(1) as f64 * 100.0).min(100.0);
    let now = std::time::SystemTime::now();
    let unix = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Ok(axum::Json(json!([{
        "timestamp": crate::services::files::rfc3339(now),
        "timestampUnix": unix,
        "cpuCount": cpu_count,
        "cpuUsedPct": (cpu_used_pct * 100.0).round() / 100.0,
        "memUsed": after.rss_bytes,
        "memTotal": record.memory.map_or(machine.memory_bytes, |mb| mb * 1024 * 1024),
        "memCache": 0,
        "diskUsed": machine.disk.used_bytes,
        "diskTotal": machine.disk.total_bytes,
    }]))
    .into_response())
}
