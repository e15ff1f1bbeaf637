//! `GET .../files/watch` (spec 4.4, 6): file changes as SSE events `create`,
//! `modify`, `delete`, `rename` `{path, type, entry?}` (and `overflow`), until the
//! client goes.

use super::support::{expect_error, get, post, req, sandbox, sb, sh, snapshot};
use crate::{Case, Ctx, SseFrame, SseStream, case, profiles};
use anyhow::{anyhow, bail, ensure};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const KINDS: &[&str] = &["create", "modify", "delete", "rename", "overflow"];

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/watch/001",
            spec: "GET .../files/watch?path= answers `text/event-stream`; a file written into the watched directory afterwards comes as the `create` of that file `{path, type, entry?}`: an atomic write's temporary file is never named.",
            profile: &profiles::LOCAL,
            tags: ["feature:watch", "feature:files"],
            endpoints: ["files_watch", "files_write"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                mkdir(&ctx, &id, "w").await?;
                let mut stream = watch(&ctx, &id, "path=w").await?;
                let resp = ctx.send(req(&ctx, Method::PUT, &sb(&id, "/files/content?path=w/new.txt")).body("hello")).await?;
                resp.expect_status(200)?;
                let (name, data) = wait_for(&mut stream, &["create", "rename", "modify"], "w/").await?;
                ensure!(name == "create" && data.get("from").is_none(), "a write shows as the `create` of the file written, not its temporary file: {name} {data}");
                ensure!(data["path"].as_str().is_some_and(|p| p.ends_with("w/new.txt")), "{data}");
                ensure!(data["type"] == "file", "`type` says what changed: {data}");
                if let Some(entry) = data.get("entry").filter(|e| !e.is_null()) {
                    super::support::check_entry(entry)?;
                }
                let shown = data.clone();
                snapshot(&ctx, "engine__watch__event", &shown)?;
                drop(stream);
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/watch/002",
            spec: "Changes to a watched file come as their kind: appending to it is `modify`, moving it is `rename`, removing it is `delete`, each naming the path.",
            profile: &profiles::LOCAL,
            tags: ["feature:watch", "feature:files", "feature:commands"],
            endpoints: ["files_watch", "files_move", "files_remove"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                mkdir(&ctx, &id, "w").await?;
                sh(&ctx, &id, "echo one > w/f.txt").await?;
                let mut stream = watch(&ctx, &id, "path=w").await?;
                sh(&ctx, &id, "echo two >> w/f.txt").await?;
                wait_for(&mut stream, &["modify"], "w/f.txt").await?;
                post(&ctx, &sb(&id, "/files/move"), &json!({"from": "w/f.txt", "to": "w/g.txt"})).await?.expect_status(200)?;
                wait_for(&mut stream, &["rename"], "w/").await?;
                ctx.send(req(&ctx, Method::DELETE, &sb(&id, "/files?path=w/g.txt"))).await?.expect_status(200)?;
                wait_for(&mut stream, &["delete"], "w/g.txt").await?;
                drop(stream);
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/watch/003",
            spec: "With `recursive=true` the watch follows sub-directories: a file written two levels down comes as an event.",
            profile: &profiles::LOCAL,
            tags: ["feature:watch", "feature:files"],
            endpoints: ["files_watch"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                post(&ctx, &sb(&id, "/files/mkdir"), &json!({"path": "w/a/b", "parents": true})).await?.expect_status(200)?;
                let mut stream = watch(&ctx, &id, "path=w&recursive=true").await?;
                ctx.send(req(&ctx, Method::PUT, &sb(&id, "/files/content?path=w/a/b/deep.txt")).body("x")).await?.expect_status(200)?;
                wait_for(&mut stream, &["create", "rename", "modify"], "w/a/b/deep.txt").await?;
                drop(stream);
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/watch/004",
            spec: "A watch that cannot start is an error answer, not a stream: a missing path is 404 `E2004`, a path out of the sandbox 400 `E4005`, no `path` 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:watch"],
            endpoints: ["files_watch"],
            codes: ["E2004", "E4005", "E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                for (query, status, code) in [("?path=nowhere", 404, "E2004"), ("?path=../../etc", 400, "E4005"), ("", 400, "E4001"), ("?path=.&recursive=maybe", 400, "E4001")] {
                    let resp = get(&ctx, &sb(&id, &format!("/files/watch{query}"))).await?;
                    expect_error(&resp, status, code).map_err(|e| anyhow!("{query}: {e:#}"))?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/watch/005",
            spec: "A failure inside an open stream arrives as an `error` event carrying the engine error body, and nothing follows it: the watched directory removed ends the watch with its `delete` then `error` `E2004`; the sandbox killed under a watch ends it with `error` `E2009`.",
            profile: &profiles::LOCAL,
            tags: ["feature:watch", "feature:files"],
            endpoints: ["files_watch", "files_remove", "sandboxes_kill"],
            codes: ["E2004", "E2009"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                mkdir(&ctx, &id, "gone/inner").await?;
                let mut stream = watch(&ctx, &id, "path=gone").await?;
                ctx.send(req(&ctx, Method::DELETE, &sb(&id, "/files?path=gone&recursive=true"))).await?.expect_status(200)?;
                let frames = to_end(&mut stream).await?;
                let body = ends_with_error(&frames, "E2004")?;
                let names: Vec<&str> = frames.iter().filter_map(|f| f.event.as_deref()).collect();
                ensure!(names.contains(&"delete"), "the removal comes before the end: {names:?}");
                super::support::error_snapshot(&ctx, "engine__watch__error_event", &body, &[])?;

                let other = sandbox(&ctx).await?;
                mkdir(&ctx, &other, "w").await?;
                let mut stream = watch(&ctx, &other, "path=w").await?;
                ctx.send(req(&ctx, Method::DELETE, &sb(&other, ""))).await?.expect_status(200)?;
                ends_with_error(&to_end(&mut stream).await?, "E2009")?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}

/// Every event to the stream's end (at most 10 s).
async fn to_end(stream: &mut SseStream) -> anyhow::Result<Vec<SseFrame>> {
    let mut frames = Vec::new();
    while let Some(frame) = stream.next_event_within(Duration::from_secs(10)).await? {
        frames.push(frame);
    }
    Ok(frames)
}

/// The last event is `error` with an engine body of `code` (the only `error`):
/// its data.
fn ends_with_error(frames: &[SseFrame], code: &str) -> anyhow::Result<Value> {
    let last = frames
        .last()
        .ok_or_else(|| anyhow!("the stream ended with no event, not an `error`"))?;
    ensure!(
        last.event.as_deref() == Some("error"),
        "the stream ends with an `error` event: {frames:?}"
    );
    let errors = frames
        .iter()
        .filter(|f| f.event.as_deref() == Some("error"))
        .count();
    ensure!(errors == 1, "one `error`, and nothing after it: {frames:?}");
    let body = last.json()?;
    super::support::check_error_body(&body, code)?;
    Ok(body)
}

async fn mkdir(ctx: &Ctx, id: &str, path: &str) -> anyhow::Result<()> {
    post(
        ctx,
        &sb(id, "/files/mkdir"),
        &json!({ "path": path, "parents": true }),
    )
    .await?
    .expect_status(200)?;
    Ok(())
}

/// Opens the watch; a short pause lets the watcher settle before the change.
async fn watch(ctx: &Ctx, id: &str, query: &str) -> anyhow::Result<SseStream> {
    let stream = ctx
        .sse(req(
            ctx,
            Method::GET,
            &sb(id, &format!("/files/watch?{query}")),
        ))
        .await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(stream)
}

/// Reads events until one of `kinds` whose `path` ends with (or, for a prefix
/// ending in `/`, contains) `path`; every event on the way must be well formed.
async fn wait_for(
    stream: &mut SseStream,
    kinds: &[&str],
    path: &str,
) -> anyhow::Result<(String, Value)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen: Vec<SseFrame> = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = match tokio::time::timeout(left, stream.next_event()).await {
            Ok(Ok(Some(f))) => f,
            Ok(Ok(None)) => bail!("the watch ended before a {kinds:?} event for {path}: {seen:?}"),
            Ok(Err(e)) => return Err(e),
            Err(_) => bail!("no {kinds:?} event for {path} within 10 s: {seen:?}"),
        };
        let name = frame.event.clone().unwrap_or_default();
        ensure!(
            KINDS.contains(&name.as_str()),
            "unknown watch event {name:?}: {frame:?}"
        );
        let data = frame.json()?;
        if name != "overflow" {
            ensure!(
                data["path"].is_string() && data["type"].is_string(),
                "a `{name}` event is `{{path, type, entry?}}`: {data}"
            );
        }
        let p = data["path"].as_str().unwrap_or_default();
        let hit = if path.ends_with('/') {
            p.contains(path)
        } else {
            p.ends_with(path)
        };
        if kinds.contains(&name.as_str()) && hit {
            return Ok((name, data));
        }
        seen.push(frame);
    }
}
