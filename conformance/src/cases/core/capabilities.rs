//! GET /capabilities and POST /capabilities/check (second document, 2.1 and 4.2).

use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, ensure};
use reqwest::Method;
use serde_json::{Value, json};

const DOCUMENT_FIELDS: &[&str] = &[
    "groups",
    "group_summary",
    "identity_id",
    "scopes",
    "preset",
    "revision",
    "warnings",
    "api_version",
    "server_version",
    "configured",
    "terminal_port",
    "endpoints",
];
const ENDPOINT_FIELDS: &[&str] = &[
    "method", "path", "group", "enabled", "allowed", "reason", "rule", "scopes", "limits", "paths",
    "params",
];
const GROUP_SIZES: &[(&str, u64)] = &[
    ("core", 3),
    ("commands", 2),
    ("file_ops", 12),
    ("process", 8),
    ("terminal", 6),
    ("system", 6),
    ("dev_tools", 3),
    ("browser", 8),
    ("agents", 70),
];

async fn document(ctx: &Ctx) -> anyhow::Result<Value> {
    let resp = ctx.send(ctx.get("/capabilities")).await?;
    resp.expect_status(200)?;
    resp.json()
}

async fn check(ctx: &Ctx, body: Value) -> anyhow::Result<Value> {
    let resp = ctx
        .send(ctx.post_json("/capabilities/check", &body))
        .await?;
    resp.expect_status(200)?;
    resp.json()
}

fn shape_ok(doc: &Value) -> anyhow::Result<()> {
    for field in DOCUMENT_FIELDS {
        ensure!(
            doc.get(*field).is_some(),
            "document field `{field}` missing"
        );
    }
    let endpoints = doc["endpoints"]
        .as_object()
        .context("`endpoints` is an object keyed by id")?;
    ensure!(
        endpoints.len() == 118,
        "118 endpoints, got {}",
        endpoints.len()
    );
    for (id, e) in endpoints {
        for field in ENDPOINT_FIELDS {
            ensure!(
                e.get(*field).is_some(),
                "endpoint {id}: field `{field}` missing"
            );
        }
        let allowed = e["allowed"].as_bool().context("allowed is a boolean")?;
        ensure!(
            allowed == e["reason"].is_null(),
            "endpoint {id}: reason iff not allowed: {e}"
        );
        ensure!(
            e["enabled"].as_bool().unwrap_or(true) != e["rule"].is_string(),
            "endpoint {id}: rule iff disabled: {e}"
        );
    }
    for (group, size) in GROUP_SIZES {
        let summary = &doc["group_summary"][group];
        ensure!(summary["total"] == *size, "group {group}: total {summary}");
        let counted = endpoints
            .values()
            .filter(|e| e["group"] == *group && e["enabled"] == true)
            .count();
        ensure!(
            summary["enabled"] == counted,
            "group {group}: enabled count is derived: {summary}"
        );
        ensure!(
            doc["groups"][group] == (counted > 0),
            "groups.{group} is derived"
        );
    }
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "core/capabilities/001",
            spec: "GET /capabilities returns, for each of the 118 endpoints and for the caller, method, path, group, enabled, allowed, reason, rule, scopes, limits, paths, params; and the document-level fields, with groups and group_summary derived.",
            profile: &profiles::ANY,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move { shape_ok(&document(&ctx).await?) },
        },
        case! {
            id: "core/capabilities/002",
            spec: "The default capabilities document (no configuration): anonymous caller, opt-in groups off, 10 MiB body limit.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let doc = document(&ctx).await?;
                ensure!(doc["configured"] == false && doc["identity_id"] == "anonymous", "{}", doc["identity_id"]);
                ensure!(doc["endpoints"]["health"]["limits"]["body_bytes"] == 10 * 1024 * 1024, "default limit");
                ctx.snapshot("core__capabilities__default", &doc)
            },
        },
        case! {
            id: "core/capabilities/003",
            spec: "Capabilities are per caller: `allowed` false with reason `missing_scope` where the identity lacks a scope.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let doc = ctx.send(ctx.anonymous(Method::GET, "/capabilities").bearer_auth("reader-token")).await?.json()?;
                shape_ok(&doc)?;
                ensure!(doc["identity_id"] == "reader" && doc["configured"] == true, "{}", doc["identity_id"]);
                let run = &doc["endpoints"]["commands_run"];
                ensure!(run["enabled"] == true && run["allowed"] == false && run["reason"] == "missing_scope", "{run}");
                ensure!(doc["endpoints"]["commands_list"]["allowed"] == true, "reader holds commands:read");
                let view: Value = json!({
                    "identity_id": doc["identity_id"],
                    "scopes": doc["scopes"],
                    "warnings": doc["warnings"],
                    "commands_list": doc["endpoints"]["commands_list"],
                    "commands_run": doc["endpoints"]["commands_run"],
                    "files_read": doc["endpoints"]["files_read"],
                });
                ctx.snapshot("core__capabilities__reader", &view)
            },
        },
        case! {
            id: "core/capabilities/004",
            spec: "A disabled endpoint shows `enabled` false, reason `endpoint_disabled` and the `rule` of the deciding layer; `preset` names the preset; `revision` changes with the configuration.",
            profile: &profiles::POLICY,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let doc = document(&ctx).await?;
                shape_ok(&doc)?;
                ensure!(doc["preset"] == "read-only", "preset: {}", doc["preset"]);
                for (id, rule) in [
                    ("system_info", "policy:endpoints.system_info"),
                    ("pty_get", "policy:groups.terminal"),
                    ("files_write", "preset:read-only"),
                    ("process_list", "env:SVC_SERVER_ENABLED_GROUPS:process"),
                    ("browser_status", "default:opt-in:browser"),
                ] {
                    let e = &doc["endpoints"][id];
                    ensure!(e["enabled"] == false && e["reason"] == "endpoint_disabled" && e["rule"] == rule, "{id}: {e}");
                }
                let rules: Value = doc["endpoints"].as_object().context("endpoints")?
                    .iter()
                    .map(|(id, e)| (id.clone(), e["rule"].clone()))
                    .collect::<serde_json::Map<_, _>>()
                    .into();
                ctx.snapshot("core__capabilities__policy_rules", &json!({"group_summary": doc["group_summary"], "rules": rules}))
            },
        },
        case! {
            id: "core/capabilities/005",
            spec: "A configured limit is reported on the endpoint it applies to.",
            profile: &profiles::LIMITS,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let doc = document(&ctx).await?;
                ensure!(doc["endpoints"]["commands_list"]["limits"]["rate"] == "2/m", "{}", doc["endpoints"]["commands_list"]["limits"]);
                ensure!(doc["endpoints"]["commands_run"]["limits"]["concurrency"] == 1, "concurrency");
                ensure!(doc["endpoints"]["capabilities_check"]["limits"]["body_bytes"] == 1024, "body_bytes");
                Ok(())
            },
        },
        case! {
            id: "core/capabilities/006",
            spec: "Issue 30: a client that started the server with `--terminal-port 0` could not learn the terminal port (`port: \"terminal\"` only); the document's `terminal_port` is the bound port, the one the terminal WebSocket answers on.",
            profile: &profiles::DEFAULT,
            tags: ["needs:terminal-port"],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let doc = document(&ctx).await?;
                let url = reqwest::Url::parse(ctx.terminal_url()?)?;
                let port = url.port_or_known_default().context("the terminal URL has a port")?;
                ensure!(doc["terminal_port"] == port, "terminal_port {} but the terminal listens on {port}", doc["terminal_port"]);
                ensure!(doc["endpoints"]["pty_connect"]["port"] == "terminal", "{}", doc["endpoints"]["pty_connect"]);
                Ok(())
            },
        },
        case! {
            id: "core/check/001",
            spec: "POST /capabilities/check answers whether one endpoint would be allowed, without running it.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["capabilities_check"],
            codes: [],
            run: |ctx| async move {
                let ok = check(&ctx, json!({"endpoint": "commands_run"})).await?;
                ensure!(ok["allowed"] == true && ok["reason"].is_null(), "{ok}");
                let off = check(&ctx, json!({"endpoint": "browser_start"})).await?;
                ensure!(off["allowed"] == false && off["reason"] == "endpoint_disabled" && off["rule"] == "default:opt-in:browser" && off["status"] == 404, "{off}");
                let unknown = check(&ctx, json!({"endpoint": "teleport"})).await?;
                ensure!(unknown["allowed"] == false && unknown["reason"] == "unknown_endpoint", "{unknown}");
                ctx.snapshot("core__check__answers", &json!({"allowed": ok, "disabled": off, "unknown": unknown}))
            },
        },
        case! {
            id: "core/check/002",
            spec: "The check answers per caller: `missing_scope` when the identity lacks the endpoint's scope.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities_check"],
            codes: ["missing_scope"],
            run: |ctx| async move {
                let rb = ctx.anonymous(Method::POST, "/capabilities/check").bearer_auth("reader-token").json(&json!({"endpoint": "commands_run"}));
                let answer = ctx.send(rb).await?.json()?;
                ensure!(answer["allowed"] == false && answer["reason"] == "missing_scope" && answer["status"] == 403, "{answer}");
                ensure!(answer["scope"] == "commands:run", "{answer}");
                Ok(())
            },
        },
        case! {
            id: "core/check/003",
            spec: "With a path and op the check answers the path guard's decision (path_not_allowed, path_denied, read_only, symlink_denied, invalid_path) without touching the path.",
            profile: &profiles::PATHS,
            tags: [],
            endpoints: ["capabilities_check"],
            codes: ["path_not_allowed", "path_denied", "read_only", "symlink_denied", "invalid_path"],
            run: paths_decisions,
        },
        case! {
            id: "core/check/004",
            spec: "A malformed check body is 400 naming the offending field.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["capabilities_check"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                for (body, param) in [
                    (json!({}), "endpoint"),
                    (json!({"endpoint": 7}), "endpoint"),
                    (json!({"endpoint": "files_read", "op": "chmod"}), "op"),
                    (json!({"endpoint": "health", "path": "/tmp"}), "path"),
                    (json!({"endpoint": "health", "colour": "red"}), "colour"),
                ] {
                    let resp = ctx.send(ctx.post_json("/capabilities/check", &body)).await?;
                    let err = resp.expect_error(400, "invalid_request")?;
                    let named = err["param"].as_str().unwrap_or_default();
                    let message = err["error"].as_str().unwrap_or_default();
                    ensure!(named == param || message.contains(param), "{body}: expected param {param}: {err}");
                }
                let resp = ctx.send(ctx.post_json("/capabilities/check", &json!({})).header("content-type", "text/plain")).await?;
                resp.expect_error(400, "invalid_request")?;
                let resp = ctx.send(ctx.request(Method::POST, "/capabilities/check").header("content-type", "application/json").body("{not json")).await?;
                resp.expect_error(400, "invalid_request")?;
                Ok(())
            },
        },
    ]
}

async fn paths_decisions(ctx: Ctx) -> anyhow::Result<()> {
    let dir = ctx
        .dir()
        .context("needs the profile directory")?
        .to_path_buf();
    let work = dir.join("work");
    std::os::unix::fs::symlink(&dir, work.join("link")).ok();
    let w = |rel: &str| work.join(rel).display().to_string();
    let cases = [
        (w("notes.txt"), "read", None),
        (w("new/file.txt"), "write", None),
        ("/etc/passwd".to_owned(), "read", Some("path_not_allowed")),
        (w("../outside.txt"), "read", Some("path_not_allowed")),
        (w("app/.env"), "read", Some("path_denied")),
        (w(".git/config"), "read", Some("path_denied")),
        (w("vendor/lib.txt"), "read", None),
        (w("vendor/lib.txt"), "write", Some("read_only")),
        (w("vendor/lib.txt"), "delete", Some("read_only")),
        (w("link/secret.txt"), "read", Some("symlink_denied")),
        ("".to_owned(), "read", Some("invalid_path")),
        (format!("{}\u{0}x", w("a")), "read", Some("invalid_path")),
    ];
    for (path, op, expected) in cases {
        let answer = check(
            &ctx,
            json!({"endpoint": "files_write", "path": path, "op": op}),
        )
        .await?;
        match expected {
            None => ensure!(answer["allowed"] == true, "{path} {op}: {answer}"),
            Some(code) => {
                ensure!(
                    answer["allowed"] == false && answer["reason"] == code,
                    "{path} {op}: expected {code}: {answer}"
                );
                ensure!(
                    answer["status"].is_u64(),
                    "the status the call would get: {answer}"
                );
            }
        }
    }
    ensure!(!work.join("new").exists(), "the check ran nothing");
    Ok(())
}
