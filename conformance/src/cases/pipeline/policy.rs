//! Policy admission: endpoints and groups switched off by configuration,
//! presets, the environment or the launching program, each naming its rule.

use crate::{Case, Ctx, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use serde_json::json;

/// Asserts that `path` is switched off by exactly `rule`.
async fn disabled_by(
    ctx: &Ctx,
    method: Method,
    path: &str,
    endpoint: &str,
    rule: &str,
) -> anyhow::Result<()> {
    let resp = ctx.send(ctx.request(method, path).json(&json!({}))).await?;
    let body = resp.expect_error(404, "endpoint_disabled")?;
    let (got_rule, got_endpoint) = if path.starts_with("/v1/") {
        (&body["error"]["rule"], &body["error"]["endpoint"])
    } else {
        (&body["rule"], &body["endpoint"])
    };
    ensure!(
        got_rule == rule,
        "expected rule {rule}, got {got_rule}: {body}"
    );
    ensure!(
        got_endpoint == endpoint,
        "expected endpoint {endpoint}, got {got_endpoint}"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "pipeline/policy/001",
            spec: "An endpoint switched off by `server.endpoints` is 404 `endpoint_disabled` with rule `policy:endpoints.<id>`.",
            profile: &profiles::POLICY,
            tags: [],
            endpoints: ["system_info"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move { disabled_by(&ctx, Method::GET, "/system/info", "system_info", "policy:endpoints.system_info").await },
        },
        case! {
            id: "pipeline/policy/002",
            spec: "A group switched off by `server.groups` disables its endpoints with rule `policy:groups.<g>`.",
            profile: &profiles::POLICY,
            tags: [],
            endpoints: ["pty_get"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move { disabled_by(&ctx, Method::GET, "/pty/abc", "pty_get", "policy:groups.terminal").await },
        },
        case! {
            id: "pipeline/policy/003",
            spec: "The `read-only` preset disables endpoints that write or execute, with rule `preset:read-only`; reading endpoints stay on.",
            profile: &profiles::POLICY,
            tags: [],
            endpoints: ["files_write", "commands_run", "files_read"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move {
                disabled_by(&ctx, Method::PUT, "/files/content?path=/tmp/x", "files_write", "preset:read-only").await?;
                disabled_by(&ctx, Method::POST, "/commands/anything", "commands_run", "preset:read-only").await?;
                ctx.send(ctx.get("/commands")).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/policy/004",
            spec: "`SVC_SERVER_ENABLED_GROUPS` switches groups on (`g`) or off (`-g`), with rule `env:SVC_SERVER_ENABLED_GROUPS:<g>`.",
            profile: &profiles::POLICY,
            tags: [],
            endpoints: ["process_list", "code_languages"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move {
                disabled_by(&ctx, Method::GET, "/processes", "process_list", "env:SVC_SERVER_ENABLED_GROUPS:process").await?;
                // dev_tools is opt-in; the variable switched it on.
                ctx.send(ctx.get("/code/languages")).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/policy/005",
            spec: "Groups that are opt-in by default (agents, browser, dev_tools) are off with rule `default:opt-in:<g>`.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["browser_navigate", "code_run", "agents_sessions_list"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move {
                disabled_by(&ctx, Method::POST, "/browser/navigate", "browser_navigate", "default:opt-in:browser").await?;
                disabled_by(&ctx, Method::POST, "/code/run", "code_run", "default:opt-in:dev_tools").await?;
                disabled_by(&ctx, Method::GET, "/v1/agents/sessions", "agents_sessions_list", "default:opt-in:agents").await?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/policy/006",
            spec: "The launching program's group switches carry rule `code:enable_group:<g>`.",
            profile: &profiles::CODE_LAYER,
            tags: ["needs:code-layer"],
            endpoints: ["system_disk", "browser_screenshot"],
            codes: ["endpoint_disabled", "browser_not_running"],
            run: |ctx| async move {
                disabled_by(&ctx, Method::GET, "/system/disk", "system_disk", "code:enable_group:system").await?;
                // Switched on by code, the route reaches its handler: no browser runs yet.
                ctx.send(ctx.get("/browser/screenshot")).await?.expect_error(409, "browser_not_running")?;
                let caps = ctx.send(ctx.get("/capabilities")).await?.json()?;
                ensure!(caps["endpoints"]["browser_screenshot"]["enabled"] == true, "browser switched on by code");
                Ok(())
            },
        },
        case! {
            id: "pipeline/policy/007",
            spec: "One layer decides: an endpoint rule wins over its group's switch (a group name is an alias for its endpoint ids).",
            profile: &profiles::POLICY,
            tags: [],
            endpoints: ["pty_list"],
            codes: [],
            run: |ctx| async move {
                // terminal is off by group, pty_list on by endpoint rule: it reaches its handler.
                let listed = ctx.send(ctx.get("/pty")).await?;
                listed.expect_status(200)?;
                ensure!(listed.json()?["ptys"] == serde_json::json!([]), "{}", listed.describe());
                let caps = ctx.send(ctx.get("/capabilities")).await?.json()?;
                ensure!(caps["endpoints"]["pty_list"]["enabled"] == true, "pty_list: {}", caps["endpoints"]["pty_list"]);
                ensure!(caps["endpoints"]["pty_get"]["rule"] == "policy:groups.terminal", "pty_get: {}", caps["endpoints"]["pty_get"]);
                Ok(())
            },
        },
    ]
}
