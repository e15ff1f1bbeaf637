//! Scopes: an endpoint's and a command's own.

use super::auth::with_token;
use crate::{Case, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "pipeline/scope/001",
            spec: "The caller must hold the endpoint's scopes, else 403 `missing_scope`.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["commands_run", "commands_list"],
            codes: ["missing_scope"],
            run: |ctx| async move {
                let rb = with_token(&ctx, Method::POST, "/commands/greet", "reader-token").json(&json!({"who": "x"}));
                let body = ctx.send(rb).await?.expect_error(403, "missing_scope")?;
                ensure!(body["endpoint"] == "commands_run", "body: {body}");
                ensure!(body["error"].as_str().unwrap_or_default().contains("commands:run"), "names the scope: {body}");
                ctx.send(with_token(&ctx, Method::GET, "/commands", "reader-token")).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/scope/002",
            spec: "A command's own scopes are checked too: 403 `missing_scope` for a caller lacking one.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["commands_run"],
            codes: ["missing_scope"],
            run: |ctx| async move {
                let rb = with_token(&ctx, Method::POST, "/commands/deploy", "deployer-token").json(&json!({}));
                let body = ctx.send(rb).await?.expect_error(403, "missing_scope")?;
                ensure!(body["error"].as_str().unwrap_or_default().contains("ops:deploy"), "names the scope: {body}");
                let rb = with_token(&ctx, Method::POST, "/commands/greet", "deployer-token").json(&json!({"who": "d"}));
                ctx.send(rb).await?.expect_status(200)?;
                let rb = with_token(&ctx, Method::POST, "/commands/deploy", "admin-token").json(&json!({}));
                ctx.send(rb).await?.expect_status(200)?;
                Ok(())
            },
        },
    ]
}
