//! GET /files/exists: `{exists: bool}`, a guard refusal still a refusal (issue 11, wire
//! contract `files_exists`).

use super::support::{area, base, exists, put, refused, s, snapshot};
use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/exists/001",
            spec: "files_exists: GET /files/exists?path= answers 200 `{exists: true}` for a file, a directory and a link, `{exists: false}` for a missing path.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_exists"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "exists-001")?;
                let file = put(&dir, "there.txt", "x")?;
                std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling"))?;
                for (path, want) in [(file.clone(), true), (dir.clone(), true), (dir.join("dangling"), true), (dir.join("absent"), false), (dir.join("absent/deeper"), false)] {
                    let resp = exists(&ctx, &s(&path)).await?;
                    resp.expect_status(200)?;
                    let body = resp.json()?;
                    ensure!(body == json!({"exists": want}), "{}: {body}", path.display());
                }
                let body = exists(&ctx, &s(&file)).await?.json()?;
                snapshot(&ctx, "files__exists__true", &body)?;
                Ok(())
            },
        },
        case! {
            id: "files/exists/002",
            spec: "A guard refusal is still the refusal, never `{exists: false}`: outside the allowed roots 403 `path_not_allowed`, a denied path 403 `path_denied` (present or not).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_exists"],
            codes: ["path_not_allowed", "path_denied"],
            run: |ctx| async move {
                let root = base(&ctx)?;
                let resp = exists(&ctx, &s(&root.join("outside/secret.txt"))).await?;
                refused(&resp, 403, "path_not_allowed", "outside")?;
                let resp = exists(&ctx, &s(&root.join("outside/nothing.txt"))).await?;
                refused(&resp, 403, "path_not_allowed", "outside, missing")?;
                let resp = exists(&ctx, &s(&root.join("root/.env"))).await?;
                refused(&resp, 403, "path_denied", ".env")?;
                let resp = exists(&ctx, &s(&root.join("root/x/private/none"))).await?;
                refused(&resp, 403, "path_denied", "private/**, missing")?;
                Ok(())
            },
        },
    ]
}
