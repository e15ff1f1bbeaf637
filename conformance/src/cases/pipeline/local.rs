//! `X-Svc-Local: 1` on every answer.

use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use reqwest::Method;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "pipeline/local/001",
            spec: "Every response, errors included, carries `X-Svc-Local: 1`: health, capabilities, commands, system info, an unmatched path, a bad body, and the typed size refusals of the HTTP layer, inside and outside /v1.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["health", "capabilities", "commands_list", "capabilities_check", "system_info"],
            codes: ["not_found", "invalid_request", "uri_too_long", "headers_too_large", "endpoint_disabled"],
            run: |ctx| async move {
                let long = format!("?q={}", "a".repeat(9000));
                let big = "b".repeat(40 * 1024);
                let requests = [
                    ("GET /health", ctx.get("/health"), 200),
                    ("GET /capabilities", ctx.get("/capabilities"), 200),
                    ("GET /commands", ctx.get("/commands"), 200),
                    ("GET /no/such/path", ctx.get("/no/such/path"), 404),
                    ("GET /system/info", ctx.get("/system/info"), 200),
                    ("POST /capabilities/check", ctx.request(Method::POST, "/capabilities/check").header("content-type", "application/json").body("{not json"), 400),
                    ("GET /v1/models", ctx.get("/v1/models"), 404),
                    ("long URI", ctx.get(&format!("/health{long}")), 414),
                    ("long /v1 URI", ctx.get(&format!("/v1/models{long}")), 414),
                    ("big headers", ctx.get("/capabilities").header("x-big", big.as_str()), 431),
                ];
                for (what, rb, status) in requests {
                    let resp = ctx.send(rb).await?;
                    resp.expect_status(status).with_context(|| what.to_owned())?;
                    ensure!(resp.header("x-svc-local") == Some("1"), "{what}: X-Svc-Local missing\n{}", resp.describe());
                }
                Ok(())
            },
        },
        case! {
            id: "pipeline/local/002",
            spec: "A refused token (401) carries `X-Svc-Local: 1` too.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::GET, "/capabilities")).await?;
                resp.expect_error(401, "unauthorized")?;
                ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local missing on 401\n{}", resp.describe());
                Ok(())
            },
        },
    ]
}
