//! GET /v1/agents/runtimes and runtime selection at session create (issue 3).
//! `agents.runtime_not_installed` uses a profile whose PATH replaces the
//! runner's, so neither fake runtime is found.

use super::support::sessions::{Api, SESSIONS, expect_error_param, pre_redact};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};

const RUNTIMES_PATH: &str = "/v1/agents/runtimes";
const PRODUCT_ORDER: [&str; 5] = ["rt-one", "rt-two", "declared-a", "declared-b", "command"];

async fn runtimes(ctx: &Ctx, query: &str) -> anyhow::Result<Vec<Value>> {
    let resp = ctx
        .send(ctx.get(&format!("{RUNTIMES_PATH}{query}")))
        .await?;
    resp.expect_status(200)?;
    ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local: 1");
    let body = resp.json()?;
    ensure!(body["object"] == "list", "object: {body}");
    ensure!(
        body.get("has_more").is_none_or(|m| m == false),
        "not paged: {body}"
    );
    body["data"]
        .as_array()
        .cloned()
        .ok_or_else(|| anyhow!("data: {body}"))
}

fn ids(list: &[Value]) -> Vec<&str> {
    list.iter()
        .map(|r| r["id"].as_str().unwrap_or_default())
        .collect()
}

fn check_runtime(r: &Value) -> anyhow::Result<()> {
    let id = r["id"].as_str().unwrap_or_default();
    ensure!(r["object"] == "agent.runtime", "object: {r}");
    ensure!(r["name"].is_string(), "name: {r}");
    for key in ["implemented", "installed", "default", "auth_env_present"] {
        ensure!(r[key].is_boolean(), "{id}.{key}: {r}");
    }
    ensure!(r["binary"].is_string(), "{id}.binary: {r}");
    let aliases = r["aliases"]
        .as_array()
        .ok_or_else(|| anyhow!("aliases: {r}"))?;
    ensure!(aliases.iter().all(Value::is_string), "aliases: {r}");
    let steps = r["install_steps"]
        .as_array()
        .ok_or_else(|| anyhow!("install_steps: {r}"))?;
    ensure!(
        steps.iter().all(|s| s
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string))),
        "install_steps must be a list of argv lists: {r}"
    );
    ensure!(
        r["installed"] == r["path"].is_string(),
        "{id}: installed iff path is set: {r}"
    );
    ensure!(r["x_svc"]["compute"] == "none", "x_svc.compute: {r}");
    ensure!(
        r["x_svc"]["installed"] == r["installed"],
        "x_svc.installed: {r}"
    );
    ensure!(
        r["x_svc"]["implemented"] == r["implemented"],
        "x_svc.implemented: {r}"
    );
    Ok(())
}

async fn only_default(ctx: &Ctx, want: &str) -> anyhow::Result<()> {
    let list = runtimes(ctx, "").await?;
    let defaults: Vec<&str> = list
        .iter()
        .filter(|r| r["default"] == true)
        .map(|r| r["id"].as_str().unwrap_or_default())
        .collect();
    ensure!(defaults == [want], "default runtimes: {defaults:?}");
    let s = Api::new(ctx).create(&json!({})).await?;
    ensure!(
        s["x_svc"]["runtime"] == want,
        "a session without selection runs on {want}: {s}"
    );
    ensure!(
        s["agent"]["model"] == want,
        "agent.model defaults to the runtime name: {s}"
    );
    Ok(())
}

/// Creates with `header` (X-Svc-Adapter) and `body`; returns the runtime chosen.
async fn selected(ctx: &Ctx, header: Option<&str>, body: Value) -> anyhow::Result<Value> {
    let mut rb = ctx.post_json(SESSIONS, &body);
    if let Some(h) = header {
        rb = rb.header("x-svc-adapter", h);
    }
    let resp = ctx.send(rb).await?;
    resp.expect_status(200)?;
    let s = resp.json()?;
    ensure!(s["object"] == "agent.session", "{s}");
    Ok(s)
}

async fn refused(ctx: &Ctx, header: Option<&str>, body: Value) -> anyhow::Result<()> {
    let mut rb = ctx.request(Method::POST, SESSIONS).json(&body);
    if let Some(h) = header {
        rb = rb.header("x-svc-adapter", h);
    }
    let resp = ctx.send(rb).await?;
    let b = resp
        .expect_error(404, "agents.not_implemented_locally")
        .map_err(|e| anyhow!("header {header:?} body {body}: {e}"))?;
    ensure!(b["error"]["type"] == "not_found_error", "{b}");
    ensure!(
        b["x_svc"]["runtimes"] == RUNTIMES_PATH,
        "x_svc.runtimes: {b}"
    );
    ensure!(
        resp.header("x-should-retry") == Some("false"),
        "x-should-retry: false\n{}",
        resp.describe()
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/runtimes/001",
            spec: "GET /v1/agents/runtimes lists all 5 runtimes (`order=asc`: product order, implemented first) with every field; rt-one and rt-two are implemented and installed (path set), the declared ones implemented:false.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_runtimes_list"],
            codes: [],
            run: |ctx| async move {
                let list = runtimes(&ctx, "?order=asc").await?;
                ensure!(ids(&list) == PRODUCT_ORDER, "asc order: {:?}", ids(&list));
                for r in &list {
                    check_runtime(r)?;
                }
                let expect = [
                    ("rt-one", json!(["rt-one-alias"])),
                    ("rt-two", json!(["rt-two-alias-1", "rt-two-alias-2", "rt-two-alias-3"])),
                ];
                for (r, (id, aliases)) in list.iter().zip(expect) {
                    ensure!(r["implemented"] == true && r["installed"] == true, "{id}: {r}");
                    ensure!(r["binary"] == id, "{id}.binary: {r}");
                    ensure!(r["aliases"] == aliases, "{id}.aliases: {r}");
                    let path = r["path"].as_str().unwrap_or_default();
                    ensure!(path.ends_with(&format!("/{id}")), "{id}.path: {path}");
                }
                for r in &list[2..] {
                    ensure!(r["implemented"] == false, "declared only: {r}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/runtimes/002",
            spec: "Runtimes order: `order=asc` is product order (rt-one first), desc (the default) its reverse (command first); another order is 400 param order.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_runtimes_list"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let asc = runtimes(&ctx, "?order=asc").await?;
                ensure!(ids(&asc) == PRODUCT_ORDER, "asc: {:?}", ids(&asc));
                let mut desc = runtimes(&ctx, "?order=desc").await?;
                ensure!(runtimes(&ctx, "").await? == desc, "the default order is desc");
                desc.reverse();
                ensure!(asc == desc, "desc must be asc reversed");
                let resp = ctx.send(ctx.get(&format!("{RUNTIMES_PATH}?order=sideways"))).await?;
                expect_error_param(&resp, 400, "invalid_request", "order")?;
                Ok(())
            },
        },
        case! {
            id: "agents/runtimes/003",
            spec: "Without SVC_AGENTS_DEFAULT the default runtime is rt-one: only it has `default: true` and a session without selection runs on it.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_runtimes_list", "agents_sessions_create"],
            codes: [],
            run: |ctx| async move { only_default(&ctx, "rt-one").await },
        },
        case! {
            id: "agents/runtimes/004",
            spec: "SVC_AGENTS_DEFAULT=rt-two moves the `default` flag and the default selection to rt-two.",
            profile: &profiles::AGENTS_SESSIONS_TWO,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_runtimes_list", "agents_sessions_create"],
            codes: [],
            run: |ctx| async move { only_default(&ctx, "rt-two").await },
        },
        case! {
            id: "agents/runtimes/005",
            spec: "Snapshot of the runtimes list (paths and key presence are machine-dependent and masked after checks).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_runtimes_list"],
            codes: [],
            run: |ctx| async move {
                let body = ctx.send(ctx.get(RUNTIMES_PATH)).await?.json()?;
                let mut body = pre_redact(&body)?;
                for r in body["data"].as_array_mut().into_iter().flatten() {
                    if let Some(path) = r["path"].as_str() {
                        let bin = r["binary"].as_str().unwrap_or_default();
                        ensure!(path.starts_with('/') && path.ends_with(bin), "path {path}");
                        r["path"] = json!(format!("[path]/{bin}"));
                    }
                    ensure!(r["auth_env_present"].is_boolean(), "{r}");
                    r["auth_env_present"] = json!("[bool]");
                }
                ctx.snapshot("agents__runtimes__list", &body)
            },
        },
        case! {
            id: "agents/selection/001",
            spec: "Selection: header X-Svc-Adapter wins over the body; body `adapter`/`runtime` (also inside `agent`) come next.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create"],
            codes: [],
            run: |ctx| async move {
                let rows = [
                    (Some("rt-two"), json!({}), "rt-two"),
                    (Some("rt-two"), json!({"runtime": "rt-one"}), "rt-two"),
                    (Some("rt-one"), json!({"agent": {"runtime": "rt-two"}}), "rt-one"),
                    (None, json!({"adapter": "rt-two"}), "rt-two"),
                    (None, json!({"runtime": "rt-two"}), "rt-two"),
                    (None, json!({"agent": {"adapter": "rt-two"}}), "rt-two"),
                    (None, json!({"agent": {"runtime": "rt-two"}}), "rt-two"),
                    (None, json!({"runtime": "rt-two", "agent": {"model": "rt-one-alias"}}), "rt-two"),
                ];
                for (header, body, want) in rows {
                    let s = selected(&ctx, header, body.clone()).await?;
                    ensure!(s["x_svc"]["runtime"] == want, "header {header:?} body {body}: {s}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/selection/002",
            spec: "Selection: `agent.model` equal to a runtime name or alias selects that runtime (rt-two-alias-2 selects rt-two); other models use the default runtime and are kept.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create"],
            codes: [],
            run: |ctx| async move {
                for (model, want) in [
                    ("rt-two-alias-2", "rt-two"),
                    ("rt-two", "rt-two"),
                    ("rt-one-alias", "rt-one"),
                    ("some-other-model", "rt-one"),
                ] {
                    let s = selected(&ctx, None, json!({"agent": {"model": model}})).await?;
                    ensure!(s["x_svc"]["runtime"] == want, "model {model}: {s}");
                    ensure!(s["agent"]["model"] == model, "agent.model keeps {model}: {s}");
                    ensure!(s["x_svc"]["model_resolved"].is_boolean(), "model_resolved: {s}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/selection/003",
            spec: "Selecting a declared-only runtime (declared-a, declared-b, command) or an unknown name is 404 `agents.not_implemented_locally` with x_svc.runtimes and x-should-retry false.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_sessions_create"],
            codes: ["agents.not_implemented_locally"],
            run: |ctx| async move {
                for name in ["declared-a", "declared-b", "command", "no-such-runtime"] {
                    refused(&ctx, Some(name), json!({})).await?;
                    refused(&ctx, None, json!({"runtime": name})).await?;
                    refused(&ctx, None, json!({"adapter": name})).await?;
                    refused(&ctx, None, json!({"agent": {"runtime": name}})).await?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/selection/004",
            spec: "Selection step 3 matches only rt-one, rt-one-alias, rt-two and rt-two-alias-1..3: any other model id (even a declared runtime's name) is passed to the selected CLI and does not select an adapter.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_sessions_create"],
            codes: [],
            run: |ctx| async move {
                for model in ["declared-a", "gpt-x"] {
                    let resp = ctx.send(ctx.post_json("/v1/agents/sessions", &json!({"agent": {"model": model}}))).await?;
                    resp.expect_status(200)?;
                    let session = resp.json()?;
                    ensure!(session["x_svc"]["runtime"] == "rt-one", "the default runtime runs it: {session}");
                    ensure!(session["agent"]["model"] == model && session["x_svc"]["model_resolved"] == true, "{session}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/runtimes/006",
            spec: "`installed`/`path` are looked up on the server's PATH: without the binaries rt-one and rt-two are implemented but installed:false, path null.",
            profile: &profiles::AGENTS_SESSIONS_NO_RUNTIMES,
            tags: [],
            endpoints: ["agents_runtimes_list"],
            codes: [],
            run: |ctx| async move {
                let list = runtimes(&ctx, "?order=asc").await?;
                for r in &list {
                    check_runtime(r)?;
                }
                for r in &list[..2] {
                    ensure!(r["implemented"] == true && r["installed"] == false && r["path"].is_null(), "{r}");
                    ensure!(r["install_steps"].as_array().is_some_and(|s| !s.is_empty()), "install steps: {r}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/selection/005",
            spec: "Selecting an implemented runtime whose binary is not on PATH is 400 `agents.runtime_not_installed`; the message names the install steps and top-level x_svc.install_steps carries them.",
            profile: &profiles::AGENTS_SESSIONS_NO_RUNTIMES,
            tags: [],
            endpoints: ["agents_sessions_create", "agents_runtimes_list"],
            codes: ["agents.runtime_not_installed"],
            run: |ctx| async move {
                let list = runtimes(&ctx, "?order=asc").await?;
                for (rt, header, body) in [
                    ("rt-one", None, json!({})),
                    ("rt-two", None, json!({"runtime": "rt-two"})),
                    ("rt-two", Some("rt-two"), json!({})),
                    ("rt-two", None, json!({"agent": {"model": "rt-two-alias-1"}})),
                ] {
                    let mut rb = ctx.post_json(SESSIONS, &body);
                    if let Some(h) = header {
                        rb = rb.header("x-svc-adapter", h);
                    }
                    let resp = ctx.send(rb).await?;
                    let b = resp.expect_error(400, "agents.runtime_not_installed")?;
                    ensure!(b["error"]["type"] == "invalid_request_error", "{b}");
                    let steps = &list.iter().find(|r| r["id"] == rt).ok_or_else(|| anyhow!("{rt} not listed"))?["install_steps"];
                    ensure!(&b["x_svc"]["install_steps"] == steps, "{rt}: x_svc.install_steps {b}");
                    let first = steps[0].as_array().cloned().unwrap_or_default();
                    let msg = b["error"]["message"].as_str().unwrap_or_default();
                    ensure!(
                        first.iter().filter_map(Value::as_str).all(|w| msg.contains(w)),
                        "{rt}: the message names the install steps: {msg:?}"
                    );
                }
                Ok(())
            },
        },
        case! {
            id: "agents/launch/001",
            spec: "The operator's launch additions for a runtime (template.yaml `agents.runtimes.<id>.env` and `args`) reach every child of that runtime, sessions and responses alike.",
            profile: &profiles::AGENTS_LAUNCH,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_responses_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for (runtime, mark) in [("rt-one", "op-one-31"), ("rt-two", "op-two-47")] {
                    let (_, turn, items) = api.run_turn(runtime, "[[scenario:env:OPERATOR_MARK]]").await?;
                    ensure!(turn["status"] == "completed", "{runtime}: {turn}");
                    ensure!(items.iter().any(|i| i.to_string().contains(mark)), "{runtime}: the operator's variable reached the child: {items:?}");
                    let r = api.send(api.post("/v1/responses", &json!({"model": runtime, "input": "[[scenario:env:OPERATOR_MARK]]"}))).await?.json()?;
                    ensure!(r.to_string().contains(mark), "{runtime}: responses too: {r}");
                }
                Ok(())
            },
        },
    ]
}
