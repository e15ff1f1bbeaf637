//! `GET /v1/providers` (spec 2.3): what is installed and what each declares, which
//! is what decides a route's 501 and what this suite skips.

use super::support::snapshot;
use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use serde_json::Value;

/// Every feature name of the protocol.
const FEATURES: &[&str] = &[
    "sandboxes",
    "timeout",
    "pause",
    "ports",
    "commands",
    "processes",
    "files",
    "watch",
    "code",
    "code_contexts",
    "terminal",
    "isolation",
];

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/providers/001",
            spec: "GET /v1/providers answers `{providers: [{id, name, version, kind, trust, features, error}]}`: ids unique, `kind` one of builtin, rest, exec, node, `features` names of the protocol's features, `error` null or why the provider cannot serve.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["providers_list"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.request(Method::GET, "/v1/providers")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body.as_object().is_some_and(|m| m.len() == 1), "the answer is `{{providers}}`: {body}");
                let list = body["providers"].as_array().ok_or_else(|| anyhow!("`providers` is a list: {body}"))?;
                ensure!(!list.is_empty(), "an engine has at least one provider: {body}");
                let mut ids = Vec::new();
                for p in list {
                    check_provider(p)?;
                    ids.push(p["id"].as_str().unwrap_or_default());
                }
                let count = ids.len();
                ids.sort_unstable();
                ids.dedup();
                ensure!(ids.len() == count, "provider ids are unique: {body}");
                Ok(())
            },
        },
        case! {
            id: "engine/providers/002",
            spec: "The builtin provider `local` is listed: kind `builtin`, trust `builtin`, no error, and it declares `sandboxes`.",
            profile: &profiles::LOCAL,
            tags: [],
            endpoints: ["providers_list"],
            codes: [],
            run: |ctx| async move {
                let body = ctx.send(ctx.request(Method::GET, "/v1/providers")).await?.json()?;
                let local = body["providers"].as_array().into_iter().flatten().find(|p| p["id"] == "local").cloned()
                    .ok_or_else(|| anyhow!("no provider `local`: {body}"))?;
                check_provider(&local)?;
                ensure!(local["kind"] == "builtin" && local["trust"] == "builtin" && local["error"].is_null(), "{local}");
                ensure!(local["features"].as_array().is_some_and(|f| f.iter().any(|x| x == "sandboxes")), "{local}");
                snapshot(&ctx, "engine__providers__local", &local)?;
                Ok(())
            },
        },
    ]
}

fn check_provider(p: &Value) -> anyhow::Result<()> {
    let mut keys: Vec<&str> = p
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    ensure!(
        keys == [
            "error", "features", "id", "kind", "name", "trust", "version"
        ],
        "a provider record is {{id, name, version, kind, trust, features, error}}: {p}"
    );
    for key in ["id", "name", "version", "trust"] {
        ensure!(
            p[key].as_str().is_some_and(|s| !s.is_empty()),
            "`{key}` is a non-empty string: {p}"
        );
    }
    ensure!(
        ["builtin", "rest", "exec", "node"].contains(&p["kind"].as_str().unwrap_or_default()),
        "`kind` is builtin, rest, exec or node: {p}"
    );
    let features = p["features"]
        .as_array()
        .ok_or_else(|| anyhow!("`features` is a list: {p}"))?;
    for f in features {
        ensure!(
            f.as_str().is_some_and(|f| FEATURES.contains(&f)),
            "`{f}` is a feature of the protocol: {p}"
        );
    }
    ensure!(
        p["error"].is_null() || p["error"].is_string(),
        "`error` is null or a string: {p}"
    );
    Ok(())
}
