//! POST /files/move: `{from, to, overwrite?}` (issue 11, wire contract `files_move`).

use super::support::{area, base, entry_of, mv, put, refused, s, snapshot};
use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/move/001",
            spec: "files_move: POST /files/move `{from, to}` renames a file or a directory and answers 200 with the entry of `to`; `from` is gone.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_move"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "move-001")?;
                let from = put(&dir, "old.txt", "moving")?;
                let to = dir.join("new.txt");
                let entry = entry_of(&mv(&ctx, &json!({"from": s(&from), "to": s(&to)})).await?)?;
                ensure!(entry["path"] == s(&to) && entry["type"] == "file" && entry["size"] == 6, "{entry}");
                ensure!(!from.exists() && std::fs::read(&to)? == b"moving", "moved");
                snapshot(&ctx, "files__move__entry", &entry)?;
                put(&dir, "tree/leaf.txt", "leaf")?;
                let entry = entry_of(&mv(&ctx, &json!({"from": s(&dir.join("tree")), "to": s(&dir.join("moved-tree"))})).await?)?;
                ensure!(entry["type"] == "dir" && dir.join("moved-tree/leaf.txt").is_file(), "{entry}");
                Ok(())
            },
        },
        case! {
            id: "files/move/002",
            spec: "An existing `to` is 409 `file_exists` unless `overwrite: true`; nothing moves on a refusal; a missing `from` is 404 `not_found`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_move"],
            codes: ["file_exists", "not_found"],
            run: |ctx| async move {
                let dir = area(&ctx, "move-002")?;
                let from = put(&dir, "a.txt", "a")?;
                let to = put(&dir, "b.txt", "b")?;
                let resp = mv(&ctx, &json!({"from": s(&from), "to": s(&to)})).await?;
                let err = refused(&resp, 409, "file_exists", "existing to")?;
                snapshot(&ctx, "files__move__file_exists", &err)?;
                ensure!(std::fs::read(&from)? == b"a" && std::fs::read(&to)? == b"b", "nothing moved");
                refused(&mv(&ctx, &json!({"from": s(&from), "to": s(&to), "overwrite": false})).await?, 409, "file_exists", "overwrite false")?;
                let entry = entry_of(&mv(&ctx, &json!({"from": s(&from), "to": s(&to), "overwrite": true})).await?)?;
                ensure!(entry["size"] == 1 && std::fs::read(&to)? == b"a" && !from.exists(), "{entry}");
                refused(&mv(&ctx, &json!({"from": s(&dir.join("absent")), "to": s(&dir.join("c.txt"))})).await?, 404, "not_found", "missing from")?;
                Ok(())
            },
        },
        case! {
            id: "files/move/003",
            spec: "Both paths are guarded: a `from` or `to` outside the allowed roots is 403 `path_not_allowed`, in a read-only tree 403 `read_only`, denied 403 `path_denied`; nothing moves.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_move"],
            codes: ["path_not_allowed", "read_only", "path_denied"],
            run: |ctx| async move {
                let dir = area(&ctx, "move-003")?;
                let root = base(&ctx)?;
                let mine = put(&dir, "mine.txt", "mine")?;
                let outside = root.join("outside/secret.txt");
                let frozen = root.join("root/ro/frozen.txt");
                for (from, to, code) in [
                    (outside.clone(), dir.join("stolen.txt"), "path_not_allowed"),
                    (mine.clone(), root.join("outside/dropped.txt"), "path_not_allowed"),
                    (frozen.clone(), dir.join("thawed.txt"), "read_only"),
                    (mine.clone(), root.join("root/ro/mine.txt"), "read_only"),
                    (mine.clone(), dir.join(".env"), "path_denied"),
                    (root.join("root/.env"), dir.join("env.txt"), "path_denied"),
                ] {
                    let resp = mv(&ctx, &json!({"from": s(&from), "to": s(&to)})).await?;
                    refused(&resp, 403, code, &format!("{} -> {}", from.display(), to.display()))?;
                    ensure!(!to.exists(), "{} was created", to.display());
                }
                ensure!(mine.is_file() && outside.is_file() && frozen.is_file(), "nothing moved");
                Ok(())
            },
        },
    ]
}
