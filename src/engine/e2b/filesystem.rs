//! envd's `filesystem.Filesystem` over the engine's file calls: stat, make, move, list,
//! remove, and watching a directory either as a stream (`WatchDir`) or by polling a
//! watcher the front keeps (`CreateWatcher`, `GetWatcherEvents`, `RemoveWatcher`).

use super::super::provider::{Event, EventStream};
use super::super::routes::RouteId;
use super::connect::{self, Messages};
use super::errors::{ConnectCode, RpcError};
use super::messages::{ListDirRequest, MoveRequest, PathRequest, WatchRequest, WatcherRequest};
use super::routes::{At, Door, Op};
use super::{Front, sandbox_id};
use crate::error::engine::EngineError;
use crate::wire::{EntryInfo, LIST_DEPTH_MAX, MkdirBody, MoveBody};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use http::HeaderMap;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Events a polling watcher keeps between two reads. A watcher that falls further behind
/// ends with an error after the events it kept: none is dropped without a word.
const WATCHER_EVENTS: usize = 10_000;

pub const OPS: &[Op] = &[
    Op {
        id: "e2b_fs_stat",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/Stat"),
        summary: "an entry's `EntryInfo`",
        bind: || connect::call(post(stat)),
    },
    Op {
        id: "e2b_fs_make_dir",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/MakeDir"),
        summary: "make a directory and its parents",
        bind: || connect::call(post(make_dir)),
    },
    Op {
        id: "e2b_fs_move",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/Move"),
        summary: "rename an entry",
        bind: || connect::call(post(move_entry)),
    },
    Op {
        id: "e2b_fs_list_dir",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/ListDir"),
        summary: "a directory's entries to `depth`",
        bind: || connect::call(post(list_dir)),
    },
    Op {
        id: "e2b_fs_remove",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/Remove"),
        summary: "remove a file or a directory tree",
        bind: || connect::call(post(remove)),
    },
    Op {
        id: "e2b_fs_watch_dir",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/WatchDir"),
        summary: "a stream of a directory's changes",
        bind: || connect::call(post(watch_dir)),
    },
    Op {
        id: "e2b_fs_create_watcher",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/CreateWatcher"),
        summary: "a polling watcher of a directory",
        bind: || connect::call(post(create_watcher)),
    },
    Op {
        id: "e2b_fs_get_watcher_events",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/GetWatcherEvents"),
        summary: "the events a polling watcher kept since the last read",
        bind: || connect::call(post(watcher_events)),
    },
    Op {
        id: "e2b_fs_remove_watcher",
        door: Door::Envd,
        method: "POST",
        at: At::Path("/filesystem.Filesystem/RemoveWatcher"),
        summary: "end a polling watcher",
        bind: || connect::call(post(remove_watcher)),
    },
];

/// The engine's entry info as envd's `EntryInfo`.
pub fn entry(info: &EntryInfo) -> Value {
    let mode = u32::from_str_radix(info.mode.trim_start_matches("0o"), 8).unwrap_or(0) & 0o7777;
    let kind = match info.type_.as_str() {
        "dir" => "FILE_TYPE_DIRECTORY",
        "symlink" => "FILE_TYPE_SYMLINK",
        "file" => "FILE_TYPE_FILE",
        _ => "FILE_TYPE_UNSPECIFIED",
    };
    let mut value = json!({
        "name": info.name,
        "type": kind,
        "path": info.path,
        "size": connect::int64(i64::try_from(info.size).unwrap_or(i64::MAX)),
        "mode": mode,
        "permissions": permissions(&info.type_, mode),
        // envd always names them; a provider whose files have no owner leaves them empty.
        "owner": info.owner.as_deref().unwrap_or_default(),
        "group": info.group.as_deref().unwrap_or_default(),
        "modifiedTime": info.modified_at,
        "isSymlink": info.type_ == "symlink",
    });
    if let Some(target) = &info.symlink_target {
        value["symlinkTarget"] = json!(target);
    }
    if !info.metadata.is_empty() {
        value["metadata"] = json!(info.metadata);
    }
    value
}

/// `-rw-r--r--`, as Go's `FileMode.String` writes it (envd's `permissions`).
fn permissions(kind: &str, mode: u32) -> String {
    let mut out = String::from(match kind {
        "dir" => "d",
        "symlink" => "L",
        _ => "-",
    });
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        out.push(if bits & 4 != 0 { 'r' } else { '-' });
        out.push(if bits & 2 != 0 { 'w' } else { '-' });
        out.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    out
}

/// A filesystem call's failure: the engine's, answered as about the request's sandbox (one
/// gone meanwhile in the SDKs' words), or the front's own.
enum Failed {
    Engine(EngineError),
    Rpc(RpcError),
}

impl From<EngineError> for Failed {
    fn from(e: EngineError) -> Failed {
        Failed::Engine(e)
    }
}

impl From<RpcError> for Failed {
    fn from(e: RpcError) -> Failed {
        Failed::Rpc(e)
    }
}

/// Runs a unary filesystem call on the request's sandbox, recorded and policed as `/v1`'s
/// `route`.
async fn call<Req, F, Fut>(
    front: &Front,
    headers: &HeaderMap,
    body: &[u8],
    route: RouteId,
    op: F,
) -> Response
where
    Req: serde::de::DeserializeOwned,
    F: FnOnce(Req, Arc<dyn super::super::provider::Sandbox>) -> Fut,
    Fut: std::future::Future<Output = Result<Value, Failed>>,
{
    connect::unary(
        async {
            let request: Req = connect::unary_request(headers, body)?;
            let (id, sandbox) = front.envd_sandbox(headers, route, RpcError::envd).await?;
            op(request, sandbox).await.map_err(|failed| match failed {
                Failed::Engine(e) => RpcError::envd(&id, e),
                Failed::Rpc(e) => e,
            })
        }
        .await,
    )
}

fn required(path: String) -> Result<String, RpcError> {
    if path.is_empty() {
        Err(RpcError::invalid("`path` is required"))
    } else {
        Ok(path)
    }
}

async fn stat(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    call(
        &front,
        &headers,
        &body,
        RouteId::FilesInfo,
        |r: PathRequest, s| async move {
            let info = s.file_info(&required(r.path)?).await?;
            Ok(json!({"entry": entry(&info)}))
        },
    )
    .await
}

async fn make_dir(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    call(
        &front,
        &headers,
        &body,
        RouteId::FilesMkdir,
        |r: PathRequest, s| async move {
            let path = required(r.path)?;
            // envd's MakeDir makes the parents and says when the directory was already there
            // (the SDKs answer `false`); the engine's `parents` mkdir succeeds on it silently.
            if s.file_exists(&path).await? {
                return Err(RpcError::new(
                    ConnectCode::AlreadyExists,
                    format!("directory {path} already exists"),
                )
                .into());
            }
            let info = s
                .mkdir(MkdirBody {
                    path: path.clone(),
                    parents: Some(true),
                })
                .await
                .map_err(|e| match e.code {
                    crate::error::engine::Code::FileExists => Failed::Rpc(RpcError::new(
                        ConnectCode::AlreadyExists,
                        format!("directory {path} already exists"),
                    )),
                    _ => Failed::Engine(e),
                })?;
            Ok(json!({"entry": entry(&info)}))
        },
    )
    .await
}

async fn move_entry(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    call(
        &front,
        &headers,
        &body,
        RouteId::FilesMove,
        |r: MoveRequest, s| async move {
            let info = s
                .rename(MoveBody {
                    from: required(r.source)?,
                    to: required(r.destination)?,
                    overwrite: Some(true),
                })
                .await?;
            Ok(json!({"entry": entry(&info)}))
        },
    )
    .await
}

async fn list_dir(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    call(
        &front,
        &headers,
        &body,
        RouteId::FilesList,
        |r: ListDirRequest, s| async move {
            let depth = r.depth.clamp(1, LIST_DEPTH_MAX);
            let entries = s.list_files(&required(r.path)?, depth).await?;
            let entries: Vec<Value> = entries.iter().map(entry).collect();
            Ok(json!({"entries": entries}))
        },
    )
    .await
}

async fn remove(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    call(
        &front,
        &headers,
        &body,
        RouteId::FilesRemove,
        |r: PathRequest, s| async move {
            s.remove(&required(r.path)?, true).await?;
            Ok(json!({}))
        },
    )
    .await
}

/// An engine watch event as envd's `FilesystemEvent`, its name relative to the watched
/// directory; `None` for what envd has no event for (an overflow notice).
fn fs_event(watched: &str, event: &Event, include_entry: bool) -> Option<Value> {
    let kind = match event.name {
        "create" => "EVENT_TYPE_CREATE",
        "modify" => "EVENT_TYPE_WRITE",
        "delete" => "EVENT_TYPE_REMOVE",
        "rename" => "EVENT_TYPE_RENAME",
        _ => return None,
    };
    let path = event.data.get("path")?.as_str()?;
    let name = std::path::Path::new(path)
        .strip_prefix(watched)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_owned());
    let mut value = json!({"name": name, "type": kind});
    if include_entry
        && let Some(info) = event.data.get("entry")
        && let Ok(info) = serde_json::from_value::<EntryInfo>(info.clone())
    {
        value["entry"] = entry(&info);
    }
    Some(value)
}

/// The engine's watch of a request, the directory as the sandbox names it, and the
/// sandbox's id (a watch's errors are about it).
async fn open_watch(
    front: &Front,
    headers: &HeaderMap,
    request: &WatchRequest,
) -> Result<(String, EventStream, String), RpcError> {
    let path = required(request.path.clone())?;
    let (id, sandbox) = front
        .envd_sandbox(headers, RouteId::FilesWatch, RpcError::envd)
        .await?;
    let failed = |e| RpcError::envd(&id, e);
    // The directory as the engine shows paths, so event paths can be made relative.
    let shown = sandbox.file_info(&path).await.map_err(failed)?;
    if !shown.is_dir() {
        return Err(RpcError::invalid(format!("path {path} is not a directory")));
    }
    let events = sandbox
        .watch(&path, request.recursive)
        .await
        .map_err(failed)?;
    Ok((shown.path, events, id))
}

async fn watch_dir(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    let opened = async {
        let request: WatchRequest = connect::stream_request(&headers, &body)?;
        let (watched, events, id) = open_watch(&front, &headers, &request).await?;
        let include = request.include_entry;
        let changes = events.filter_map(move |event| {
            let message = match event {
                Ok(event) => {
                    fs_event(&watched, &event, include).map(|e| Ok(json!({"filesystem": e})))
                }
                Err(e) => Some(Err(RpcError::envd(&id, e))),
            };
            futures::future::ready(message)
        });
        let first = futures::stream::once(async { Ok(json!({"start": {}})) });
        Ok::<Messages, RpcError>(Box::pin(first.chain(changes)))
    };
    match opened.await {
        Ok(messages) => {
            let keepalive = connect::keepalive_interval(&headers)
                .map(|every| (every, json!({"keepalive": {}})));
            connect::stream_response(messages, keepalive, front.engine.activity.open())
        }
        Err(e) => connect::stream_error(e),
    }
}

/// What a polling watcher has gathered and not yet answered, oldest first: events, then at
/// most one error, which ends the watch.
type Pending = Arc<Mutex<VecDeque<Result<Value, RpcError>>>>;

/// A watch read by polling: its events so far, and the task that gathers them.
struct Watcher {
    sandbox: String,
    events: Pending,
    task: tokio::task::JoinHandle<()>,
}

fn pending(events: &Pending) -> std::sync::MutexGuard<'_, VecDeque<Result<Value, RpcError>>> {
    events.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps a gathered message; false once the watch is over (an error, or too many events
/// unread, which becomes the error a read answers after the kept events).
fn keep(kept: &mut VecDeque<Result<Value, RpcError>>, message: Result<Value, RpcError>) -> bool {
    if kept.len() >= WATCHER_EVENTS {
        kept.push_back(Err(RpcError::new(
            ConnectCode::ResourceExhausted,
            format!(
                "the watcher kept {WATCHER_EVENTS} events unread and stopped watching: read \
                 its events more often, and create a new watcher"
            ),
        )));
        return false;
    }
    let going = message.is_ok();
    kept.push_back(message);
    going
}

/// A read's answer: the events kept so far; an error only once the events before it have
/// been answered, and then on every later read (the watch has ended).
fn take(kept: &mut VecDeque<Result<Value, RpcError>>) -> Result<Vec<Value>, RpcError> {
    let mut events = Vec::new();
    while let Some(next) = kept.pop_front() {
        match next {
            Ok(event) => events.push(event),
            Err(e) => {
                kept.push_front(Err(e.clone()));
                if events.is_empty() {
                    return Err(e);
                }
                break;
            }
        }
    }
    Ok(events)
}

/// The polling watchers, by id.
#[derive(Default)]
pub struct Watchers {
    map: Mutex<HashMap<String, Watcher>>,
}

impl Watchers {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Watcher>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Once the sandbox is gone ([`Front::forget_sandbox`]): its watchers end with it.
    pub fn forget_sandbox(&self, sandbox: &str) {
        self.map().retain(|_, w| {
            let keep = w.sandbox != sandbox;
            if !keep {
                w.task.abort();
            }
            keep
        });
    }
}

async fn create_watcher(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    connect::unary(
        async {
            let request: WatchRequest = connect::unary_request(&headers, &body)?;
            let (watched, mut events, id) = open_watch(&front, &headers, &request).await?;
            let gathered: Pending = Arc::default();
            let into = gathered.clone();
            let include = request.include_entry;
            let task = tokio::spawn(async move {
                while let Some(event) = events.next().await {
                    let message = match event {
                        Ok(event) => match fs_event(&watched, &event, include) {
                            Some(e) => Ok(e),
                            None => continue,
                        },
                        Err(e) => Err(RpcError::envd(&id, e)),
                    };
                    if !keep(&mut pending(&into), message) {
                        break;
                    }
                }
            });
            let watcher_id = uuid::Uuid::new_v4().to_string();
            front.watchers.map().insert(
                watcher_id.clone(),
                Watcher {
                    sandbox: sandbox_id(&headers),
                    events: gathered,
                    task,
                },
            );
            Ok(json!({"watcherId": watcher_id}))
        }
        .await,
    )
}

fn unknown_watcher(id: &str) -> RpcError {
    RpcError::new(
        ConnectCode::NotFound,
        format!("watcher with id {id} not found"),
    )
}

async fn watcher_events(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    connect::unary((|| {
        let request: WatcherRequest = connect::unary_request(&headers, &body)?;
        let sandbox = sandbox_id(&headers);
        let map = front.watchers.map();
        let watcher = map
            .get(&request.watcher_id)
            .filter(|w| w.sandbox == sandbox)
            .ok_or_else(|| unknown_watcher(&request.watcher_id))?;
        let events = take(&mut pending(&watcher.events))?;
        Ok(json!({"events": events}))
    })())
}

async fn remove_watcher(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    connect::unary((|| {
        let request: WatcherRequest = connect::unary_request(&headers, &body)?;
        let sandbox = sandbox_id(&headers);
        let mut map = front.watchers.map();
        match map.get(&request.watcher_id) {
            Some(w) if w.sandbox == sandbox => {
                if let Some(w) = map.remove(&request.watcher_id) {
                    w.task.abort();
                }
                Ok(json!({}))
            }
            _ => Err(unknown_watcher(&request.watcher_id)),
        }
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_read_as_go_writes_them() {
        assert_eq!(permissions("file", 0o644), "-rw-r--r--");
        assert_eq!(permissions("dir", 0o755), "drwxr-xr-x");
    }

    #[test]
    fn a_watchers_error_waits_behind_its_events_and_stays() {
        let mut kept = VecDeque::new();
        assert!(keep(&mut kept, Ok(json!({"name": "a"}))));
        assert!(!keep(&mut kept, Err(RpcError::invalid("gone"))));
        assert_eq!(take(&mut kept).unwrap(), vec![json!({"name": "a"})]);
        assert_eq!(take(&mut kept).unwrap_err().message, "gone");
        assert_eq!(take(&mut kept).unwrap_err().message, "gone");
    }

    #[test]
    fn a_watcher_too_far_behind_ends_with_an_error_and_loses_no_event() {
        let mut kept = VecDeque::new();
        for n in 0..WATCHER_EVENTS {
            assert!(keep(&mut kept, Ok(json!(n))));
        }
        assert!(!keep(&mut kept, Ok(json!("one too many"))));
        let events = take(&mut kept).unwrap();
        assert_eq!(events.len(), WATCHER_EVENTS);
        assert_eq!(events[0], json!(0));
        let error = take(&mut kept).unwrap_err();
        assert_eq!(error.code, ConnectCode::ResourceExhausted);
    }
}
