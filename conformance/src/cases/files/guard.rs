//! The path guard on every file route (issue 11, Guards; spec 7.1): `path_not_allowed`,
//! `path_denied`, `read_only`, `symlink_denied`, `invalid_path`, `extension_not_allowed`,
//! `file_exists`, `payload_too_large`; the check answer agreeing with the routes; a property
//! over generated paths; a link swapped in by a racing thread.

use super::support::{
    Part, area, area_in, base, delete, download, enc, exists, info, list, mkdir, mv, put, read,
    refused, s, search, upload, write,
};
use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::{Context, anyhow, bail, ensure};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What the `files` profile keeps out of reach: `{dir}/outside` and the denied `.env`.
const SECRET: &str = "outside secret\n";
const ENV: &str = "TOKEN=never-shown\n";

/// Every route, called on `path` (as the target, the source, or the searched tree); the
/// label names the route in failure messages.
async fn every_route(
    ctx: &Ctx,
    path: &str,
    spare: &Path,
) -> anyhow::Result<Vec<(&'static str, Resp)>> {
    let spare = s(spare);
    Ok(vec![
        ("files_read", read(ctx, path).await?),
        ("files_write", write(ctx, path, "x", "").await?),
        ("files_list", list(ctx, path, "").await?),
        ("files_info", info(ctx, path).await?),
        ("files_exists", exists(ctx, path).await?),
        ("files_mkdir", mkdir(ctx, &json!({"path": path})).await?),
        (
            "files_move from",
            mv(ctx, &json!({"from": path, "to": format!("{spare}/moved")})).await?,
        ),
        (
            "files_move to",
            mv(
                ctx,
                &json!({"from": format!("{spare}/src.txt"), "to": path}),
            )
            .await?,
        ),
        ("files_delete", delete(ctx, path, "").await?),
        (
            "files_upload",
            upload(
                ctx,
                &[
                    Part::Text("path", path),
                    Part::File {
                        field: "file",
                        filename: "up.txt",
                        bytes: b"up",
                    },
                ],
            )
            .await?,
        ),
        ("files_download", download(ctx, path).await?),
        (
            "files_search",
            search(
                ctx,
                &json!({"path": path, "pattern": "secret|TOKEN|frozen"}),
            )
            .await?,
        ),
    ])
}

/// Names and contents of every file below `dir` (links as `-> target`).
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for e in read.flatten() {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(m) => m,
                Err(_) => continue,
            };
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_default();
                out.insert(rel, format!("-> {target}"));
            } else if meta.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                walk(&path, root, out);
            } else {
                out.insert(
                    rel,
                    String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned(),
                );
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// `Ok` when nothing protected changed, else which entries did (so a failure says what to
/// look for: a stray temporary file, a changed secret, a new link).
fn unchanged(
    before: &[BTreeMap<String, String>],
    after: &[BTreeMap<String, String>],
    what: &str,
) -> anyhow::Result<()> {
    let mut changed = Vec::new();
    for (b, a) in before.iter().zip(after) {
        for key in b.keys().chain(a.keys()) {
            if b.get(key) != a.get(key) && !changed.contains(key) {
                changed.push(key.clone());
            }
        }
    }
    ensure!(changed.is_empty(), "{what}: {changed:?}");
    Ok(())
}

/// What no call may change: `{dir}/outside`, the read-only tree, the denied `.env`.
fn protected(ctx: &Ctx) -> anyhow::Result<Vec<BTreeMap<String, String>>> {
    let b = base(ctx)?;
    let env = std::fs::read_to_string(b.join("root/.env")).unwrap_or_default();
    Ok(vec![
        tree(&b.join("outside")),
        tree(&b.join("root/ro")),
        BTreeMap::from([(".env".to_owned(), env)]),
    ])
}

fn leaks(resp: &Resp) -> bool {
    let body = resp.text();
    body.contains(SECRET.trim_end()) || body.contains(ENV.trim_end())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/guard/001",
            spec: "`path_not_allowed`: a path outside `paths.allow` is 403 on every file route, however it is spelled (`..`, `//`, `./`, percent-encoded dots, relative to the working directory); nothing outside is read or changed.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_write", "files_list", "files_info", "files_exists", "files_mkdir", "files_move", "files_delete", "files_upload", "files_download", "files_search"],
            codes: ["path_not_allowed"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-001")?;
                put(&dir, "src.txt", "source")?;
                let b = base(&ctx)?;
                let before = protected(&ctx)?;
                let cwd = std::env::current_dir()?;
                let relative = format!("{}{}", "../".repeat(cwd.components().count()), s(&b.join("outside/secret.txt")).trim_start_matches('/'));
                let spellings = [
                    s(&b.join("outside/secret.txt")),
                    format!("{}/../outside/secret.txt", s(&b.join("root"))),
                    format!("{}//outside/./secret.txt", s(&b)),
                    format!("{}/../../outside", s(&dir)),
                    "/etc/passwd".to_owned(),
                    "secret.txt".to_owned(),
                    relative,
                ];
                for path in &spellings {
                    for (route, resp) in every_route(&ctx, path, &dir).await? {
                        refused(&resp, 403, "path_not_allowed", &format!("{route} {path}"))?;
                        ensure!(!leaks(&resp), "{route} {path} leaked content");
                    }
                }
                // Dots percent-encoded by the client arrive as dots: still outside.
                let raw = format!("/files/content?path={}/%2E%2E/%2e%2e/outside/secret.txt", enc(&s(&dir)));
                let resp = ctx.send(ctx.get(&raw)).await?;
                refused(&resp, 403, "path_not_allowed", "percent-encoded dots")?;
                unchanged(&before, &protected(&ctx)?, "something outside changed")?;
                Ok(())
            },
        },
        case! {
            id: "files/guard/002",
            spec: "`path_denied`: a path a `paths.deny` glob matches (`**/.env`, `**/private/**`) is 403 on every file route, existing or not.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_write", "files_list", "files_info", "files_exists", "files_mkdir", "files_move", "files_delete", "files_upload", "files_download", "files_search"],
            codes: ["path_denied"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-002")?;
                put(&dir, "src.txt", "source")?;
                put(&dir, "private/inner.txt", "private")?;
                let b = base(&ctx)?;
                let before = protected(&ctx)?;
                for path in [s(&b.join("root/.env")), s(&dir.join("new/.env")), s(&dir.join("private/inner.txt")), s(&dir.join("private/x/y"))] {
                    for (route, resp) in every_route(&ctx, &path, &dir).await? {
                        let err = refused(&resp, 403, "path_denied", &format!("{route} {path}"))?;
                        ensure!(!leaks(&resp) && !resp.text().contains("\"private\""), "{route} leaked: {err}");
                    }
                }
                ensure!(std::fs::read(dir.join("private/inner.txt"))? == b"private", "unchanged");
                unchanged(&before, &protected(&ctx)?, "a denied file changed")?;
                Ok(())
            },
        },
        case! {
            id: "files/guard/003",
            spec: "`read_only`: under `paths.read_only` every write, move (either side), mkdir, delete and upload is 403; reads, lists, info, exists, downloads and searches still answer.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_write", "files_list", "files_info", "files_exists", "files_mkdir", "files_move", "files_delete", "files_upload", "files_download", "files_search"],
            codes: ["read_only"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-003")?;
                let mine = put(&dir, "mine.txt", "mine")?;
                let ro = base(&ctx)?.join("root/ro");
                let frozen = s(&ro.join("frozen.txt"));
                let before = protected(&ctx)?;
                let refusals = [
                    ("write", write(&ctx, &frozen, "thawed", "").await?),
                    ("write new", write(&ctx, &s(&ro.join("new.txt")), "new", "").await?),
                    ("mkdir", mkdir(&ctx, &json!({"path": s(&ro.join("d"))})).await?),
                    ("mkdir parents", mkdir(&ctx, &json!({"path": s(&ro.join("d/e")), "parents": true})).await?),
                    ("move out", mv(&ctx, &json!({"from": frozen, "to": s(&dir.join("out.txt"))})).await?),
                    ("move in", mv(&ctx, &json!({"from": s(&mine), "to": s(&ro.join("in.txt"))})).await?),
                    ("delete", delete(&ctx, &frozen, "").await?),
                    ("delete tree", delete(&ctx, &s(&ro), "&recursive=true").await?),
                    ("upload", upload(&ctx, &[Part::Text("path", &s(&ro)), Part::File { field: "file", filename: "up.txt", bytes: b"up" }]).await?),
                ];
                for (what, resp) in refusals {
                    refused(&resp, 403, "read_only", what)?;
                }
                ensure!(protected(&ctx)? == before && mine.is_file(), "the read-only tree changed");
                let resp = read(&ctx, &frozen).await?;
                resp.expect_status(200)?;
                ensure!(&resp.body[..] == b"frozen\n", "{}", resp.describe());
                list(&ctx, &s(&ro), "").await?.expect_status(200)?;
                info(&ctx, &frozen).await?.expect_status(200)?;
                exists(&ctx, &frozen).await?.expect_status(200)?;
                download(&ctx, &frozen).await?.expect_status(200)?;
                search(&ctx, &json!({"path": s(&ro), "pattern": "frozen"})).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "files/guard/004",
            spec: "`symlink_denied` with `symlinks: within`: a link leading out of the allowed roots, in the path or as the target, is 403 on every route and is never followed; a link that stays inside them (to another allowed root) is followed.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_write", "files_list", "files_info", "files_exists", "files_mkdir", "files_move", "files_delete", "files_upload", "files_download", "files_search"],
            codes: ["symlink_denied"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-004")?;
                put(&dir, "src.txt", "source")?;
                let b = base(&ctx)?;
                std::os::unix::fs::symlink(b.join("outside"), dir.join("out"))?;
                std::os::unix::fs::symlink(b.join("outside/secret.txt"), dir.join("secret-link"))?;
                std::os::unix::fs::symlink(b.join("shared"), dir.join("in"))?;
                let before = protected(&ctx)?;
                for path in [s(&dir.join("out/secret.txt")), s(&dir.join("out/new.txt"))] {
                    for (route, resp) in every_route(&ctx, &path, &dir).await? {
                        refused(&resp, 403, "symlink_denied", &format!("{route} {path}"))?;
                        ensure!(!leaks(&resp), "{route} {path} leaked content");
                    }
                }
                // The link itself as the last component: every route that would follow it
                // (or describe what it leads to) refuses; moving and deleting act on the
                // link alone (below).
                let link = s(&dir.join("out"));
                let following = [
                    ("files_read", read(&ctx, &link).await?),
                    ("files_write", write(&ctx, &link, "x", "").await?),
                    ("files_list", list(&ctx, &link, "").await?),
                    ("files_info", info(&ctx, &link).await?),
                    ("files_exists", exists(&ctx, &link).await?),
                    ("files_mkdir", mkdir(&ctx, &json!({"path": link})).await?),
                    ("files_upload", upload(&ctx, &[Part::Text("path", &link), Part::File { field: "file", filename: "up.txt", bytes: b"up" }]).await?),
                    ("files_download", download(&ctx, &link).await?),
                    ("files_search", search(&ctx, &json!({"path": link, "pattern": "secret"})).await?),
                ];
                for (route, resp) in following {
                    refused(&resp, 403, "symlink_denied", &format!("{route} {link}"))?;
                    ensure!(!leaks(&resp), "{route} {link} leaked content");
                }
                for (route, resp) in [("read", read(&ctx, &s(&dir.join("secret-link"))).await?), ("download", download(&ctx, &s(&dir.join("secret-link"))).await?)] {
                    refused(&resp, 403, "symlink_denied", route)?;
                    ensure!(!leaks(&resp), "{route} leaked content");
                }
                unchanged(&before, &protected(&ctx)?, "something outside changed")?;
                let resp = read(&ctx, &s(&dir.join("in/common.txt"))).await?;
                resp.expect_status(200)?;
                ensure!(&resp.body[..] == b"common\n", "a link within the roots is followed\n{}", resp.describe());
                delete(&ctx, &link, "").await?.expect_status(200)?;
                ensure!(std::fs::symlink_metadata(&link).is_err() && protected(&ctx)? == before, "the link went, the outside stayed");
                Ok(())
            },
        },
        case! {
            id: "files/guard/005",
            spec: "`symlink_denied` with `symlinks: deny`: any link on the path is refused, even one that stays inside the allowed tree.",
            profile: &profiles::PATHS,
            tags: [],
            endpoints: ["files_read", "files_write", "files_list"],
            codes: ["symlink_denied"],
            run: |ctx| async move {
                let dir = area_in(&ctx, "work", "guard-005")?;
                put(&dir, "real/inside.txt", "inside")?;
                std::os::unix::fs::symlink(dir.join("real"), dir.join("link"))?;
                std::os::unix::fs::symlink(dir.join("real/inside.txt"), dir.join("file-link"))?;
                refused(&read(&ctx, &s(&dir.join("link/inside.txt"))).await?, 403, "symlink_denied", "read through a dir link")?;
                refused(&read(&ctx, &s(&dir.join("file-link"))).await?, 403, "symlink_denied", "read a file link")?;
                refused(&list(&ctx, &s(&dir.join("link")), "").await?, 403, "symlink_denied", "list a dir link")?;
                refused(&write(&ctx, &s(&dir.join("link/new.txt")), "x", "").await?, 403, "symlink_denied", "write through a link")?;
                ensure!(!dir.join("real/new.txt").exists(), "nothing written");
                let resp = read(&ctx, &s(&dir.join("real/inside.txt"))).await?;
                resp.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "files/guard/006",
            spec: "`invalid_path`: a missing path (query or body), an empty one, one with a NUL byte and one over the length limit (4096 bytes) are 400 on every route.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_write", "files_list", "files_info", "files_exists", "files_mkdir", "files_move", "files_delete", "files_upload", "files_download", "files_search"],
            codes: ["invalid_path"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-006")?;
                for route in ["/files/content", "/files/list", "/files/info", "/files/exists", "/files/download"] {
                    refused(&ctx.send(ctx.get(route)).await?, 400, "invalid_path", route)?;
                }
                refused(&ctx.send(ctx.request(Method::PUT, "/files/content").body("x")).await?, 400, "invalid_path", "PUT without path")?;
                refused(&ctx.send(ctx.delete("/files")).await?, 400, "invalid_path", "DELETE without path")?;
                refused(&mkdir(&ctx, &json!({})).await?, 400, "invalid_path", "mkdir {}")?;
                refused(&mv(&ctx, &json!({"to": s(&dir.join("b"))})).await?, 400, "invalid_path", "move without from")?;
                refused(&mv(&ctx, &json!({"from": s(&dir.join("a"))})).await?, 400, "invalid_path", "move without to")?;
                refused(&search(&ctx, &json!({"glob": "*"})).await?, 400, "invalid_path", "search without path")?;
                let long = format!("{}/{}", s(&dir), "a".repeat(4096));
                for path in [String::new(), format!("{}/a\0b", s(&dir)), long] {
                    let shown = path.replace('\0', "\\0").chars().take(60).collect::<String>();
                    for (route, resp) in every_route(&ctx, &path, &dir).await? {
                        refused(&resp, 400, "invalid_path", &format!("{route} {shown}"))?;
                    }
                }
                ensure!(std::fs::read_dir(&dir)?.count() == 0, "nothing created");
                Ok(())
            },
        },
        case! {
            id: "files/guard/007",
            spec: "The guards that are not about the path's place: `extension_not_allowed` (upload), `file_exists` (409, `overwrite: false`, write and move), `payload_too_large` (413, over the per-file limit, write and upload).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_upload", "files_write", "files_move"],
            codes: ["extension_not_allowed", "file_exists", "payload_too_large"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-007")?;
                let resp = upload(&ctx, &[Part::Text("path", &s(&dir)), Part::File { field: "file", filename: "tool.exe", bytes: b"MZ" }]).await?;
                refused(&resp, 403, "extension_not_allowed", "upload .exe")?;
                let a = put(&dir, "a.txt", "a")?;
                let b = put(&dir, "b.txt", "b")?;
                refused(&write(&ctx, &s(&a), "new", "&overwrite=false").await?, 409, "file_exists", "write")?;
                refused(&mv(&ctx, &json!({"from": s(&a), "to": s(&b), "overwrite": false})).await?, 409, "file_exists", "move")?;
                let big = vec![0u8; 4 * 1024 * 1024 + 1];
                refused(&write(&ctx, &s(&dir.join("big.bin")), big.clone(), "").await?, 413, "payload_too_large", "write")?;
                let resp = upload(&ctx, &[Part::Text("path", &s(&dir)), Part::File { field: "file", filename: "big.bin", bytes: &big }]).await?;
                refused(&resp, 413, "payload_too_large", "upload")?;
                ensure!(std::fs::read(&a)? == b"a" && std::fs::read(&b)? == b"b" && !dir.join("big.bin").exists(), "nothing changed");
                Ok(())
            },
        },
        case! {
            id: "files/guard/008",
            spec: "`POST /capabilities/check` with a path and op answers from the same code as the routes: for each path its `reason` is the code the route answers (or `allowed: true` where the route succeeds), and nothing is touched.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["capabilities_check", "files_read", "files_write", "files_delete"],
            codes: ["path_not_allowed", "path_denied", "read_only", "symlink_denied", "invalid_path"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-008")?;
                let b = base(&ctx)?;
                put(&dir, "ok.txt", "ok")?;
                std::os::unix::fs::symlink(b.join("outside"), dir.join("out"))?;
                let frozen = s(&b.join("root/ro/frozen.txt"));
                let probes = [
                    ("files_read", "read", s(&dir.join("ok.txt"))),
                    ("files_read", "read", s(&b.join("outside/secret.txt"))),
                    ("files_read", "read", s(&b.join("root/.env"))),
                    ("files_read", "read", s(&dir.join("out/secret.txt"))),
                    ("files_read", "read", format!("{}/a\0b", s(&dir))),
                    ("files_read", "read", frozen.clone()),
                    ("files_write", "write", frozen.clone()),
                    ("files_write", "write", s(&dir.join("out/new.txt"))),
                    ("files_write", "write", s(&dir.join("new.txt"))),
                    ("files_delete", "delete", frozen.clone()),
                ];
                for (endpoint, op, path) in probes {
                    let check = ctx.send(ctx.post_json("/capabilities/check", &json!({"endpoint": endpoint, "op": op, "path": path}))).await?;
                    check.expect_status(200)?;
                    let check = check.json()?;
                    // The check answers without touching: run it first, then the route.
                    if path.ends_with("/new.txt") {
                        ensure!(!Path::new(&path).exists() && !b.join("outside/new.txt").exists(), "the check wrote a file");
                    }
                    let resp = match endpoint {
                        "files_read" => read(&ctx, &path).await?,
                        "files_write" => write(&ctx, &path, "w", "").await?,
                        _ => delete(&ctx, &path, "").await?,
                    };
                    let shown = path.replace('\0', "\\0");
                    if resp.status == 200 {
                        ensure!(check["allowed"] == true, "{endpoint} {shown}: the route succeeded, the check said {check}");
                    } else {
                        let code = resp.json()?["code"].as_str().unwrap_or_default().to_owned();
                        ensure!(check["allowed"] == false && check["reason"] == code.as_str() && check["status"] == resp.status, "{endpoint} {shown}: the route answered {} {code}, the check {check}", resp.status);
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "files/guard/009",
            spec: "Property: for generated paths (`..`, `//`, `./`, percent-encoding, NUL, long names, links inside and outside the roots, absolute and relative) and any route, no answer is a 5xx, every entry answered lies under an allowed root, and nothing outside, read-only or denied is ever read, listed or changed.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_write", "files_list", "files_info", "files_exists", "files_mkdir", "files_move", "files_delete", "files_download", "files_search"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-009")?;
                let b = base(&ctx)?;
                put(&dir, "a.txt", "a")?;
                put(&dir, "d/e.txt", "e")?;
                std::os::unix::fs::symlink(b.join("shared"), dir.join("link-in"))?;
                std::os::unix::fs::symlink(b.join("outside"), dir.join("link-out"))?;
                std::os::unix::fs::symlink(b.join("outside/secret.txt"), dir.join("file-link-out"))?;
                std::os::unix::fs::symlink(b.join("root/.env"), dir.join("link-env"))?;
                std::os::unix::fs::symlink(b.join("root/ro"), dir.join("link-ro"))?;
                let before = protected(&ctx)?;
                let top: Vec<String> = std::fs::read_dir(&b)?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                let handle = tokio::runtime::Handle::current();
                let property = {
                    let ctx = ctx.clone();
                    let dir = dir.clone();
                    tokio::task::spawn_blocking(move || {
                        let mut runner = TestRunner::new(Config { cases: 160, failure_persistence: None, ..Config::default() });
                        runner
                            .run(&(generated_path(), generated_path(), 0..OPS, any::<bool>()), |(p, q, op, encode)| {
                                handle.block_on(probe(&ctx, &dir, &p, &q, op, encode)).map_err(|e| TestCaseError::fail(format!("{e:#}")))
                            })
                            .map_err(|e| anyhow!("{e}"))
                    })
                };
                property.await??;
                ensure!(protected(&ctx)? == before, "something outside, read-only or denied changed");
                let after: Vec<String> = std::fs::read_dir(&b)?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                ensure!(sorted(after) == sorted(top), "something appeared beside the allowed roots");
                Ok(())
            },
        },
        case! {
            id: "files/guard/010",
            spec: "A link swapped in by a racing thread never escapes: while one thread flips a path between a link inside the roots and a link to a directory outside, reads through it return the inside file or 403 `symlink_denied`, never the outside one, and writes through it never land outside (no TOCTOU window).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_write", "files_list"],
            codes: ["symlink_denied"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-010")?;
                let b = base(&ctx)?;
                put(&dir, "real/secret.txt", "inside\n")?;
                let swap = dir.join("swap");
                std::os::unix::fs::symlink(dir.join("real"), &swap)?;
                let before = protected(&ctx)?;
                let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                let flipper = {
                    let (dir, b, stop) = (dir.clone(), b.clone(), stop.clone());
                    std::thread::spawn(move || -> anyhow::Result<u64> {
                        let mut flips = 0u64;
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            let target = if flips.is_multiple_of(2) { b.join("outside") } else { dir.join("real") };
                            let tmp = dir.join("swap.tmp");
                            let _ = std::fs::remove_file(&tmp);
                            std::os::unix::fs::symlink(&target, &tmp)?;
                            std::fs::rename(&tmp, dir.join("swap"))?;
                            flips += 1;
                        }
                        Ok(flips)
                    })
                };
                let (mut inside, mut denied) = (0u32, 0u32);
                for n in 0..300u32 {
                    let resp = read(&ctx, &s(&swap.join("secret.txt"))).await?;
                    match resp.status {
                        200 => {
                            ensure!(&resp.body[..] == b"inside\n", "read through the swapped link returned {:?}", resp.text());
                            inside += 1;
                        }
                        403 => {
                            refused(&resp, 403, "symlink_denied", "read")?;
                            denied += 1;
                        }
                        other => bail!("unexpected status {other}\n{}", resp.describe()),
                    }
                    if n % 3 == 0 {
                        let resp = write(&ctx, &s(&swap.join(format!("w{n}.txt"))), "w", "").await?;
                        ensure!(resp.status == 200 || resp.status == 403, "{}", resp.describe());
                        let resp = list(&ctx, &s(&swap), "").await?;
                        if resp.status == 200 {
                            let body = resp.json()?;
                            let outside = body["entries"].as_array().into_iter().flatten().any(|e| e["name"] == "secret.txt" && e["size"] != 7);
                            ensure!(!outside, "listed the outside directory\n{}", resp.describe());
                        }
                    }
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                let flips = flipper.join().map_err(|_| anyhow!("the flipper panicked"))??;
                ensure!(protected(&ctx)? == before, "a write landed outside ({inside} inside, {denied} denied, {flips} flips)");
                ensure!(flips > 10, "the link was swapped while requests ran ({flips} flips)");
                Ok(())
            },
        },
        case! {
            id: "files/guard/011",
            spec: "The attack of issue 30: a hard link gets past no deny glob. With `**/.env` denied, `ln .env hl_env` then reading `hl_env` answered the denied content; while deny rules exist a regular file with more than one name is 403 `path_denied` (the message saying why) for reading, downloading and writing, a content search skips it, and the denied file is untouched; a file of one name is served as ever.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_download", "files_write", "files_search"],
            codes: ["path_denied"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-011")?;
                let env = base(&ctx)?.join("root/.env");
                let link = dir.join("hl_env");
                std::fs::hard_link(&env, &link)?;
                let before = std::fs::read(&env)?;
                let link = s(&link);
                for (what, resp) in [
                    ("read", read(&ctx, &link).await?),
                    ("download", download(&ctx, &link).await?),
                    ("write", write(&ctx, &link, "overwritten", "").await?),
                ] {
                    ensure!(!resp.text().contains("never-shown"), "{what} leaked the denied file\n{}", resp.describe());
                    let err = refused(&resp, 403, "path_denied", what)?;
                    ensure!(err["error"].as_str().is_some_and(|m| m.contains("several names")), "{what}: {err}");
                }
                let resp = search(&ctx, &json!({"path": s(&dir), "pattern": "TOKEN"})).await?;
                resp.expect_status(200)?;
                ensure!(!resp.text().contains("never-shown"), "the search leaked the denied file\n{}", resp.describe());
                ensure!(std::fs::read(&env)? == before, "the denied file is untouched");
                put(&dir, "plain.txt", "plain\n")?;
                let resp = read(&ctx, &s(&dir.join("plain.txt"))).await?;
                resp.expect_status(200)?;
                ensure!(&resp.body[..] == b"plain\n", "{}", resp.describe());
                Ok(())
            },
        },
    ]
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Components a generated path is built of: walks up, no-ops, names of the fixtures, the
/// links, denied and read-only names, oddities.
fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just(String::new()),
        Just("a.txt".to_owned()),
        Just("d".to_owned()),
        Just("e.txt".to_owned()),
        Just("new".to_owned()),
        Just("link-in".to_owned()),
        Just("link-out".to_owned()),
        Just("file-link-out".to_owned()),
        Just("link-env".to_owned()),
        Just("link-ro".to_owned()),
        Just("ro".to_owned()),
        Just("frozen.txt".to_owned()),
        Just(".env".to_owned()),
        Just("private".to_owned()),
        Just("outside".to_owned()),
        Just("secret.txt".to_owned()),
        Just("root".to_owned()),
        Just("%2e%2e".to_owned()),
        Just("a\0b".to_owned()),
        Just("x".repeat(255)),
        Just("x".repeat(300)),
        "[a-z]{1,3}",
    ]
}

/// Where a generated path starts: the case's directory, the profile's, the filesystem root,
/// or nowhere (relative to the server's working directory).
#[derive(Debug, Clone, Copy)]
enum Start {
    Area,
    Base,
    Root,
    Relative,
}

fn generated_path() -> impl Strategy<Value = (Start, Vec<String>)> {
    (
        prop_oneof![
            Just(Start::Area),
            Just(Start::Area),
            Just(Start::Base),
            Just(Start::Root),
            Just(Start::Relative)
        ],
        proptest::collection::vec(component(), 0..6),
    )
}

fn render(dir: &Path, (start, parts): &(Start, Vec<String>)) -> String {
    let joined = parts.join("/");
    match start {
        Start::Area => format!("{}/{joined}", s(dir)),
        Start::Base => format!(
            "{}/{joined}",
            s(dir.parent().and_then(Path::parent).unwrap_or(dir))
        ),
        Start::Root => format!("/{joined}"),
        Start::Relative => joined,
    }
}

const OPS: usize = 10;

/// `/`-separated, each byte percent-encoded when `encode_all` (dots and slashes too).
fn query_value(path: &str, encode_all: bool) -> String {
    if encode_all {
        path.bytes().map(|b| format!("%{b:02X}")).collect()
    } else {
        enc(path)
    }
}

/// Whether `path`, lexically normalized against the working directory, is an allowed root
/// or one of its ancestors.
fn holds_a_root(dir: &Path, path: &str) -> bool {
    let absolute = std::env::current_dir().unwrap_or_default().join(path);
    let mut normal = PathBuf::from("/");
    for part in absolute.components() {
        match part {
            std::path::Component::Normal(p) => normal.push(p),
            std::path::Component::ParentDir => {
                normal.pop();
            }
            _ => {}
        }
    }
    allowed_roots(dir).iter().any(|r| r.starts_with(&normal))
}

fn allowed_roots(dir: &Path) -> [PathBuf; 2] {
    let base = dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(dir)
        .to_path_buf();
    [base.join("root"), base.join("shared")]
}

/// Every entry path in an answer lies under an allowed root, outside the read-only tree
/// for the writes, and names nothing denied.
fn check_paths(v: &Value, dir: &Path, write: bool) -> anyhow::Result<()> {
    let roots = allowed_roots(dir);
    let ro = roots[0].join("ro");
    let mut paths = Vec::new();
    fn collect(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("path", Value::String(p)) => out.push(p.clone()),
                        _ => collect(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
            _ => {}
        }
    }
    collect(v, &mut paths);
    for p in paths {
        let path = Path::new(&p);
        ensure!(
            roots.iter().any(|r| path.starts_with(r)),
            "answered a path outside the allowed roots: {p}"
        );
        ensure!(
            !p.ends_with("/.env") && !p.contains("/private/"),
            "answered a denied path: {p}"
        );
        if write {
            ensure!(!path.starts_with(&ro), "changed a read-only path: {p}");
        }
    }
    Ok(())
}

async fn probe(
    ctx: &Ctx,
    dir: &Path,
    p: &(Start, Vec<String>),
    q: &(Start, Vec<String>),
    op: usize,
    encode_all: bool,
) -> anyhow::Result<()> {
    let path = render(dir, p);
    let other = render(dir, q);
    // Other cases share the server: never move or delete an allowed root or what holds one.
    let op = if (op == 7 || op == 8) && holds_a_root(dir, &path) {
        2
    } else {
        op
    };
    let v = query_value(&path, encode_all);
    let (resp, write) = match op {
        0 => (
            ctx.send(ctx.get(&format!("/files/content?path={v}")))
                .await?,
            false,
        ),
        1 => (
            ctx.send(ctx.get(&format!("/files/list?path={v}&depth=3")))
                .await?,
            false,
        ),
        2 => (
            ctx.send(ctx.get(&format!("/files/info?path={v}"))).await?,
            false,
        ),
        3 => (
            ctx.send(ctx.get(&format!("/files/exists?path={v}")))
                .await?,
            false,
        ),
        4 => (
            ctx.send(ctx.get(&format!("/files/download?path={v}")))
                .await?,
            false,
        ),
        5 => (
            ctx.send(
                ctx.request(
                    Method::PUT,
                    &format!("/files/content?path={v}&parents=true"),
                )
                .body("generated"),
            )
            .await?,
            true,
        ),
        6 => (
            mkdir(ctx, &json!({"path": path, "parents": true})).await?,
            true,
        ),
        7 => (
            ctx.send(ctx.delete(&format!("/files?path={v}"))).await?,
            true,
        ),
        8 => (mv(ctx, &json!({"from": path, "to": other})).await?, true),
        _ => (
            search(
                ctx,
                &json!({"path": path, "pattern": "secret|TOKEN|frozen|inside"}),
            )
            .await?,
            false,
        ),
    };
    let shown = path.replace('\0', "\\0");
    ensure!(
        resp.status < 500,
        "op {op} {shown}: a 5xx\n{}",
        resp.describe()
    );
    ensure!(
        !leaks(&resp),
        "op {op} {shown}: leaked protected content\n{}",
        resp.describe()
    );
    if resp.status == 200
        && resp
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/json"))
    {
        let body = resp.json()?;
        check_paths(&body, dir, write)
            .with_context(|| format!("op {op} {shown} -> {}", other.replace('\0', "\\0")))?;
    }
    if resp.status == 200 && op == 8 {
        // The source left the allowed tree too: it must have been inside.
        let from = Path::new(&path);
        ensure!(
            !from.starts_with(allowed_roots(dir)[0].join("ro")),
            "moved a read-only file: {shown}"
        );
    }
    Ok(())
}
