//! POST /v1/files: JSON with base64 `data` (agents spec 4.10).

use crate::{Case, Ctx, case, profiles};
use anyhow::ensure;
use serde_json::{Value, json};

/// `hello world` in base64.
const HELLO: &str = "aGVsbG8gd29ybGQ=";

async fn refused(
    ctx: &Ctx,
    body: Value,
    status: u16,
    code: &str,
    param: &str,
) -> anyhow::Result<()> {
    let resp = ctx.send(ctx.post_json("/v1/files", &body)).await?;
    let err = resp.expect_error(status, code)?;
    ensure!(
        err["error"]["param"] == param,
        "{body}: expected param {param}: {err}"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/files/001",
            spec: "POST /v1/files takes JSON `purpose: user_data`, `filename`, base64 `data`, and answers the file object with its id and decoded size.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_files_create"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.post_json("/v1/files", &json!({"purpose": "user_data", "filename": "notes.txt", "data": HELLO}))).await?;
                resp.expect_status(200)?;
                let file = resp.json()?;
                ensure!(file["id"].as_str().is_some_and(|id| id.starts_with("file-")), "{file}");
                ensure!(file["object"] == "file" && file["bytes"] == 11 && file["filename"] == "notes.txt", "{file}");
                ensure!(file["purpose"] == "user_data" && file["status"] == "processed", "{file}");
                let mut shown = file.clone();
                shown["id"] = json!("[file id]");
                ctx.snapshot("agents__files__object", &shown)
            },
        },
        case! {
            id: "agents/files/002",
            spec: "Wrong purpose, missing fields, bad base64 and unknown keys are 400 naming `param`.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_files_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                refused(&ctx, json!({"purpose": "fine-tune", "filename": "a", "data": HELLO}), 400, "invalid_request", "purpose").await?;
                refused(&ctx, json!({"filename": "a", "data": HELLO}), 400, "invalid_request", "purpose").await?;
                refused(&ctx, json!({"purpose": "user_data", "data": HELLO}), 400, "invalid_request", "filename").await?;
                refused(&ctx, json!({"purpose": "user_data", "filename": "a"}), 400, "invalid_request", "data").await?;
                refused(&ctx, json!({"purpose": "user_data", "filename": "a", "data": "%%% not base64"}), 400, "invalid_request", "data").await?;
                refused(&ctx, json!({"purpose": "user_data", "filename": "a/b", "data": HELLO}), 400, "invalid_request", "filename").await?;
                refused(&ctx, json!({"purpose": "user_data", "filename": "a", "data": HELLO, "expires_after": 3}), 400, "invalid_request", "expires_after").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/files/003",
            spec: "A file over `SVC_AGENTS_MAX_FILE_BYTES` (decoded) is 413 `payload_too_large` naming `data`.",
            profile: &profiles::AGENTS_SMALL_FILES,
            tags: [],
            endpoints: ["agents_files_create"],
            codes: ["payload_too_large"],
            run: |ctx| async move {
                use base64::Engine;
                let fits = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; 1024]);
                let over = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; 1025]);
                let ok = ctx.send(ctx.post_json("/v1/files", &json!({"purpose": "user_data", "filename": "a", "data": fits}))).await?;
                ok.expect_status(200)?;
                refused(&ctx, json!({"purpose": "user_data", "filename": "a", "data": over}), 413, "payload_too_large", "data").await
            },
        },
    ]
}
