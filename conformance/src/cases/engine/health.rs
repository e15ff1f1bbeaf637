//! The engine's health record and its descriptor (spec 2.3, 9): the protocol in
//! both, and the descriptor a private file that names where and how to reach it.

use super::support::{get, sandbox, sb, snapshot};
use crate::{Case, case, profiles};
use anyhow::{Context as _, anyhow, ensure};
use reqwest::Method;
use serde_json::Value;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/health/001",
            spec: "GET /v1/health answers the health record `{protocol: \"svc-engine/1\", version, pid, uptime_s, sessions}`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["health"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.request(Method::GET, "/v1/health")).await?;
                resp.expect_status(200)?;
                ensure!(resp.header("content-type").unwrap_or_default().starts_with("application/json"), "{}", resp.describe());
                let body = resp.json()?;
                let mut keys: Vec<&str> = body.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
                keys.sort_unstable();
                // `isolation` says whether sandboxes can be isolated here (an engine older
                // than isolation leaves it out).
                keys.retain(|k| *k != "isolation");
                ensure!(keys == ["pid", "protocol", "sessions", "uptime_s", "version"], "the record's fields: {body}");
                if let Some(isolation) = body.get("isolation") {
                    ensure!(isolation["available"].is_boolean() && (isolation["available"] == true || isolation["reason"].is_string()), "`isolation` is `{{available, reason?}}`, a reason when unavailable: {body}");
                }
                ensure!(body["protocol"] == "svc-engine/1", "{body}");
                ensure!(body["uptime_s"].as_u64().is_some_and(|u| u < 3600), "`uptime_s` counts seconds since the start: {body}");
                if let Some(dir) = ctx.dir() {
                    let descriptor: Value = serde_json::from_slice(&std::fs::read(dir.join("engine.json"))?)?;
                    ensure!(body["pid"] == descriptor["pid"] && body["version"] == descriptor["version"], "the health record and the descriptor name one engine: {body} vs {descriptor}");
                }
                snapshot(&ctx, "engine__health__record", &body)?;
                Ok(())
            },
        },
        case! {
            id: "engine/health/002",
            spec: "The descriptor `<state_dir>/engine.json` has mode 0600 and holds `{protocol: \"svc-engine/1\", pid, host: \"127.0.0.1\", port, token, version, started_at}` (ISO 8601 UTC), and `e2b_port` and `e2b_api_key` (the E2B front) when the engine has that front; the lock `engine.lock` and the log `engine.log` are beside it.",
            profile: &profiles::ENGINE,
            tags: ["needs:own-engine"],
            endpoints: ["health"],
            codes: [],
            run: |ctx| async move {
                use std::os::unix::fs::PermissionsExt as _;
                let dir = ctx.dir().ok_or_else(|| anyhow!("needs the state folder (launch the engine with --engine-cmd)"))?.to_path_buf();
                let path = dir.join("engine.json");
                let mode = std::fs::metadata(&path).with_context(|| format!("{}", path.display()))?.permissions().mode() & 0o777;
                ensure!(mode == 0o600, "the descriptor's mode is 0600, not {mode:o}");
                let d: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
                let mut keys: Vec<&str> = d.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
                keys.sort_unstable();
                // An engine without the E2B front writes neither of its two fields.
                keys.retain(|k| !matches!(*k, "e2b_api_key" | "e2b_port"));
                ensure!(keys == ["host", "pid", "port", "protocol", "started_at", "token", "version"], "the descriptor's fields: {d}");
                ensure!(d.get("e2b_port").is_none() == d.get("e2b_api_key").is_none(), "`e2b_port` and `e2b_api_key` come together: {d}");
                ensure!(d["protocol"] == "svc-engine/1" && d["host"] == "127.0.0.1", "{d}");
                ensure!(Some(d["token"].as_str().unwrap_or_default()) == ctx.token(), "the descriptor's token is the one that opens the door");
                let port = reqwest::Url::parse(ctx.base_url())?.port();
                ensure!(d["port"].as_u64() == port.map(u64::from), "the descriptor's port is where the engine answers: {d}");
                let started = d["started_at"].as_str().unwrap_or_default();
                ensure!(super::support::is_utc(started), "`started_at` is ISO 8601 UTC: {d}");
                let at = super::support::epoch(started)?;
                ensure!(at <= super::support::now() + 1 && at > super::support::now() - 3600, "`started_at` is when it started: {d}");
                let health = ctx.send(ctx.request(Method::GET, "/v1/health")).await?.json()?;
                ensure!(health["pid"] == d["pid"] && health["version"] == d["version"], "{health} vs {d}");
                for beside in ["engine.lock", "engine.log"] {
                    ensure!(dir.join(beside).is_file(), "{beside} is in the state folder");
                }
                snapshot(&ctx, "engine__health__descriptor", &d)?;
                Ok(())
            },
        },
        case! {
            id: "engine/health/003",
            spec: "`sessions` counts the engine's open sessions: a call on a sandbox opens one (keyed by the connection and the sandbox), so the count is at least 1 after it.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["health", "sandboxes_info"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                get(&ctx, &sb(&id, "")).await?.expect_status(200)?;
                let health = ctx.send(ctx.request(Method::GET, "/v1/health")).await?.json()?;
                ensure!(health["sessions"].as_u64().is_some_and(|n| n >= 1), "a session is open: {health}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}
