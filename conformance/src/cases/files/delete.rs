//! DELETE /files: `{path, deleted: true}`, `recursive` for a non-empty directory (issue 11,
//! wire contract `files_delete`).

use super::support::{area, base, delete, put, refused, s, snapshot};
use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/delete/001",
            spec: "files_delete: DELETE /files?path= removes a file or an empty directory and answers 200 `{path, deleted: true}`; a link is removed, never its target.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_delete"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "delete-001")?;
                let file = put(&dir, "gone.txt", "bye")?;
                let resp = delete(&ctx, &s(&file), "").await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body == json!({"path": s(&file), "deleted": true}), "{body}");
                ensure!(!file.exists(), "deleted");
                snapshot(&ctx, "files__delete__deleted", &body)?;
                std::fs::create_dir(dir.join("empty"))?;
                delete(&ctx, &s(&dir.join("empty")), "").await?.expect_status(200)?;
                ensure!(!dir.join("empty").exists(), "empty directory deleted");
                let target = base(&ctx)?.join("shared/common.txt");
                std::os::unix::fs::symlink(&target, dir.join("link"))?;
                delete(&ctx, &s(&dir.join("link")), "").await?.expect_status(200)?;
                ensure!(std::fs::symlink_metadata(dir.join("link")).is_err() && target.is_file(), "the link went, its target stayed");
                Ok(())
            },
        },
        case! {
            id: "files/delete/002",
            spec: "A non-empty directory without `recursive=true` is 409 `directory_not_empty` and stays whole; with it the tree is removed; a missing path is 404 `not_found`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_delete"],
            codes: ["directory_not_empty", "not_found"],
            run: |ctx| async move {
                let dir = area(&ctx, "delete-002")?;
                put(&dir, "tree/a/b.txt", "b")?;
                put(&dir, "tree/c.txt", "c")?;
                let tree = dir.join("tree");
                let resp = delete(&ctx, &s(&tree), "").await?;
                let err = refused(&resp, 409, "directory_not_empty", "non-empty")?;
                snapshot(&ctx, "files__delete__directory_not_empty", &err)?;
                ensure!(tree.join("a/b.txt").is_file() && tree.join("c.txt").is_file(), "untouched");
                refused(&delete(&ctx, &s(&tree), "&recursive=false").await?, 409, "directory_not_empty", "recursive=false")?;
                let resp = delete(&ctx, &s(&tree), "&recursive=true").await?;
                resp.expect_status(200)?;
                ensure!(resp.json()? == json!({"path": s(&tree), "deleted": true}) && !tree.exists(), "{}", resp.describe());
                refused(&delete(&ctx, &s(&tree), "").await?, 404, "not_found", "already gone")?;
                Ok(())
            },
        },
    ]
}
