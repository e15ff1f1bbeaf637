//! Authentication, policy admission, limits and the audit log.

use super::requests::audit_lines;
use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

fn with_token(ctx: &Ctx, method: Method, path: &str, token: &str) -> reqwest::RequestBuilder {
    ctx.anonymous(method, path).bearer_auth(token)
}

async fn identity_of(ctx: &Ctx, rb: reqwest::RequestBuilder) -> anyhow::Result<String> {
    let resp: Resp = ctx.send(rb).await?;
    resp.expect_status(200)?;
    Ok(resp.json()?["identity_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

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
            id: "pipeline/auth/001",
            spec: "Authenticate: missing or wrong token: 401 `unauthorized`.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::GET, "/capabilities")).await?;
                resp.expect_error(401, "unauthorized")?;
                let resp = ctx.send(with_token(&ctx, Method::GET, "/capabilities", "not-a-token")).await?;
                resp.expect_error(401, "unauthorized")?;
                let resp = ctx.send(ctx.anonymous(Method::GET, "/capabilities").header("authorization", "Basic YWRtaW4tdG9rZW4=")).await?;
                resp.expect_error(401, "unauthorized")?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/002",
            spec: "The token is accepted as `Authorization: Bearer <token>` or as `X-Access-Token`, and names the caller's identity.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let id = identity_of(&ctx, with_token(&ctx, Method::GET, "/capabilities", "admin-token")).await?;
                ensure!(id == "admin", "Bearer: {id}");
                let id = identity_of(&ctx, ctx.anonymous(Method::GET, "/capabilities").header("x-access-token", "reader-token")).await?;
                ensure!(id == "reader", "X-Access-Token: {id}");
                let id = identity_of(&ctx, with_token(&ctx, Method::GET, "/capabilities", "deployer-token")).await?;
                ensure!(id == "deployer", "token from token_env: {id}");
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/003",
            spec: "Two different `X-Access-Token` values: 400 `ambiguous_credentials`; the same value twice is one credential.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["ambiguous_credentials"],
            run: |ctx| async move {
                let rb = ctx.anonymous(Method::GET, "/capabilities")
                    .header("x-access-token", "admin-token")
                    .header("x-access-token", "reader-token");
                ctx.send(rb).await?.expect_error(400, "ambiguous_credentials")?;
                let rb = ctx.anonymous(Method::GET, "/capabilities")
                    .header("x-access-token", "admin-token")
                    .header("x-access-token", "admin-token");
                ctx.send(rb).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/004",
            spec: "Two different credential values in one request (Bearer and X-Access-Token) are ambiguous: 400.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["ambiguous_credentials"],
            run: |ctx| async move {
                let rb = with_token(&ctx, Method::GET, "/capabilities", "admin-token").header("x-access-token", "reader-token");
                ctx.send(rb).await?.expect_error(400, "ambiguous_credentials")?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/005",
            spec: "GET /health is the only route that skips authentication.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["health", "commands_list"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                ctx.send(ctx.anonymous(Method::GET, "/health")).await?.expect_status(200)?;
                ctx.send(ctx.anonymous(Method::GET, "/commands")).await?.expect_error(401, "unauthorized")?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/006",
            spec: "Authentication comes before policy: a disabled endpoint answers 401 to a caller without a token, 404 `endpoint_disabled` to one with.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["browser_status"],
            codes: ["unauthorized", "endpoint_disabled"],
            run: |ctx| async move {
                ctx.send(ctx.anonymous(Method::GET, "/browser")).await?.expect_error(401, "unauthorized")?;
                let resp = ctx.send(with_token(&ctx, Method::GET, "/browser", "admin-token")).await?;
                resp.expect_error(404, "endpoint_disabled")?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/007",
            spec: "`SVC_SERVER_TOKEN` alone gives one identity holding every scope; without it the caller is refused.",
            profile: &profiles::SERVER_TOKEN,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                ctx.send(ctx.anonymous(Method::GET, "/capabilities")).await?.expect_error(401, "unauthorized")?;
                let resp = ctx.send(with_token(&ctx, Method::GET, "/capabilities", "the-one-token")).await?;
                resp.expect_status(200)?;
                let doc = resp.json()?;
                ensure!(doc["scopes"] == json!(["*"]), "scopes: {}", doc["scopes"]);
                ensure!(doc["endpoints"]["commands_run"]["allowed"] == true, "every scope");
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/008",
            spec: "With no token configured every caller is the identity `anonymous`.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let id = identity_of(&ctx, ctx.anonymous(Method::GET, "/capabilities")).await?;
                ensure!(id == "anonymous", "identity: {id}");
                let id = identity_of(&ctx, with_token(&ctx, Method::GET, "/capabilities", "whatever")).await?;
                ensure!(id == "anonymous", "a token to a server without tokens changes nothing: {id}");
                Ok(())
            },
        },
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
            codes: ["endpoint_disabled", "not_implemented"],
            run: |ctx| async move {
                disabled_by(&ctx, Method::GET, "/processes", "process_list", "env:SVC_SERVER_ENABLED_GROUPS:process").await?;
                // dev_tools is opt-in; the variable switched it on (the endpoint itself is pending).
                ctx.send(ctx.get("/code/languages")).await?.expect_error(501, "not_implemented")?;
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
            codes: ["endpoint_disabled", "not_implemented"],
            run: |ctx| async move {
                disabled_by(&ctx, Method::GET, "/system/disk", "system_disk", "code:enable_group:system").await?;
                ctx.send(ctx.get("/browser/screenshot")).await?.expect_error(501, "not_implemented")?;
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
            codes: ["not_implemented"],
            run: |ctx| async move {
                // terminal is off by group, pty_list on by endpoint rule: it reaches its handler.
                ctx.send(ctx.get("/pty")).await?.expect_error(501, "not_implemented")?;
                let caps = ctx.send(ctx.get("/capabilities")).await?.json()?;
                ensure!(caps["endpoints"]["pty_list"]["enabled"] == true, "pty_list: {}", caps["endpoints"]["pty_list"]);
                ensure!(caps["endpoints"]["pty_get"]["rule"] == "policy:groups.terminal", "pty_get: {}", caps["endpoints"]["pty_get"]);
                Ok(())
            },
        },
        case! {
            id: "pipeline/limits/001",
            spec: "Rate limits: past the limit, 429 `rate_limited` with an integer `Retry-After`.",
            profile: &profiles::LIMITS,
            tags: [],
            endpoints: ["commands_list"],
            codes: ["rate_limited"],
            run: |ctx| async move {
                ctx.send(ctx.get("/commands")).await?.expect_status(200)?;
                ctx.send(ctx.get("/commands")).await?.expect_status(200)?;
                let resp = ctx.send(ctx.get("/commands")).await?;
                let body = resp.expect_error(429, "rate_limited")?;
                ensure!(body["endpoint"] == "commands_list", "body: {body}");
                let retry: u64 = resp.header("retry-after").unwrap_or_default().parse()
                    .map_err(|_| anyhow::anyhow!("Retry-After must be an integer: {:?}", resp.header("retry-after")))?;
                ensure!((1..=60).contains(&retry), "Retry-After {retry} within the 2/m window");
                Ok(())
            },
        },
        case! {
            id: "pipeline/limits/002",
            spec: "Concurrency limits: with every slot in use, 429 `concurrency_limited` with `Retry-After`; the slot frees when the call ends.",
            profile: &profiles::LIMITS,
            tags: [],
            endpoints: ["commands_run"],
            codes: ["concurrency_limited"],
            run: |ctx| async move {
                let first = ctx.send(ctx.post_json("/commands/nap", &json!({})));
                let second = async {
                    tokio::time::sleep(Duration::from_millis(400)).await;
                    ctx.send(ctx.post_json("/commands/nap", &json!({}))).await
                };
                let (first, second) = tokio::join!(first, second);
                first?.expect_status(200)?;
                let second = second?;
                second.expect_error(429, "concurrency_limited")?;
                ensure!(second.header("retry-after").is_some_and(|v| v.parse::<u64>().is_ok()), "integer Retry-After");
                ctx.send(ctx.post_json("/commands/nap", &json!({}))).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/audit/001",
            spec: "`audit: all` writes one JSON line per call: time, identity, endpoint id, decision, code, rule, status, duration.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["commands_list"],
            codes: ["missing_scope"],
            run: |ctx| async move {
                ctx.send(with_token(&ctx, Method::GET, "/commands?audit_probe=1", "admin-token")).await?.expect_status(200)?;
                let rb = with_token(&ctx, Method::POST, "/commands/greet", "reader-token").json(&json!({"who": "x"}));
                ctx.send(rb).await?.expect_error(403, "missing_scope")?;
                let lines = audit_lines(&ctx, 2).await?;
                let allowed = lines.iter().find(|l| l["endpoint"] == "commands_list" && l["identity"] == "admin")
                    .ok_or_else(|| anyhow::anyhow!("no line for the allowed call: {lines:?}"))?;
                ensure!(allowed["decision"] == "allow" && allowed["status"] == 200 && allowed["code"].is_null(), "{allowed}");
                ensure!(allowed["duration_ms"].is_number() && allowed["time"].is_string(), "{allowed}");
                ensure!(!allowed.to_string().contains("audit_probe"), "the query string is not logged");
                let denied = lines.iter().find(|l| l["endpoint"] == "commands_run" && l["identity"] == "reader")
                    .ok_or_else(|| anyhow::anyhow!("no line for the denied call: {lines:?}"))?;
                ensure!(denied["decision"] == "deny" && denied["code"] == "missing_scope" && denied["status"] == 403, "{denied}");
                ensure!(!lines.iter().any(|l| l.to_string().contains("reader-token")), "tokens never reach the audit");
                Ok(())
            },
        },
        case! {
            id: "pipeline/audit/002",
            spec: "`audit: deny` records refusals only, with the rule of a disabled endpoint.",
            profile: &profiles::POLICY,
            tags: [],
            endpoints: ["health", "system_info"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move {
                ctx.send(ctx.get("/health")).await?.expect_status(200)?;
                ctx.send(ctx.get("/system/info")).await?.expect_error(404, "endpoint_disabled")?;
                let lines = audit_lines(&ctx, 1).await?;
                ensure!(lines.iter().all(|l| l["decision"] == "deny"), "only refusals: {lines:?}");
                let line = lines.iter().find(|l| l["endpoint"] == "system_info")
                    .ok_or_else(|| anyhow::anyhow!("no line for system_info: {lines:?}"))?;
                ensure!(line["rule"] == "policy:endpoints.system_info" && line["identity"] == "anonymous", "{line}");
                Ok(())
            },
        },
    ]
}
