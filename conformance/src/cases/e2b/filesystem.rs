//! envd's `filesystem.Filesystem` as the SDKs' `files` use it: make, move, list and remove
//! (`makeDir`, `rename`, `list`, `remove`), and watch a directory either by polling a
//! watcher (`watchDir` of the Python SDK) or as a stream (the TypeScript SDK's).

use super::support::{Front, Live, Made, connect_error};
use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(15);

/// A unary call that must answer 200: its answer.
async fn ok(front: &Front, made: &Made, method: &str, body: Value) -> anyhow::Result<Value> {
    let (status, answer) = front.unary(made, &format!("/filesystem.Filesystem/{method}"), &body).await?;
    ensure!(status == 200, "{method} {body}: {status} {answer}");
    Ok(answer)
}

/// A unary call that must fail with `want` (and that code's HTTP status).
async fn refused(front: &Front, made: &Made, method: &str, body: Value, (status_want, want): (u16, &str)) -> anyhow::Result<()> {
    let (status, answer) = front.unary(made, &format!("/filesystem.Filesystem/{method}"), &body).await?;
    ensure!(status == status_want && connect_error(&answer)?.0 == want, "{method} {body}: {status} {answer}, want {status_want} `{want}`");
    Ok(())
}

/// Writes `text` at `path` with `POST /files`.
async fn write(front: &Front, made: &Made, path: &str, text: &str) -> anyhow::Result<Value> {
    let resp = front.ctx.send(front.envd(made, &format!("/files?path={path}")).header("content-type", "application/octet-stream").body(text.to_owned())).await?;
    ensure!(resp.status == 200, "POST /files?path={path}: {} {}", resp.status, resp.text());
    resp.json()
}

/// The names `ListDir` answers for `path` at `depth`, sorted.
async fn names(front: &Front, made: &Made, path: &str, depth: u32) -> anyhow::Result<Vec<String>> {
    let answer = ok(front, made, "ListDir", json!({"path": path, "depth": depth})).await?;
    let entries = answer["entries"].as_array().ok_or_else(|| anyhow!("no `entries`: {answer}"))?;
    let mut names: Vec<String> = entries.iter().filter_map(|e| e["path"].as_str()).map(|p| p.strip_prefix(&format!("{path}/")).unwrap_or(p).to_owned()).collect();
    names.sort();
    Ok(names)
}

fn is_event(event: &Value, name: &str, kind: &str) -> bool {
    event["name"] == name && event["type"] == kind
}

/// Polls the watcher until it answers the event `name` of `kind`; every event read is
/// kept in `seen` (a read answers each event once).
async fn polled(front: &Front, made: &Made, watcher: &str, seen: &mut Vec<Value>, name: &str, kind: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + WAIT;
    loop {
        let answer = ok(front, made, "GetWatcherEvents", json!({"watcherId": watcher})).await?;
        let events = answer["events"].as_array().ok_or_else(|| anyhow!("no `events`: {answer}"))?;
        seen.extend(events.iter().cloned());
        if seen.iter().any(|e| is_event(e, name, kind)) {
            return Ok(());
        }
        ensure!(Instant::now() < deadline, "no {kind} {name} within {WAIT:?}: {seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads the `WatchDir` stream until its event `name` of `kind`.
async fn streamed(watch: &mut Live, name: &str, kind: &str) -> anyhow::Result<()> {
    watch.until(WAIT, &format!("{kind} {name}"), |m| is_event(&m["filesystem"], name, kind)).await?;
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "e2b/filesystem/001",
            spec: "`MakeDir` makes a directory with its parents and answers its entry (`already_exists` when it is there); `Move` renames a file and answers its new entry, the old path then `not_found`; `ListDir` lists a directory's entries to its `depth`; `Remove` removes a directory with what it holds.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_fs_make_dir", "e2b_fs_move", "e2b_fs_list_dir", "e2b_fs_remove", "e2b_fs_stat", "e2b_files_write", "e2b_files_read"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let base = "/home/user/fs-001";
                let made_dir = ok(&front, &made, "MakeDir", json!({"path": format!("{base}/a/b")})).await?;
                let entry = &made_dir["entry"];
                ensure!(entry["name"] == "b" && entry["type"] == "FILE_TYPE_DIRECTORY" && entry["path"] == format!("{base}/a/b"), "MakeDir: {made_dir}");
                refused(&front, &made, "MakeDir", json!({"path": format!("{base}/a/b")}), (409, "already_exists")).await?;

                let written = write(&front, &made, &format!("{base}/a/f.txt"), "moved bytes").await?;
                ensure!(written == json!([{"name": "f.txt", "type": "file", "path": format!("{base}/a/f.txt")}]), "POST /files: {written}");
                let moved = ok(&front, &made, "Move", json!({"source": format!("{base}/a/f.txt"), "destination": format!("{base}/g.txt")})).await?;
                let entry = &moved["entry"];
                ensure!(entry["name"] == "g.txt" && entry["path"] == format!("{base}/g.txt") && entry["type"] == "FILE_TYPE_FILE" && entry["size"] == "11", "Move: {moved}");
                refused(&front, &made, "Stat", json!({"path": format!("{base}/a/f.txt")}), (404, "not_found")).await?;
                let read = front.ctx.send(front.port_as(Method::GET, "49983", &made.id, Some(&made.token), &format!("/files?path={base}/g.txt"))).await?;
                ensure!(read.status == 200 && read.text() == "moved bytes", "the moved file: {} {}", read.status, read.text());

                for (depth, want) in [(1, vec!["a", "g.txt"]), (2, vec!["a", "a/b", "g.txt"])] {
                    let got = names(&front, &made, base, depth).await?;
                    ensure!(got == want, "ListDir at depth {depth}: {got:?}, want {want:?}");
                }
                let listed = ok(&front, &made, "ListDir", json!({"path": base, "depth": 1})).await?;
                let kinds: Vec<&Value> = listed["entries"].as_array().map(|e| e.iter().map(|e| &e["type"]).collect()).unwrap_or_default();
                ensure!(kinds.contains(&&json!("FILE_TYPE_DIRECTORY")) && kinds.contains(&&json!("FILE_TYPE_FILE")), "entry types: {listed}");

                ensure!(ok(&front, &made, "Remove", json!({"path": format!("{base}/a")})).await? == json!({}), "Remove answers {{}}");
                let left = names(&front, &made, base, 2).await?;
                ensure!(left == ["g.txt"], "after Remove: {left:?}");
                refused(&front, &made, "Stat", json!({"path": format!("{base}/a/b")}), (404, "not_found")).await?;
                front.kill(&made).await?;
                Ok(())
            },
        },
        case! {
            id: "e2b/filesystem/002",
            spec: "A polling watcher (`CreateWatcher` → `watcherId`) answers the directory's changes on `GetWatcherEvents`, `EVENT_TYPE_CREATE` and `EVENT_TYPE_REMOVE` named relative to it, and is `not_found` once `RemoveWatcher` removed it; a `WatchDir` stream starts with `{start: {}}` and then carries the same changes as `{filesystem: {name, type}}`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_fs_create_watcher", "e2b_fs_get_watcher_events", "e2b_fs_remove_watcher", "e2b_fs_watch_dir", "e2b_fs_make_dir", "e2b_fs_remove", "e2b_files_write"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let dir = "/home/user/watched";
                ok(&front, &made, "MakeDir", json!({"path": dir})).await?;
                let created = ok(&front, &made, "CreateWatcher", json!({"path": dir, "recursive": false})).await?;
                let watcher = created["watcherId"].as_str().filter(|w| !w.is_empty()).ok_or_else(|| anyhow!("no watcherId: {created}"))?.to_owned();
                let mut seen = Vec::new();
                write(&front, &made, &format!("{dir}/new.txt"), "x").await?;
                polled(&front, &made, &watcher, &mut seen, "new.txt", "EVENT_TYPE_CREATE").await?;
                ok(&front, &made, "Remove", json!({"path": format!("{dir}/new.txt")})).await?;
                polled(&front, &made, &watcher, &mut seen, "new.txt", "EVENT_TYPE_REMOVE").await?;
                // A read answers each event once: the creation is not answered again.
                let creations = seen.iter().filter(|e| is_event(e, "new.txt", "EVENT_TYPE_CREATE")).count();
                ensure!(creations == 1, "{creations} creations of one file: {seen:?}");
                ok(&front, &made, "RemoveWatcher", json!({"watcherId": watcher})).await?;
                refused(&front, &made, "GetWatcherEvents", json!({"watcherId": watcher}), (404, "not_found")).await?;

                let mut watch = front.live(&made, "/filesystem.Filesystem/WatchDir", &json!({"path": dir, "recursive": false})).await?;
                watch.until(WAIT, "the start message", |m| m.get("start").is_some()).await?;
                write(&front, &made, &format!("{dir}/streamed.txt"), "y").await?;
                streamed(&mut watch, "streamed.txt", "EVENT_TYPE_CREATE").await?;
                ok(&front, &made, "Remove", json!({"path": format!("{dir}/streamed.txt")})).await?;
                streamed(&mut watch, "streamed.txt", "EVENT_TYPE_REMOVE").await?;
                drop(watch);
                front.kill(&made).await?;
                Ok(())
            },
        },
    ]
}
