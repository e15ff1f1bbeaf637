//! GET /files/watch: changes as server-sent events (issue 11, wire contract `files_watch`):
//! `create`, `modify`, `delete`, `rename` with `{path, type, entry?}` (`rename` adds
//! `from`), `overflow` when events were lost, `error` events in the flat error shape,
//! keep-alive comments.

use super::support::{area, base, check_entry, enc, put, refused, s, snapshot};
use crate::ctx::{SseFrame, SseStream};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// How long one expected event may take.
const WAIT: Duration = Duration::from_secs(10);

/// Opens the stream on `path` (200 and `text/event-stream`: the watch is in place once
/// the answer has started).
async fn open(ctx: &Ctx, path: &Path, recursive: bool) -> anyhow::Result<SseStream> {
    let extra = if recursive { "&recursive=true" } else { "" };
    ctx.sse(ctx.get(&format!("/files/watch?path={}{extra}", enc(&s(path)))))
        .await
}

/// One event: its name and its data.
#[derive(Debug, Clone)]
struct Ev {
    name: String,
    data: Value,
}

impl Ev {
    fn path(&self) -> &str {
        self.data["path"].as_str().unwrap_or_default()
    }

    /// `name path` (and `from` for a rename), for comparing sequences.
    fn brief(&self) -> String {
        match self.data["from"].as_str() {
            Some(from) => format!("{} {from} -> {}", self.name, self.path()),
            None => format!("{} {} {}", self.name, self.path(), self.data["type"]),
        }
    }
}

/// The next event (keep-alive comments skipped), its data checked: a change has `path`
/// and `type`, and an `entry` that is a well-formed entry of that path.
async fn next(stream: &mut SseStream) -> anyhow::Result<Ev> {
    let frame: SseFrame = stream
        .next_event_within(WAIT)
        .await?
        .context("the stream ended")?;
    let name = frame.event.clone().unwrap_or_else(|| "message".into());
    let data = frame.json()?;
    if ["create", "modify", "delete", "rename"].contains(&name.as_str()) {
        ensure!(data["path"].is_string(), "`path` in {name}: {data}");
        ensure!(
            ["file", "dir", "symlink", "other"].contains(&data["type"].as_str().unwrap_or("")),
            "`type` in {name}: {data}"
        );
        if let Some(entry) = data.get("entry") {
            check_entry(entry)?;
            ensure!(
                entry["path"] == data["path"],
                "the entry is the path's: {data}"
            );
        }
        ensure!(
            (name == "rename") == data.get("from").is_some(),
            "`from` only in a rename: {name} {data}"
        );
    }
    Ok(Ev { name, data })
}

/// Events until one matches `stop` (included), repeats of the event just before folded
/// (a write may be reported as one change or as several).
async fn until(stream: &mut SseStream, stop: impl Fn(&Ev) -> bool) -> anyhow::Result<Vec<Ev>> {
    let mut seen: Vec<Ev> = Vec::new();
    loop {
        let ev = next(stream).await?;
        let done = stop(&ev);
        if seen.last().map(Ev::brief) != Some(ev.brief()) {
            seen.push(ev);
        }
        if done {
            return Ok(seen);
        }
    }
}

/// Every event until a second passes without one (the reader has caught up), each checked
/// as [`next`] checks it.
async fn catch_up(stream: &mut SseStream) -> anyhow::Result<Vec<Ev>> {
    let mut read = Vec::new();
    while let Ok(ev) = tokio::time::timeout(Duration::from_secs(1), next(stream)).await {
        read.push(ev?);
    }
    Ok(read)
}

/// Nothing but keep-alives for a moment.
async fn quiet(stream: &mut SseStream) -> anyhow::Result<()> {
    match tokio::time::timeout(Duration::from_millis(500), stream.next_event()).await {
        Err(_) => Ok(()),
        Ok(Ok(Some(frame))) => bail!("expected no event, got {frame:?}"),
        Ok(Ok(None)) => bail!("the stream ended"),
        Ok(Err(e)) => Err(e),
    }
}

fn briefs(events: &[Ev]) -> Vec<String> {
    events.iter().map(Ev::brief).collect()
}

/// Appends to a file (one write, no truncation: one modification).
fn append(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    fs::OpenOptions::new()
        .append(true)
        .open(path)?
        .write_all(bytes)?;
    Ok(())
}

/// The snapshot of an event: its name and data, paths and times redacted.
fn shot(ctx: &Ctx, name: &str, ev: &Ev) -> anyhow::Result<()> {
    snapshot(ctx, name, &json!({"event": ev.name, "data": ev.data}))
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/watch/001",
            spec: "files_watch: GET /files/watch?path=&recursive=true streams `create`, `modify`, `rename` and `delete` events for changes anywhere below the directory, in the order they happened; a rename is one event, `path` the new name and `from` the old, across directories too.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-001")?;
                fs::create_dir_all(dir.join("a/b"))?;
                let mut stream = open(&ctx, &dir, true).await?;
                let f = dir.join("a/b/f.txt");
                let g = dir.join("a/b/g.txt");
                let top = dir.join("g.txt");
                fs::File::create(&f)?;
                append(&f, b"one")?;
                fs::rename(&f, &g)?;
                fs::rename(&g, &top)?;
                fs::remove_file(&top)?;
                let seen = until(&mut stream, |e| e.name == "delete").await?;
                let want = vec![
                    format!("create {} \"file\"", s(&f)),
                    format!("modify {} \"file\"", s(&f)),
                    format!("rename {} -> {}", s(&f), s(&g)),
                    format!("rename {} -> {}", s(&g), s(&top)),
                    format!("delete {} \"file\"", s(&top)),
                ];
                ensure!(briefs(&seen) == want, "in order:\n{:#?}\nwanted:\n{want:#?}", briefs(&seen));
                quiet(&mut stream).await
            },
        },
        case! {
            id: "files/watch/002",
            spec: "Each change event carries `{path, type}` and, while the path exists, `entry` (the entry info of the path as it is when the event is sent: a link is described, never followed); a `delete` has no entry; a `rename` adds `from`. Moving an entry in from outside the watch is a `create`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-002")?;
                let staging = area(&ctx, "watch-002-staging")?;
                let mut stream = open(&ctx, &dir, true).await?;
                // Made outside with known permissions, then moved in: a create.
                let made = put(&staging, "notes.txt", "")?;
                fs::set_permissions(&made, fs::Permissions::from_mode(0o644))?;
                let file = dir.join("notes.txt");
                fs::rename(&made, &file)?;
                let ev = next(&mut stream).await?;
                ensure!(ev.name == "create" && ev.path() == s(&file) && ev.data["entry"]["size"] == 0, "{ev:?}");
                shot(&ctx, "files__watch__create", &ev)?;

                append(&file, b"hello")?;
                let ev = next(&mut stream).await?;
                ensure!(ev.name == "modify" && ev.data["entry"]["size"] == 5, "{ev:?}");
                shot(&ctx, "files__watch__modify", &ev)?;

                let renamed = dir.join("renamed.txt");
                fs::rename(&file, &renamed)?;
                let ev = next(&mut stream).await?;
                ensure!(ev.name == "rename" && ev.data["from"] == s(&file) && ev.path() == s(&renamed), "{ev:?}");
                shot(&ctx, "files__watch__rename", &ev)?;

                fs::remove_file(&renamed)?;
                let ev = next(&mut stream).await?;
                ensure!(ev.name == "delete" && ev.data.get("entry").is_none(), "{ev:?}");
                shot(&ctx, "files__watch__delete", &ev)?;

                let sub = staging.join("sub");
                fs::create_dir(&sub)?;
                fs::set_permissions(&sub, fs::Permissions::from_mode(0o755))?;
                fs::rename(&sub, dir.join("sub"))?;
                let ev = next(&mut stream).await?;
                ensure!(ev.name == "create" && ev.data["type"] == "dir" && ev.data["entry"]["type"] == "dir", "{ev:?}");
                shot(&ctx, "files__watch__create_dir", &ev)?;

                std::os::unix::fs::symlink("renamed.txt", dir.join("link"))?;
                let ev = next(&mut stream).await?;
                ensure!(ev.name == "create" && ev.data["type"] == "symlink" && ev.data["entry"]["symlink_target"] == "renamed.txt", "{ev:?}");
                shot(&ctx, "files__watch__create_symlink", &ev)?;
                quiet(&mut stream).await
            },
        },
        case! {
            id: "files/watch/003",
            spec: "A directory created under a recursive watch after it started is watched too: what it already holds when the watch reaches it is reported as created (nothing made in it is lost), and later changes in it are reported as they happen. A directory renamed within the tree stays watched under its new name.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-003")?;
                let mut stream = open(&ctx, &dir, true).await?;
                // Made at once, faster than any watch could follow.
                put(&dir, "new/deeper/early.txt", "")?;
                let early = s(&dir.join("new/deeper/early.txt"));
                let seen = until(&mut stream, |e| e.name == "create" && e.path() == early).await?;
                let got = briefs(&seen);
                for want in [
                    format!("create {} \"dir\"", s(&dir.join("new"))),
                    format!("create {} \"dir\"", s(&dir.join("new/deeper"))),
                ] {
                    ensure!(got.contains(&want), "{want} in {got:#?}");
                }
                let late = put(&dir, "new/deeper/late.txt", "")?;
                let seen = until(&mut stream, |e| e.name == "create" && e.path() == s(&late)).await?;
                ensure!(seen.iter().all(|e| e.name == "create"), "{:#?}", briefs(&seen));

                fs::rename(dir.join("new"), dir.join("moved"))?;
                let ev = next(&mut stream).await?;
                ensure!(ev.brief() == format!("rename {} -> {}", s(&dir.join("new")), s(&dir.join("moved"))), "{ev:?}");
                let after = put(&dir, "moved/deeper/after.txt", "")?;
                let ev = next(&mut stream).await?;
                ensure!(ev.name == "create" && ev.path() == s(&after), "{ev:?}");
                Ok(())
            },
        },
        case! {
            id: "files/watch/004",
            spec: "Without `recursive` only the directory's own entries are reported, a new subdirectory included but not what is made in it.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-004")?;
                fs::create_dir(dir.join("sub"))?;
                let mut stream = open(&ctx, &dir, false).await?;
                put(&dir, "sub/inside.txt", "")?;
                fs::create_dir(dir.join("later"))?;
                put(&dir, "later/inside.txt", "")?;
                let top = put(&dir, "top.txt", "")?;
                let seen = until(&mut stream, |e| e.path() == s(&top)).await?;
                ensure!(
                    briefs(&seen) == vec![format!("create {} \"dir\"", s(&dir.join("later"))), format!("create {} \"file\"", s(&top))],
                    "{:#?}", briefs(&seen)
                );
                quiet(&mut stream).await
            },
        },
        case! {
            id: "files/watch/005",
            spec: "Events are never dropped silently: a reader that stops reading while a burst of changes happens gets an `overflow` event (`{path, message}`) where events were lost, the server holding a bounded number meanwhile, and the watch goes on after it.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-005")?;
                let mut stream = open(&ctx, &dir, false).await?;
                // Far more than the server holds for one reader plus what the sockets
                // buffer, made while nothing is read.
                let burst = 40_000;
                let names = tokio::task::spawn_blocking({
                    let dir = dir.clone();
                    move || -> anyhow::Result<()> {
                        for n in 0..burst {
                            fs::File::create(dir.join(format!("f{n:05}")))?;
                        }
                        Ok(())
                    }
                });
                names.await??;
                // Let the server take what it can before reading starts.
                tokio::time::sleep(Duration::from_secs(1)).await;
                let mut creates = 0;
                let overflow = loop {
                    let ev = next(&mut stream)
                        .await
                        .with_context(|| format!("after {creates} creates, before any overflow"))?;
                    match ev.name.as_str() {
                        "create" => creates += 1,
                        "overflow" => break ev,
                        _ => bail!("unexpected {ev:?}"),
                    }
                };
                ensure!(creates < burst, "{creates} creates before the overflow");
                ensure!(overflow.data["path"] == s(&dir) && overflow.data["message"].is_string(), "{overflow:?}");
                shot(&ctx, "files__watch__overflow", &overflow)?;
                // Catch up first: what the burst left queued (creates, and a second overflow
                // where the kernel's own queue overflowed too) comes before anything newer,
                // and a change made while the reader is still behind may be lost to another
                // overflow, as the spec allows.
                let backlog = catch_up(&mut stream).await.context("catching up after the overflow")?;
                // The watch goes on: a change made after the burst is reported.
                let after = put(&dir, "after.txt", "")?;
                let seen = until(&mut stream, |e| e.path() == s(&after))
                    .await
                    .context("waiting for the create of after.txt, made once the reader was level")?;
                let odd: Vec<String> = briefs(&backlog)
                    .into_iter()
                    .filter(|b| !b.starts_with("create ") && !b.starts_with("overflow "))
                    .chain(briefs(&seen).into_iter().filter(|b| !b.starts_with("create ")))
                    .collect();
                ensure!(odd.is_empty(), "only creates and overflows: {odd:#?}");
                drop(stream);
                fs::remove_dir_all(&dir)?;
                Ok(())
            },
        },
        case! {
            id: "files/watch/006",
            spec: "The watched path is judged and opened before the stream starts, so every refusal is a normal typed error answer: `path_not_allowed` outside `paths.allow`, `path_denied` where a deny pattern matches, `symlink_denied` for a link leading outside the allowed roots, `invalid_path` for an empty, missing or NUL-holding path, `not_found` for a missing one.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: ["path_not_allowed", "path_denied", "symlink_denied", "invalid_path", "not_found"],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-006")?;
                let outside = base(&ctx)?.join("outside");
                fs::create_dir_all(dir.join("private/inner"))?;
                put(&dir, ".env", "KEY=v\n")?;
                std::os::unix::fs::symlink(&outside, dir.join("out"))?;
                let get = |target: String| {
                    let ctx = ctx.clone();
                    async move { ctx.send(ctx.get(&target)).await }
                };
                let at = |p: &Path| format!("/files/watch?path={}&recursive=true", enc(&s(p)));
                refused(&get(at(&outside)).await?, 403, "path_not_allowed", "outside the allowed roots")?;
                refused(&get(at(&dir.join("private/inner"))).await?, 403, "path_denied", "under a denied directory")?;
                refused(&get(at(&dir.join(".env"))).await?, 403, "path_denied", "a denied file")?;
                refused(&get(at(&dir.join("out"))).await?, 403, "symlink_denied", "a link leading outside")?;
                let body = refused(&get("/files/watch".into()).await?, 400, "invalid_path", "no path")?;
                snapshot(&ctx, "files__watch__no_path", &body)?;
                refused(&get("/files/watch?path=".into()).await?, 400, "invalid_path", "an empty path")?;
                refused(&get(format!("/files/watch?path={}%00x", enc(&s(&dir)))).await?, 400, "invalid_path", "a NUL byte")?;
                let body = refused(&get(at(&dir.join("missing"))).await?, 404, "not_found", "a missing path")?;
                snapshot(&ctx, "files__watch__missing", &body)?;
                Ok(())
            },
        },
        case! {
            id: "files/watch/007",
            spec: "A watch reports no path the rules refuse and never descends a link: nothing under a denied directory or behind a link in the tree is named, and a link made in the tree is reported as a `symlink`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-007")?;
                // Outside every allowed directory, but not the profile's `outside`: the guard
                // cases, running beside this one, check that nothing there ever changes.
                let outside = base(&ctx)?.join("elsewhere/watch-007");
                fs::create_dir_all(&outside)?;
                fs::create_dir_all(dir.join("private"))?;
                std::os::unix::fs::symlink(&outside, dir.join("out"))?;
                let mut stream = open(&ctx, &dir, true).await?;
                put(&dir, "private/key.txt", "")?;
                put(&dir, "sub/.env", "KEY=v\n")?;
                put(&outside, "watch-007.txt", "")?;
                let link = dir.join("sub/later-link");
                std::os::unix::fs::symlink(&outside, &link)?;
                put(&outside, "watch-007-again.txt", "")?;
                let end = put(&dir, "end.txt", "")?;
                let seen = until(&mut stream, |e| e.path() == s(&end)).await?;
                let want = vec![
                    format!("create {} \"dir\"", s(&dir.join("sub"))),
                    format!("create {} \"symlink\"", s(&link)),
                    format!("create {} \"file\"", s(&end)),
                ];
                ensure!(briefs(&seen) == want, "{:#?}\nwanted:\n{want:#?}", briefs(&seen));
                quiet(&mut stream).await
            },
        },
        case! {
            id: "files/watch/008",
            spec: "Watching a file reports that file's changes only (its directory's other entries are not named); a file replaced under its name (written elsewhere, then renamed over it) is reported as created.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-008")?;
                let file = put(&dir, "watched.txt", "one")?;
                let mut stream = open(&ctx, &file, false).await?;
                put(&dir, "sibling.txt", "x")?;
                append(&file, b"two")?;
                let ev = next(&mut stream).await?;
                ensure!(ev.brief() == format!("modify {} \"file\"", s(&file)), "{ev:?}");
                let tmp = put(&dir, ".watched.txt.tmp", "three")?;
                fs::rename(&tmp, &file)?;
                let ev = next(&mut stream).await?;
                ensure!(ev.brief() == format!("create {} \"file\"", s(&file)) && ev.data["entry"]["size"] == 5, "{ev:?}");
                fs::remove_file(&file)?;
                let ev = next(&mut stream).await?;
                ensure!(ev.brief() == format!("delete {} \"file\"", s(&file)), "{ev:?}");
                quiet(&mut stream).await
            },
        },
        case! {
            id: "files/watch/009",
            spec: "When the watched directory itself is deleted the stream reports its `delete`, then an `error` event in the flat error shape with code `not_found`, and ends.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_watch"],
            codes: ["not_found"],
            run: |ctx| async move {
                let dir = area(&ctx, "watch-009")?;
                let watched = dir.join("w");
                fs::create_dir(&watched)?;
                let mut stream = open(&ctx, &watched, true).await?;
                fs::remove_dir(&watched)?;
                let ev = next(&mut stream).await?;
                ensure!(ev.brief() == format!("delete {} \"dir\"", s(&watched)), "{ev:?}");
                let ev = next(&mut stream).await?;
                ensure!(ev.name == "error" && ev.data["code"] == "not_found" && ev.data["type"] == "NotFoundError", "{ev:?}");
                ensure!(ev.data["error"].as_str().is_some_and(|m| m.contains(&s(&watched))), "{ev:?}");
                shot(&ctx, "files__watch__gone", &ev)?;
                let end = tokio::time::timeout(WAIT, stream.next_event()).await;
                ensure!(matches!(end, Ok(Ok(None))), "the stream ends: {end:?}");
                Ok(())
            },
        },
    ]
}
