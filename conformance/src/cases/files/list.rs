//! GET /files/list: entries of a directory, `depth` 1..=10 (issue 11, wire contract
//! `files_list`).

use super::support::{area, check_entry, list, put, refused, s, snapshot};
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::Value;

/// The entries of a 200 answer, each checked, sorted by path.
fn entries(resp: &crate::Resp) -> anyhow::Result<Vec<Value>> {
    resp.expect_status(200)?;
    let body = resp.json()?;
    ensure!(
        body.as_object().is_some_and(|o| o.len() == 1),
        "the body is `{{entries}}`: {body}"
    );
    let mut entries = body["entries"]
        .as_array()
        .context("`entries` is an array")?
        .clone();
    for e in &entries {
        check_entry(e)?;
    }
    entries.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    Ok(entries)
}

fn names(entries: &[Value], dir: &std::path::Path) -> Vec<String> {
    entries
        .iter()
        .filter_map(|e| e["path"].as_str())
        .map(|p| {
            p.strip_prefix(&format!("{}/", dir.display()))
                .unwrap_or(p)
                .to_owned()
        })
        .collect()
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/list/001",
            spec: "files_list: GET /files/list?path= answers 200 `{entries: [entry...]}` with the directory's children (depth 1 by default): files, directories and links (type `symlink` with `symlink_target`, not followed); a denied child (`.env`) is never listed.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_list"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "list-001")?;
                put(&dir, "a.txt", "aaa")?;
                put(&dir, "sub/inner.txt", "inner")?;
                put(&dir, ".env", "SECRET=1")?;
                let shared = super::support::base(&ctx)?.join("shared/common.txt");
                std::os::unix::fs::symlink(&shared, dir.join("link"))?;
                let resp = list(&ctx, &s(&dir), "").await?;
                let got = entries(&resp)?;
                ensure!(names(&got, &dir) == ["a.txt", "link", "sub"], "{:?}", names(&got, &dir));
                let by = |n: &str| got.iter().find(|e| e["name"] == n).cloned().unwrap_or_default();
                ensure!(by("a.txt")["type"] == "file" && by("a.txt")["size"] == 3, "{got:?}");
                ensure!(by("sub")["type"] == "dir", "{got:?}");
                ensure!(by("link")["type"] == "symlink" && by("link")["symlink_target"] == s(&shared), "{got:?}");
                snapshot(&ctx, "files__list__entries", &serde_json::json!({"entries": got}))?;
                Ok(())
            },
        },
        case! {
            id: "files/list/002",
            spec: "`depth=N` (1..=10) lists N levels below the directory; a depth of 0, 11 or a non-number is 400 `invalid_request` naming `depth`; denied trees (`private/**`) stay out at any depth.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_list"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let dir = area(&ctx, "list-002")?;
                put(&dir, "one/two/three/four.txt", "4")?;
                put(&dir, "one/two/private/hidden.txt", "no")?;
                let got = entries(&list(&ctx, &s(&dir), "&depth=2").await?)?;
                ensure!(names(&got, &dir) == ["one", "one/two"], "{:?}", names(&got, &dir));
                let got = entries(&list(&ctx, &s(&dir), "&depth=10").await?)?;
                let all = names(&got, &dir);
                ensure!(all.contains(&"one/two/three/four.txt".to_owned()), "{all:?}");
                ensure!(!all.iter().any(|n| n.contains("hidden")), "denied entries listed: {all:?}");
                for bad in ["0", "11", "deep", "-1"] {
                    let resp = list(&ctx, &s(&dir), &format!("&depth={bad}")).await?;
                    let err = refused(&resp, 400, "invalid_request", bad)?;
                    ensure!(err.to_string().contains("depth"), "names `depth`: {err}");
                }
                Ok(())
            },
        },
        case! {
            id: "files/list/003",
            spec: "Listing a file is 400 `not_a_directory`; a missing directory is 404 `not_found`; an empty directory lists `[]`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_list"],
            codes: ["not_a_directory", "not_found"],
            run: |ctx| async move {
                let dir = area(&ctx, "list-003")?;
                let file = put(&dir, "plain.txt", "x")?;
                let resp = list(&ctx, &s(&file), "").await?;
                let err = refused(&resp, 400, "not_a_directory", "listing a file")?;
                snapshot(&ctx, "files__list__not_a_directory", &err)?;
                refused(&list(&ctx, &s(&dir.join("gone")), "").await?, 404, "not_found", "missing")?;
                std::fs::create_dir(dir.join("empty"))?;
                let got = entries(&list(&ctx, &s(&dir.join("empty")), "").await?)?;
                ensure!(got.is_empty(), "{got:?}");
                Ok(())
            },
        },
    ]
}
