//! POST /files/mkdir: `{path, parents?}` (issue 11, wire contract `files_mkdir`).

use super::support::{area, entry_of, mkdir, put, refused, s, snapshot};
use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/mkdir/001",
            spec: "files_mkdir: POST /files/mkdir `{path}` creates the directory and answers 200 with its entry (type `dir`); `parents: true` creates the missing parents too.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_mkdir"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "mkdir-001")?;
                let made = dir.join("made");
                let entry = entry_of(&mkdir(&ctx, &json!({"path": s(&made)})).await?)?;
                ensure!(entry["type"] == "dir" && entry["path"] == s(&made) && made.is_dir(), "{entry}");
                snapshot(&ctx, "files__mkdir__entry", &json!({"name": entry["name"], "path": entry["path"], "type": entry["type"]}))?;
                let deep = dir.join("x/y/z");
                let entry = entry_of(&mkdir(&ctx, &json!({"path": s(&deep), "parents": true})).await?)?;
                ensure!(entry["type"] == "dir" && deep.is_dir(), "{entry}");
                let again = entry_of(&mkdir(&ctx, &json!({"path": s(&deep), "parents": true})).await?)?;
                ensure!(again["type"] == "dir", "with `parents` an existing directory is fine (mkdir -p): {again}");
                Ok(())
            },
        },
        case! {
            id: "files/mkdir/002",
            spec: "Without `parents` a missing parent is 404 `not_found` and an existing directory is 409 `file_exists`; an existing file is 409 `file_exists` either way; an unknown member is 400 `invalid_request`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_mkdir"],
            codes: ["not_found", "file_exists", "invalid_request"],
            run: |ctx| async move {
                let dir = area(&ctx, "mkdir-002")?;
                let resp = mkdir(&ctx, &json!({"path": s(&dir.join("a/b"))})).await?;
                refused(&resp, 404, "not_found", "missing parent")?;
                ensure!(!dir.join("a").exists(), "nothing created");
                std::fs::create_dir(dir.join("there"))?;
                refused(&mkdir(&ctx, &json!({"path": s(&dir.join("there"))})).await?, 409, "file_exists", "existing dir")?;
                let file = put(&dir, "file.txt", "x")?;
                refused(&mkdir(&ctx, &json!({"path": s(&file)})).await?, 409, "file_exists", "existing file")?;
                refused(&mkdir(&ctx, &json!({"path": s(&file), "parents": true})).await?, 409, "file_exists", "existing file, parents")?;
                let resp = mkdir(&ctx, &json!({"path": s(&dir.join("m")), "mode": "0700"})).await?;
                let err = refused(&resp, 400, "invalid_request", "unknown member")?;
                ensure!(err.to_string().contains("mode"), "names the member: {err}");
                Ok(())
            },
        },
    ]
}
