//! Agent definitions (issue 4): POST/GET /v1/agents, GET/POST/DELETE
//! /v1/agents/{agent_id}, selection, validation, MCP header secrecy, owner
//! isolation and sessions made from a definition.

use std::collections::HashSet;

use super::support::sessions::{
    Api, SESSIONS, check_id, check_list, expect_error_param, expect_missing, id_of, page_through,
    spath,
};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, anyhow, ensure};
use serde_json::{Value, json};

pub const AGENTS: &str = "/v1/agents";
pub const MODELS: &str = "/v1/models";
pub const MISSING_AGENT: &str = "agent_000000000000000000000000";
const SECRET: &str = "s3cret-value";

pub fn dpath(id: &str) -> String {
    format!("{AGENTS}/{id}")
}

/// An MCP tool over http with one secret header.
pub fn mcp_tool(label: &str) -> Value {
    json!({
        "type": "mcp",
        "server_label": label,
        "transport": {
            "type": "http",
            "server_url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": format!("Bearer {SECRET}")},
        },
    })
}

/// POST /v1/agents, expecting 200 and an `agent`.
pub async fn create_def(api: &Api, body: &Value) -> anyhow::Result<Value> {
    let resp = api.send(api.post(AGENTS, body)).await?;
    resp.expect_status(200)
        .map_err(|e| anyhow!("body sent: {body}\n{e}"))?;
    let d = resp.json()?;
    ensure!(
        d["object"] == "agent",
        "not an agent: {d}\nbody sent: {body}"
    );
    Ok(d)
}

/// Every field of a definition object, with types; `runtime` is the selected runtime.
pub fn check_definition(d: &Value, runtime: &str) -> anyhow::Result<()> {
    check_id(&d["id"], "agent")?;
    ensure!(d["object"] == "agent", "object: {d}");
    let (created, updated) = (&d["created_at"], &d["updated_at"]);
    ensure!(created.is_u64() && updated.is_u64(), "timestamps: {d}");
    ensure!(
        updated.as_u64() >= created.as_u64(),
        "updated_at >= created_at: {d}"
    );
    for key in ["name", "instructions"] {
        ensure!(
            d[key].is_string() || d.get(key).is_some_and(Value::is_null),
            "{key} (string or null): {d}"
        );
    }
    ensure!(d["model"].is_string(), "model: {d}");
    ensure!(d["metadata"].is_object(), "metadata: {d}");
    let tools = d["tools"].as_array().ok_or_else(|| anyhow!("tools: {d}"))?;
    for t in tools {
        check_mcp_tool(t)?;
    }
    ensure!(d["reasoning"].is_object(), "reasoning: {d}");
    ensure!(
        d["multi_agent"] == json!({"enabled": false}),
        "multi_agent: {d}"
    );
    ensure!(
        ["auto", "default"].contains(&d["service_tier"].as_str().unwrap_or_default()),
        "service_tier: {d}"
    );
    ensure!(
        d["text"] == json!({"format": {"type": "text"}, "verbosity": "medium"}),
        "text: {d}"
    );
    let x = &d["x_svc"];
    ensure!(x["compute"] == "local_state", "x_svc.compute: {d}");
    ensure!(x["runtime"] == runtime, "x_svc.runtime {runtime}: {d}");
    ensure!(
        x["model_resolved"].is_boolean(),
        "x_svc.model_resolved: {d}"
    );
    ensure!(
        !d.to_string().contains(SECRET),
        "a header value came back: {d}"
    );
    Ok(())
}

/// An MCP tool as returned: defaults filled, header values masked.
fn check_mcp_tool(t: &Value) -> anyhow::Result<()> {
    ensure!(t["type"] == "mcp", "tool type: {t}");
    ensure!(t["server_label"].is_string(), "server_label: {t}");
    let tr = &t["transport"];
    ensure!(
        tr["type"] == "http" && tr["server_url"].is_string(),
        "transport: {t}"
    );
    if let Some(h) = tr.get("headers").filter(|h| !h.is_null()) {
        let h = h
            .as_object()
            .ok_or_else(|| anyhow!("headers is not an object: {t}"))?;
        ensure!(
            h.values().all(|v| v == "***"),
            "header values must be \"***\": {t}"
        );
    }
    ensure!(t["connection_origin"].is_string(), "connection_origin: {t}");
    ensure!(t["request_metadata"].is_object(), "request_metadata: {t}");
    ensure!(t["required"].is_boolean(), "required: {t}");
    ensure!(
        t.get("allowed_tools").is_some_and(Value::is_null),
        "allowed_tools: null: {t}"
    );
    ensure!(
        t.get("credential_id")
            .is_some_and(|c| c.is_null() || c.is_string()),
        "credential_id: {t}"
    );
    Ok(())
}

/// A create refused with 400 `invalid_request`; param equals `param`, or starts with it when `prefix`.
async fn refused_def(
    api: &Api,
    path: &str,
    body: Value,
    param: &str,
    prefix: bool,
) -> anyhow::Result<()> {
    let resp = api.send(api.post(path, &body)).await?;
    let b = resp
        .expect_error(400, "invalid_request")
        .map_err(|e| anyhow!("body {body}: {e}"))?;
    ensure!(
        b["error"]["type"] == "invalid_request_error",
        "body {body}: type {b}"
    );
    let got = b["error"]["param"].as_str().unwrap_or_default();
    let ok = if prefix {
        got.starts_with(param)
    } else {
        got == param
    };
    ensure!(ok, "body {body}: expected param {param:?}, got {got:?}");
    Ok(())
}

/// Creates with the X-Svc-Adapter `header` and `body`; returns the definition.
async fn create_with(api: &Api, header: Option<&str>, body: &Value) -> anyhow::Result<Value> {
    let mut rb = api.post(AGENTS, body);
    if let Some(h) = header {
        rb = rb.header("x-svc-adapter", h);
    }
    let resp = api.send(rb).await?;
    resp.expect_status(200)
        .map_err(|e| anyhow!("header {header:?} body {body}: {e}"))?;
    resp.json()
}

async fn not_local(api: &Api, header: Option<&str>, body: Value) -> anyhow::Result<()> {
    let mut rb = api.post(AGENTS, &body);
    if let Some(h) = header {
        rb = rb.header("x-svc-adapter", h);
    }
    let resp = api.send(rb).await?;
    let b = resp
        .expect_error(404, "agents.not_implemented_locally")
        .map_err(|e| anyhow!("header {header:?} body {body}: {e}"))?;
    ensure!(b["error"]["type"] == "not_found_error", "{b}");
    ensure!(
        b["x_svc"]["runtimes"] == "/v1/agents/runtimes",
        "x_svc.runtimes: {b}"
    );
    ensure!(
        resp.header("x-should-retry") == Some("false"),
        "x-should-retry: false\n{}",
        resp.describe()
    );
    Ok(())
}

fn model_list(body: &Value) -> anyhow::Result<Vec<Value>> {
    ensure!(body["object"] == "list", "object: {body}");
    body["data"]
        .as_array()
        .cloned()
        .ok_or_else(|| anyhow!("data: {body}"))
}

/// Bob's definitions alone: the paging property over them, and GET /v1/models
/// showing exactly them plus the two runtimes, unchanged by reads. Only this
/// case creates definitions as bob.
async fn bobs_definitions(ctx: &Ctx) -> anyhow::Result<()> {
    let bob = Api::as_token(ctx, "bob-token");
    let mut made = Vec::new();
    for i in 0..6 {
        let d = create_def(
            &bob,
            &json!({"model": "rt-one", "name": format!("def-{i}")}),
        )
        .await?;
        made.push(d["id"].clone());
    }
    let full_asc = bob.all(AGENTS).await?;
    let ids: Vec<Value> = full_asc.iter().map(|d| d["id"].clone()).collect();
    ensure!(ids == made, "asc is creation order: {ids:?} vs {made:?}");
    let mut full_desc = full_asc.clone();
    full_desc.reverse();
    for limit in [1, 2, 4, 5, 6, 7] {
        for (order, full) in [("asc", &full_asc), ("desc", &full_desc)] {
            let got = page_through(&bob, AGENTS, limit, order).await?;
            let uniq: HashSet<&Value> = got.iter().map(|v| &v["id"]).collect();
            ensure!(
                uniq.len() == got.len(),
                "limit={limit} order={order}: duplicates"
            );
            ensure!(
                &got == full,
                "limit={limit} order={order}: pages do not make up the list"
            );
        }
    }
    let default = bob.json(&format!("{AGENTS}?limit=100")).await?;
    ensure!(
        default["data"].as_array() == Some(&full_desc),
        "the default order is desc"
    );

    let before = bob.json(MODELS).await?;
    let mut got: Vec<Value> = model_list(&before)?
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    let mut want = made.clone();
    want.extend([json!("rt-one"), json!("rt-two")]);
    let key = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    got.sort_by_key(key);
    want.sort_by_key(key);
    ensure!(
        got == want,
        "models: bob's definitions and the two runtimes, nothing else: {before}"
    );
    for path in [
        format!("{MODELS}/rt-one"),
        format!("{MODELS}/rt-two-alias-3"),
        format!("{MODELS}/{}", key(&made[0])),
        format!("{MODELS}/gpt-nope"),
    ] {
        bob.send(bob.get(&path)).await?;
    }
    let after = bob.json(MODELS).await?;
    ensure!(
        before == after,
        "GET /v1/models twice, with model reads between, must answer the same:\n{before}\n{after}"
    );
    Ok(())
}

async fn isolation(ctx: &Ctx) -> anyhow::Result<()> {
    let alice = Api::as_token(ctx, "alice-token");
    let bob = Api::as_token(ctx, "bob-token");
    let d = create_def(
        &alice,
        &json!({"model": "rt-one", "name": "alice's", "instructions": "Alice only."}),
    )
    .await?;
    let id = id_of(&d)?;
    let mask = |text: String, id: &str| text.replace(id, "<id>");
    let upd = json!({"name": "bob was here"});
    for (other, missing) in [
        (bob.get(&dpath(&id)), bob.get(&dpath(MISSING_AGENT))),
        (
            bob.post(&dpath(&id), &upd),
            bob.post(&dpath(MISSING_AGENT), &upd),
        ),
        (bob.delete(&dpath(&id)), bob.delete(&dpath(MISSING_AGENT))),
        (
            bob.post(SESSIONS, &json!({"agent_id": id})),
            bob.post(SESSIONS, &json!({"agent_id": MISSING_AGENT})),
        ),
    ] {
        let other = bob.send(other).await?;
        let missing = bob.send(missing).await?;
        expect_error_param(&other, 404, "resource_not_found", "agent_id")?;
        expect_error_param(&missing, 404, "resource_not_found", "agent_id")?;
        ensure!(
            mask(other.text(), &id) == mask(missing.text(), MISSING_AGENT),
            "another owner's definition must answer exactly like a missing one:\n{}\n{}",
            other.describe(),
            missing.describe()
        );
    }
    let listed = bob.all(AGENTS).await?;
    ensure!(
        listed.iter().all(|x| x["id"] != id.as_str()),
        "bob's list shows alice's definition"
    );
    let got = alice.json(&dpath(&id)).await?;
    ensure!(got == d, "bob changed alice's definition:\n{got}\n{d}");
    let listed = alice.all(AGENTS).await?;
    ensure!(
        listed.iter().any(|x| x["id"] == id.as_str()),
        "alice's list misses her definition"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/definitions/001",
            spec: "POST /v1/agents with only {model:\"rt-one\"} answers 200 with an `agent` carrying every field of the design and its defaults.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let resp = api.send(api.post(AGENTS, &json!({"model": "rt-one"}))).await?;
                resp.expect_status(200)?;
                ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local: 1");
                let d = resp.json()?;
                check_definition(&d, "rt-one")?;
                for key in ["name", "instructions"] {
                    ensure!(d.get(key).is_some_and(Value::is_null), "{key} defaults to null: {d}");
                }
                ensure!(d["model"] == "rt-one", "model: {d}");
                ensure!(d["metadata"] == json!({}) && d["tools"] == json!([]), "defaults: {d}");
                ensure!(d["reasoning"] == json!({}) && d["service_tier"] == "auto", "defaults: {d}");
                ensure!(d["x_svc"]["model_resolved"] == false, "a runtime name is not a resolved model: {d}");
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/002",
            spec: "A full create body is kept: name, instructions, metadata, an MCP tool with its optional fields, reasoning.effort on rt-one, multi_agent off, service_tier, text.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_create", "agents_definitions_get"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let mut tool = mcp_tool("docs_server-1");
                tool["required"] = json!(true);
                tool["connection_origin"] = json!("service");
                tool["request_metadata"] = json!({"team": "core"});
                let body = json!({
                    "model": "gpt-custom",
                    "runtime": "rt-one",
                    "name": "Reviewer",
                    "instructions": "Review the diff.",
                    "metadata": {"team": "core", "tier": "gold"},
                    "tools": [tool],
                    "reasoning": {"effort": "high"},
                    "multi_agent": {"enabled": false},
                    "service_tier": "default",
                    "text": {"format": {"type": "text"}, "verbosity": "medium"},
                });
                let d = create_def(&api, &body).await?;
                check_definition(&d, "rt-one")?;
                ensure!(d["name"] == "Reviewer" && d["instructions"] == "Review the diff.", "{d}");
                ensure!(d["model"] == "gpt-custom" && d["x_svc"]["model_resolved"] == true, "model: {d}");
                ensure!(d["metadata"] == json!({"team": "core", "tier": "gold"}), "metadata: {d}");
                ensure!(d["reasoning"] == json!({"effort": "high"}), "reasoning: {d}");
                ensure!(d["service_tier"] == "default", "service_tier: {d}");
                let t = &d["tools"][0];
                ensure!(d["tools"].as_array().map(Vec::len) == Some(1), "tools: {d}");
                ensure!(t["server_label"] == "docs_server-1", "server_label: {t}");
                ensure!(t["transport"]["server_url"] == "https://mcp.example.com/mcp", "server_url: {t}");
                ensure!(t["transport"]["headers"] == json!({"Authorization": "***"}), "headers: {t}");
                ensure!(t["required"] == true && t["connection_origin"] == "service", "{t}");
                ensure!(t["request_metadata"] == json!({"team": "core"}), "request_metadata is kept: {t}");
                // A credential id is kept; sessions resolve it against their `vault_ids`.
                let mut with_credential = mcp_tool("docs");
                with_credential["credential_id"] = json!("cred_abc123");
                let resp = ctx.send(ctx.post_json("/v1/agents", &json!({"model": "rt-one", "tools": [with_credential]}))).await?;
                resp.expect_status(200)?;
                ensure!(resp.json()?["tools"][0]["credential_id"] == "cred_abc123", "{}", resp.text());
                let err = ctx.send(ctx.post_json("/v1/agents", &json!({"model": "rt-one", "tools": [{"credential_id": 5, "type": "mcp", "server_label": "x", "transport": {"type": "http", "server_url": "https://mcp.example.com/"}}]}))).await?.expect_error(400, "invalid_request")?;
                ensure!(err["error"]["param"] == "tools[0].credential_id", "{err}");
                let got = api.json(&dpath(&id_of(&d)?)).await?;
                ensure!(got == d, "GET answers the created object:\n{got}\n{d}");
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/003",
            spec: "Snapshot of a definition with an MCP tool given only its required fields: tool defaults filled in, header values returned as \"***\".",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let d = create_def(&api, &json!({
                    "model": "rt-two",
                    "name": "snap",
                    "instructions": "Be brief.",
                    "metadata": {"case": "snapshot"},
                    "tools": [mcp_tool("docs")],
                })).await?;
                check_definition(&d, "rt-two")?;
                let t = &d["tools"][0];
                ensure!(t["transport"]["headers"] == json!({"Authorization": "***"}), "headers: {t}");
                ensure!(t["connection_origin"] == "service" && t["required"] == false, "defaults: {t}");
                ensure!(t["request_metadata"] == json!({}) && t["credential_id"].is_null(), "defaults: {t}");
                ctx.snapshot("agents__definitions__object", &d)
            },
        },
        case! {
            id: "agents/definitions/004",
            spec: "Runtime selection for a definition: X-Svc-Adapter wins over body `runtime`/`adapter`, which win over a model that is a runtime name or alias (rt-two-alias-3 selects rt-two); any other model uses the default runtime and is kept.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let rows = [
                    (None, json!({"model": "rt-two-alias-3"}), "rt-two"),
                    (None, json!({"model": "rt-two"}), "rt-two"),
                    (None, json!({"model": "rt-one-alias"}), "rt-one"),
                    (None, json!({"model": "gpt-x"}), "rt-one"),
                    (None, json!({"model": "declared-a"}), "rt-one"),
                    (None, json!({"model": "gpt-x", "runtime": "rt-two"}), "rt-two"),
                    (None, json!({"model": "gpt-x", "adapter": "rt-two"}), "rt-two"),
                    (None, json!({"model": "rt-one-alias", "runtime": "rt-two"}), "rt-two"),
                    (Some("rt-two"), json!({"model": "gpt-x"}), "rt-two"),
                    (Some("rt-two"), json!({"model": "gpt-x", "runtime": "rt-one"}), "rt-two"),
                    (Some("rt-one"), json!({"model": "rt-two-alias-1"}), "rt-one"),
                ];
                for (header, body, want) in rows {
                    let d = create_with(&api, header, &body).await?;
                    check_definition(&d, want).map_err(|e| anyhow!("header {header:?} body {body}: {e}"))?;
                    ensure!(d["model"] == body["model"], "the model is kept: {d}");
                }
                // A runtime name or alias as the model is not a resolved model.
                for model in ["rt-two-alias-3", "rt-one"] {
                    let d = create_def(&api, &json!({"model": model})).await?;
                    ensure!(d["x_svc"]["model_resolved"] == false, "model {model}: {d}");
                }
                let d = create_def(&api, &json!({"model": "gpt-x"})).await?;
                ensure!(d["x_svc"]["model_resolved"] == true, "model gpt-x: {d}");
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/005",
            spec: "Selecting a declared-only runtime (declared-a, declared-b, command) or an unknown name for a definition, by header or body, is 404 agents.not_implemented_locally.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_create"],
            codes: ["agents.not_implemented_locally"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for name in ["declared-a", "declared-b", "command", "no-such-runtime"] {
                    not_local(&api, Some(name), json!({"model": "gpt-x"})).await?;
                    not_local(&api, None, json!({"model": "gpt-x", "runtime": name})).await?;
                    not_local(&api, None, json!({"model": "gpt-x", "adapter": name})).await?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/006",
            spec: "Create validation: missing model, unknown keys, non-scalar metadata, reasoning on rt-two or with summary, multi_agent.enabled true, service_tier flex, text.verbosity high, text.format json_schema are each 400 invalid_request naming the param.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let rows = [
                    (json!({}), "model", false),
                    (json!({"name": "no model"}), "model", false),
                    (json!({"model": 5}), "model", false),
                    (json!({"model": "rt-one", "bogus": 1}), "bogus", false),
                    (json!({"model": "rt-one", "metadata": {"ok": "v", "bad": {"k": 1}}}), "metadata.bad", false),
                    (json!({"model": "rt-one", "metadata": {"ok": "v", "bad": [1]}}), "metadata.bad", false),
                    (json!({"model": "rt-one", "metadata": {"ok": "v", "bad": null}}), "metadata.bad", false),
                    (json!({"model": "rt-two", "reasoning": {"effort": "low"}}), "reasoning", true),
                    (json!({"model": "gpt-x", "runtime": "rt-two", "reasoning": {"effort": "high"}}), "reasoning", true),
                    (json!({"model": "rt-one", "reasoning": {"effort": "extreme"}}), "reasoning", true),
                    (json!({"model": "rt-one", "reasoning": {"summary": "auto"}}), "reasoning.summary", false),
                    (json!({"model": "rt-one", "multi_agent": {"enabled": true}}), "multi_agent.enabled", false),
                    (json!({"model": "rt-one", "service_tier": "flex"}), "service_tier", true),
                    (json!({"model": "rt-one", "text": {"verbosity": "high"}}), "text.verbosity", true),
                    (json!({"model": "rt-one", "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}}}), "text.format", true),
                ];
                for (body, param, prefix) in rows {
                    refused_def(&api, AGENTS, body, param, prefix).await?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/007",
            spec: "Tool validation: stdio transport, allowed_tools, a non-MCP tool type, a non-http(s) server_url, a server_label outside 1-64 of [A-Za-z0-9_-] and a duplicate server_label are each 400 naming tools[i]…; valid edge values are accepted.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let with = |f: &dyn Fn(&mut Value)| {
                    let mut t = mcp_tool("ok");
                    f(&mut t);
                    t
                };
                let mut rows = vec![
                    (json!([with(&|t| t["transport"] = json!({"type": "stdio", "command": "mcp-server"}))]), "tools[0].transport.type"),
                    (json!([with(&|t| t["allowed_tools"] = json!(["search"]))]), "tools[0].allowed_tools"),
                    (json!([{"type": "function", "name": "f", "parameters": {}}]), "tools[0].type"),
                    (json!([mcp_tool("first"), {"type": "web_search"}]), "tools[1].type"),
                    (json!([mcp_tool("same"), mcp_tool("same")]), "tools[1].server_label"),
                ];
                for url in ["ftp://mcp.example.com/x", "not a url", "", "file:///etc/passwd"] {
                    rows.push((json!([with(&|t| t["transport"]["server_url"] = json!(url))]), "tools[0].transport.server_url"));
                }
                let long = "a".repeat(65);
                for label in ["", "has space", "dot.label", long.as_str(), "ünï"] {
                    rows.push((json!([with(&|t| t["server_label"] = json!(label))]), "tools[0].server_label"));
                }
                for (tools, param) in rows {
                    refused_def(&api, AGENTS, json!({"model": "rt-one", "tools": tools}), param, false).await?;
                }
                let edge = "A-z_9".repeat(12) + "abcd";
                let d = create_def(&api, &json!({"model": "rt-one", "tools": [
                    with(&|t| t["server_label"] = json!(edge)),
                    with(&|t| { t["server_label"] = json!("plain"); t["transport"]["server_url"] = json!("http://127.0.0.1:9/mcp"); }),
                ]})).await?;
                check_definition(&d, "rt-one")?;
                ensure!(d["tools"][0]["server_label"] == edge.as_str() && d["tools"][1]["server_label"] == "plain", "{d}");
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/008",
            spec: "Accepted options: every reasoning.effort (minimal|low|medium|high) on rt-one, service_tier auto|default, multi_agent {enabled:false}, text {verbosity:medium, format {type:text}}, an empty tools list.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for effort in ["minimal", "low", "medium", "high"] {
                    let d = create_def(&api, &json!({"model": "rt-one", "reasoning": {"effort": effort}})).await?;
                    ensure!(d["reasoning"] == json!({"effort": effort}), "{d}");
                }
                for tier in ["auto", "default"] {
                    let d = create_def(&api, &json!({"model": "rt-two", "service_tier": tier})).await?;
                    ensure!(d["service_tier"] == tier, "{d}");
                }
                let d = create_def(&api, &json!({
                    "model": "rt-two", "tools": [], "multi_agent": {"enabled": false},
                    "text": {"verbosity": "medium", "format": {"type": "text"}}, "reasoning": {},
                })).await?;
                check_definition(&d, "rt-two")?;
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/009",
            spec: "GET /v1/agents/{agent_id} answers the stored definition and the list contains it; a missing id is 404 resource_not_found param agent_id on get, update and delete.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_get", "agents_definitions_list", "agents_definitions_update", "agents_definitions_delete"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let d = create_def(&api, &json!({"model": "rt-two", "name": "listed"})).await?;
                let id = id_of(&d)?;
                let resp = api.send(api.get(&dpath(&id))).await?;
                resp.expect_status(200)?;
                ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local: 1");
                ensure!(resp.json()? == d, "GET answers the created object");
                let all = api.all(AGENTS).await?;
                let found = all.iter().find(|x| x["id"] == id.as_str()).ok_or_else(|| anyhow!("list misses {id}"))?;
                ensure!(found == &d, "the listed object equals the created one:\n{found}\n{d}");
                for x in &all {
                    check_definition(x, x["x_svc"]["runtime"].as_str().unwrap_or_default())?;
                }
                for missing in [MISSING_AGENT, "nope"] {
                    expect_missing(&api, api.get(&dpath(missing)), "agent_id").await?;
                    expect_missing(&api, api.post(&dpath(missing), &json!({"name": "x"})), "agent_id").await?;
                    expect_missing(&api, api.delete(&dpath(missing)), "agent_id").await?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/010",
            spec: "POST /v1/agents/{agent_id} updates in place: omitted fields unchanged, updated_at >= created_at, a tools list replaces the tools; `runtime` or `adapter` in the body is 400 param runtime/adapter.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_update", "agents_definitions_get"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let d = create_def(&api, &json!({
                    "model": "rt-two", "name": "before", "instructions": "Keep me.",
                    "metadata": {"k": "v"}, "tools": [mcp_tool("one"), mcp_tool("two")],
                })).await?;
                let id = id_of(&d)?;
                let resp = api.send(api.post(&dpath(&id), &json!({"name": "after"}))).await?;
                resp.expect_status(200)?;
                let u = resp.json()?;
                check_definition(&u, "rt-two")?;
                ensure!(u["id"] == d["id"] && u["created_at"] == d["created_at"], "same definition: {u}");
                ensure!(u["name"] == "after", "name changed: {u}");
                for key in ["model", "instructions", "metadata", "tools", "reasoning", "multi_agent", "service_tier", "text", "x_svc"] {
                    ensure!(u[key] == d[key], "{key} unchanged:\n{u}\n{d}");
                }
                ensure!(u["updated_at"].as_u64().context("updated_at")? >= d["updated_at"].as_u64().context("updated_at")?, "updated_at: {u}");
                ensure!(api.json(&dpath(&id)).await? == u, "GET shows the update");
                let resp = api.send(api.post(&dpath(&id), &json!({"tools": [mcp_tool("three")], "instructions": "New."}))).await?;
                resp.expect_status(200)?;
                let u2 = resp.json()?;
                check_definition(&u2, "rt-two")?;
                let labels: Vec<&Value> = u2["tools"].as_array().into_iter().flatten().map(|t| &t["server_label"]).collect();
                ensure!(labels == [&json!("three")], "tools replaced: {u2}");
                ensure!(u2["instructions"] == "New." && u2["name"] == "after", "{u2}");
                for (body, param) in [
                    (json!({"runtime": "rt-one"}), "runtime"),
                    (json!({"adapter": "rt-one"}), "adapter"),
                    (json!({"name": "x", "runtime": "rt-two"}), "runtime"),
                ] {
                    let resp = api.send(api.post(&dpath(&id), &body)).await?;
                    expect_error_param(&resp, 400, "invalid_request", param).map_err(|e| anyhow!("update {body}: {e}"))?;
                }
                let after = api.json(&dpath(&id)).await?;
                ensure!(after == u2, "a refused update changes nothing:\n{after}\n{u2}");
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/011",
            spec: "DELETE /v1/agents/{agent_id} answers {id, object: agent.deleted, deleted: true}; afterwards get, update and delete are 404 resource_not_found param agent_id and the list and models no longer show it.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_delete", "agents_definitions_get", "agents_definitions_list", "agents_models_get"],
            codes: ["resource_not_found", "model_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let id = id_of(&create_def(&api, &json!({"model": "rt-one"})).await?)?;
                let resp = api.send(api.delete(&dpath(&id))).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body == json!({"id": id, "object": "agent.deleted", "deleted": true}), "deleted object: {body}");
                expect_missing(&api, api.get(&dpath(&id)), "agent_id").await?;
                expect_missing(&api, api.post(&dpath(&id), &json!({"name": "x"})), "agent_id").await?;
                expect_missing(&api, api.delete(&dpath(&id)), "agent_id").await?;
                ensure!(api.all(AGENTS).await?.iter().all(|d| d["id"] != id.as_str()), "deleted definition still listed");
                let resp = api.send(api.get(&format!("{MODELS}/{id}"))).await?;
                expect_error_param(&resp, 404, "model_not_found", "model")?;
                let models = api.json(MODELS).await?;
                ensure!(model_list(&models)?.iter().all(|m| m["id"] != id.as_str()), "deleted definition still a model");
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/012",
            spec: "Paging property over one identity's definitions (pages concatenate, asc = desc reversed, default desc); GET /v1/models lists exactly that identity's definitions plus rt-one and rt-two and is unchanged by model reads.",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: [],
            endpoints: ["agents_definitions_list", "agents_definitions_create", "agents_models_list", "agents_models_get"],
            codes: [],
            run: |ctx| async move { bobs_definitions(&ctx).await },
        },
        case! {
            id: "agents/definitions/013",
            spec: "GET /v1/agents: limit outside 1-100 is 400 param limit, an unknown order 400 param order, an unknown `after` 404 agents.cursor_not_found param after.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_definitions_list"],
            codes: ["invalid_request", "agents.cursor_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                create_def(&api, &json!({"model": "rt-one"})).await?;
                for q in ["limit=0", "limit=101", "limit=abc", "limit=-1"] {
                    let resp = api.send(api.get(&format!("{AGENTS}?{q}"))).await?;
                    expect_error_param(&resp, 400, "invalid_request", "limit").map_err(|e| anyhow!("{q}: {e}"))?;
                }
                let resp = api.send(api.get(&format!("{AGENTS}?order=sideways"))).await?;
                expect_error_param(&resp, 400, "invalid_request", "order")?;
                for after in [MISSING_AGENT, "agsess_000000000000000000000000"] {
                    let resp = api.send(api.get(&format!("{AGENTS}?after={after}"))).await?;
                    expect_error_param(&resp, 404, "agents.cursor_not_found", "after").map_err(|e| anyhow!("after={after}: {e}"))?;
                }
                for q in ["limit=1", "limit=100", "order=asc", "order=desc"] {
                    check_list(&api.json(&format!("{AGENTS}?{q}")).await?)?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/014",
            spec: "Owner isolation: another identity's definition id gets the identical 404 as a missing one on get, update, delete and session create (agent_id); its list excludes it and nothing changes.",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: [],
            endpoints: ["agents_definitions_create", "agents_definitions_get", "agents_definitions_update", "agents_definitions_delete", "agents_definitions_list", "agents_sessions_create"],
            codes: ["resource_not_found"],
            run: |ctx| async move { isolation(&ctx).await },
        },
        case! {
            id: "agents/definitions/015",
            spec: "MCP header values are never returned: create and update answer \"***\"; get, list, models and a session made from the definition never contain the value.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_definitions_create", "agents_definitions_get", "agents_definitions_list", "agents_definitions_update", "agents_models_list", "agents_models_get", "agents_sessions_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let d = create_def(&api, &json!({"model": "rt-one", "tools": [mcp_tool("secret")]})).await?;
                ensure!(d["tools"][0]["transport"]["headers"] == json!({"Authorization": "***"}), "create: {d}");
                let id = id_of(&d)?;
                let resp = api.send(api.post(&dpath(&id), &json!({"tools": [mcp_tool("secret2")]}))).await?;
                resp.expect_status(200)?;
                ensure!(resp.json()?["tools"][0]["transport"]["headers"] == json!({"Authorization": "***"}), "update: {}", resp.text());
                let session = api.send(api.post(SESSIONS, &json!({"agent_id": id}))).await?;
                session.expect_status(200)?;
                let sid = id_of(&session.json()?)?;
                let mut bodies = vec![resp, session];
                for path in [dpath(&id), format!("{AGENTS}?limit=100"), format!("{AGENTS}?order=asc&limit=100"), MODELS.to_string(), format!("{MODELS}/{id}"), spath(&sid, ""), format!("{SESSIONS}?limit=100")] {
                    let r = api.send(api.get(&path)).await?;
                    r.expect_status(200)?;
                    bodies.push(r);
                }
                for r in &bodies {
                    ensure!(!r.text().contains(SECRET), "the header value leaked:\n{}", r.describe());
                }
                ensure!(bodies[2].text().contains("***"), "GET shows the masked value: {}", bodies[2].text());
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/016",
            spec: "POST /v1/agents/sessions with agent_id uses the definition: session.agent.id is the definition id, its runtime, model and instructions are the definition's; an unknown agent_id is 404 resource_not_found param agent_id.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_definitions_create"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for (body, runtime) in [
                    (json!({"model": "rt-two-alias-3", "instructions": "From the definition."}), "rt-two"),
                    (json!({"model": "gpt-x", "runtime": "rt-one", "instructions": "Other.", "reasoning": {"effort": "low"}}), "rt-one"),
                ] {
                    let d = create_def(&api, &body).await?;
                    let s = api.create(&json!({"agent_id": d["id"]})).await?;
                    ensure!(s["agent"]["id"] == d["id"], "session.agent.id is the definition id: {s}");
                    ensure!(s["x_svc"]["runtime"] == runtime, "runtime {runtime}: {s}");
                    ensure!(s["agent"]["model"] == d["model"], "model: {s}");
                    ensure!(s["agent"]["instructions"] == d["instructions"], "instructions: {s}");
                    ensure!(s["agent"]["reasoning"] == d["reasoning"], "reasoning: {s}");
                }
                for missing in [MISSING_AGENT, "agent_nope"] {
                    expect_missing(&api, api.post(SESSIONS, &json!({"agent_id": missing})), "agent_id").await?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/017",
            spec: "A session keeps its copy of the definition: after the definition's instructions change the session still shows the old ones; after the definition is deleted the session still exists and a new input still runs a turn to completion.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_definitions_update", "agents_definitions_delete", "agents_sessions_get", "agents_sessions_events_create", "agents_sessions_turns_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let d = create_def(&api, &json!({"model": "rt-two", "instructions": "Old instructions."})).await?;
                let id = id_of(&d)?;
                let s = api.create(&json!({"agent_id": id})).await?;
                let sid = id_of(&s)?;
                let resp = api.send(api.post(&dpath(&id), &json!({"instructions": "New instructions."}))).await?;
                resp.expect_status(200)?;
                ensure!(resp.json()?["instructions"] == "New instructions.", "update: {}", resp.text());
                let got = api.session(&sid).await?;
                ensure!(got["agent"]["instructions"] == "Old instructions.", "the session keeps the old instructions: {got}");
                ensure!(got["agent"]["id"] == id.as_str(), "agent.id: {got}");
                api.send(api.delete(&dpath(&id))).await?.expect_status(200)?;
                let got = api.session(&sid).await?;
                ensure!(got["agent"]["id"] == id.as_str() && got["x_svc"]["runtime"] == "rt-two", "the session survives: {got}");
                api.input(&sid, "still here").await?;
                let turns = api.settle(&sid, 1).await?;
                ensure!(turns.len() == 1 && turns[0]["status"] == "completed", "the turn completes: {turns:?}");
                ensure!(turns[0]["x_svc"]["runtime"] == "rt-two", "on the definition's runtime: {turns:?}");
                Ok(())
            },
        },
        case! {
            id: "agents/definitions/018",
            spec: "GET /v1/agents/sessions?agent_id=<definition id> lists only the sessions made from that definition.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_list", "agents_sessions_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let a = id_of(&create_def(&api, &json!({"model": "rt-one"})).await?)?;
                let b = id_of(&create_def(&api, &json!({"model": "rt-one"})).await?)?;
                let mut mine = Vec::new();
                for _ in 0..2 {
                    mine.push(api.create(&json!({"agent_id": a})).await?["id"].clone());
                }
                api.create(&json!({"agent_id": b})).await?;
                api.create(&json!({})).await?;
                let listed: Vec<Value> = api.all(&format!("{SESSIONS}?agent_id={a}")).await?.iter().map(|s| s["id"].clone()).collect();
                ensure!(listed == mine, "sessions of {a}: {listed:?}, expected {mine:?}");
                let none = api.all(&format!("{SESSIONS}?agent_id={MISSING_AGENT}")).await?;
                ensure!(none.is_empty(), "no session has {MISSING_AGENT}: {none:?}");
                Ok(())
            },
        },
    ]
}
