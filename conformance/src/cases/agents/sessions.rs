//! Session create / get / list / update / delete, validation and owner isolation (issue 3).

use super::support::sessions::{
    Api, SESSIONS, check_id, expect_error_param, expect_missing, id_of, is_agent_id, pre_redact,
    spath,
};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};

const MISSING: &str = "agsess_000000000000000000000000";

/// Every session field of the design, with types and defaults.
fn check_session(ctx: &Ctx, s: &Value, runtime: &str) -> anyhow::Result<()> {
    check_id(&s["id"], "agsess")?;
    ensure!(s["object"] == "agent.session", "object: {s}");
    ensure!(
        s["created_at"].is_u64() && s["last_active_at"].is_u64(),
        "timestamps: {s}"
    );
    ensure!(
        ["idle", "in_progress", "failed"].contains(&s["status"].as_str().unwrap_or_default()),
        "status: {s}"
    );
    let a = &s["agent"];
    let agent_id = a["id"].as_str().unwrap_or_default();
    ensure!(is_agent_id(agent_id, runtime), "agent.id: {s}");
    ensure!(a["model"].is_string(), "agent.model: {s}");
    ensure!(
        a["instructions"].is_string() || a["instructions"].is_null(),
        "agent.instructions: {s}"
    );
    ensure!(a.get("name").is_some(), "agent.name: {s}");
    ensure!(a["tools"] == json!([]), "agent.tools: {s}");
    ensure!(
        a["multi_agent"] == json!({"enabled": false}),
        "agent.multi_agent: {s}"
    );
    ensure!(a["reasoning"].is_object(), "agent.reasoning: {s}");
    ensure!(a["service_tier"].is_string(), "agent.service_tier: {s}");
    ensure!(
        a["text"]["format"] == json!({"type": "text"}),
        "agent.text.format: {s}"
    );
    ensure!(
        a["text"]["verbosity"] == "medium",
        "agent.text.verbosity: {s}"
    );
    let e = &s["environment"];
    ensure!(
        e["type"] == "self_hosted" && e["id"] == "env_local",
        "environment: {s}"
    );
    ensure!(
        e["capability_directories"] == json!([]) && e["remote_url"] == "",
        "environment: {s}"
    );
    if let Some(dir) = ctx.dir() {
        let root = e["workspace_directory"].as_str().unwrap_or_default();
        let want = dir.join("workspace");
        let canonical = want.canonicalize().unwrap_or_else(|_| want.clone());
        ensure!(
            root == want.to_string_lossy() || root == canonical.to_string_lossy(),
            "workspace_directory {root:?}, expected {}",
            want.display()
        );
    }
    ensure!(s["metadata"].is_object(), "metadata: {s}");
    ensure!(s["usage"].is_null() || s["usage"].is_object(), "usage: {s}");
    ensure!(s["vault_ids"] == json!([]), "vault_ids: {s}");
    ensure!(s["error"].is_null() || s["error"].is_string(), "error: {s}");
    ensure!(s["required_actions"] == json!([]), "required_actions: {s}");
    let x = &s["x_svc"];
    ensure!(
        x["compute"] == "local_process" && x["runtime"] == runtime,
        "x_svc: {s}"
    );
    ensure!(
        x["model_resolved"].is_boolean(),
        "x_svc.model_resolved: {s}"
    );
    ensure!(
        x["thread_id"].is_null() || x["thread_id"].is_string(),
        "x_svc.thread_id: {s}"
    );
    Ok(())
}

/// A 400 `invalid_request` whose param equals `param`, or starts with it when `prefix`.
async fn refused_create(api: &Api, body: Value, param: &str, prefix: bool) -> anyhow::Result<()> {
    let resp = api.send(api.post(SESSIONS, &body)).await?;
    let b = resp
        .expect_error(400, "invalid_request")
        .map_err(|e| anyhow!("body {body}: {e}"))?;
    let got = b["error"]["param"].as_str().unwrap_or_default();
    let ok = if prefix {
        got.starts_with(param)
    } else {
        got == param
    };
    ensure!(ok, "body {body}: expected param {param:?}, got {got:?}");
    Ok(())
}

async fn isolation(ctx: &Ctx) -> anyhow::Result<()> {
    let alice = Api::as_token(ctx, "alice-token");
    let bob = Api::as_token(ctx, "bob-token");
    let sid = id_of(
        &alice
            .create(&json!({"metadata": {"owner": "alice"}}))
            .await?,
    )?;
    let mask = |text: String, id: &str| text.replace(id, "<id>");
    for (rb_other, rb_missing) in [
        (bob.get(&spath(&sid, "")), bob.get(&spath(MISSING, ""))),
        (
            bob.post(&spath(&sid, ""), &json!({"metadata": {}})),
            bob.post(&spath(MISSING, ""), &json!({"metadata": {}})),
        ),
        (
            bob.delete(&spath(&sid, "")),
            bob.delete(&spath(MISSING, "")),
        ),
        (
            bob.post(&spath(&sid, "/events"), &json!({"input": "hi"})),
            bob.post(&spath(MISSING, "/events"), &json!({"input": "hi"})),
        ),
        (
            bob.get(&spath(&sid, "/items")),
            bob.get(&spath(MISSING, "/items")),
        ),
        (
            bob.get(&spath(&sid, "/turns")),
            bob.get(&spath(MISSING, "/turns")),
        ),
        (
            bob.get(&spath(&sid, "/events?after=0")),
            bob.get(&spath(MISSING, "/events?after=0")),
        ),
    ] {
        let other = bob.send(rb_other).await?;
        let missing = bob.send(rb_missing).await?;
        expect_error_param(&other, 404, "resource_not_found", "id")?;
        expect_error_param(&missing, 404, "resource_not_found", "id")?;
        ensure!(
            mask(other.text(), &sid) == mask(missing.text(), MISSING),
            "another owner's session must answer exactly like a missing one:\n{}\n{}",
            other.describe(),
            missing.describe()
        );
    }
    let listed = bob.all(SESSIONS).await?;
    ensure!(
        listed.iter().all(|s| s["id"] != sid.as_str()),
        "bob's list shows alice's session"
    );
    let s = alice.session(&sid).await?;
    ensure!(
        s["metadata"] == json!({"owner": "alice"}),
        "bob changed alice's session: {s}"
    );
    let listed = alice.all(SESSIONS).await?;
    ensure!(
        listed.iter().any(|s| s["id"] == sid.as_str()),
        "alice's list misses her session"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/sessions/001",
            spec: "POST /v1/agents/sessions answers 200 with an `agent.session` carrying every field of the design (snapshot).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.post_json(SESSIONS, &json!({"metadata": {"case": "snapshot"}}))).await?;
                resp.expect_status(200)?;
                ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local: 1");
                let s = resp.json()?;
                check_session(&ctx, &s, "rt-one")?;
                ensure!(s["status"] == "idle" && s["usage"].is_null() && s["error"].is_null(), "{s}");
                ensure!(s["x_svc"]["thread_id"].is_null(), "no thread before the first turn: {s}");
                ensure!(s["metadata"] == json!({"case": "snapshot"}), "{s}");
                ctx.snapshot("agents__sessions__object", &pre_redact(&s)?)
            },
        },
        case! {
            id: "agents/sessions/002",
            spec: "GET /v1/agents/sessions/{id} returns the session; the list contains it and `agent_id` filters the list.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_sessions_get", "agents_sessions_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let created = api.create(&json!({"runtime": "rt-two", "agent": {"instructions": "Be brief."}})).await?;
                check_session(&ctx, &created, "rt-two")?;
                ensure!(created["agent"]["instructions"] == "Be brief.", "{created}");
                let sid = id_of(&created)?;
                let got = api.session(&sid).await?;
                ensure!(got["id"] == created["id"] && got["agent"] == created["agent"], "get: {got}\ncreated: {created}");
                check_session(&ctx, &got, "rt-two")?;
                let all = api.all(SESSIONS).await?;
                ensure!(all.iter().any(|s| s["id"] == created["id"]), "list misses the session");
                let agent_id = created["agent"]["id"].as_str().unwrap_or_default();
                let filtered = api.all(&format!("{SESSIONS}?agent_id={agent_id}")).await?;
                ensure!(filtered.len() == 1 && filtered[0]["id"] == created["id"], "agent_id filter: {filtered:?}");
                Ok(())
            },
        },
        case! {
            id: "agents/sessions/003",
            spec: "metadata takes scalar values (strings, numbers, booleans); a nested object, array or null value is 400 param `metadata.<key>`.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let s = api.create(&json!({"metadata": {"s": "x", "n": 1, "f": 1.5, "b": true}})).await?;
                let m = &s["metadata"];
                ensure!(m["s"] == "x", "metadata: {s}");
                for key in ["n", "f", "b"] {
                    ensure!(m.get(key).is_some_and(|v| !v.is_null() && !v.is_object() && !v.is_array()), "metadata.{key}: {s}");
                }
                for bad in [json!({"k": 1}), json!([1]), Value::Null] {
                    refused_create(&api, json!({"metadata": {"ok": "v", "bad": bad}}), "metadata.bad", false).await?;
                }
                refused_create(&api, json!({"metadata": "text"}), "metadata", true).await?;
                Ok(())
            },
        },
        case! {
            id: "agents/sessions/004",
            spec: "Create refusals: unknown keys (param = the key), tools, multi_agent.enabled=true, reasoning.summary, other environment types, hosted environment keys and unknown vault ids are 400; an unknown agent_id, environment id or environment_template_id is 404 resource_not_found naming it.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_sessions_create"],
            codes: ["invalid_request", "resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let rows = [
                    (json!({"bogus": 1}), "bogus", false),
                    (json!({"agent": {"bogus": 1}}), "agent.bogus", false),
                    (json!({"agent": {"tools": [{"type": "function", "name": "f"}]}}), "agent.tools", true),
                    (json!({"agent": {"multi_agent": {"enabled": true}}}), "agent.multi_agent.enabled", false),
                    (json!({"agent": {"reasoning": {"summary": "auto"}}}), "agent.reasoning.summary", false),
                    (json!({"agent": {"reasoning": {"effort": "extreme"}}}), "agent.reasoning", true),
                    (json!({"agent": {"service_tier": "flex"}}), "agent.service_tier", true),
                    (json!({"environment": {"type": "cloud"}}), "environment", true),
                    (json!({"environment": {"type": "self_hosted", "network": {"access": "enabled"}}}), "environment.network", false),
                    (json!({"vault_ids": ["vlt_abc"]}), "vault_ids[0]", false),
                    (json!({"input": 5}), "input", true),
                ];
                for (body, param, prefix) in rows {
                    refused_create(&api, body, param, prefix).await?;
                }
                expect_missing(&api, api.post(SESSIONS, &json!({"agent_id": "agent_nope"})), "agent_id").await?;
                expect_missing(&api, api.post(SESSIONS, &json!({"environment": {"type": "self_hosted", "id": "env_abc"}})), "environment.id").await?;
                expect_missing(&api, api.post(SESSIONS, &json!({"environment_template_id": "envtpl_abc"})), "environment_template_id").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/sessions/005",
            spec: "Accepted agent options: reasoning.effort on rt-one, environment none/self_hosted, service_tier, text.verbosity medium; reasoning on rt-two is 400.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let s = api.create(&json!({"runtime": "rt-one", "agent": {"reasoning": {"effort": "low"}}})).await?;
                ensure!(s["agent"]["reasoning"] == json!({"effort": "low"}), "{s}");
                for body in [
                    json!({"environment": {"type": "none"}}),
                    json!({"environment": {"type": "self_hosted"}}),
                    json!({"agent": {"service_tier": "default"}}),
                    json!({"agent": {"service_tier": "auto", "text": {"verbosity": "medium", "format": {"type": "text"}}}}),
                    json!({"agent": {"tools": [], "multi_agent": {"enabled": false}}, "vault_ids": []}),
                ] {
                    api.create(&body).await?;
                }
                refused_create(&api, json!({"runtime": "rt-two", "agent": {"reasoning": {"effort": "low"}}}), "agent.reasoning", true).await?;
                Ok(())
            },
        },
        case! {
            id: "agents/sessions/006",
            spec: "POST /v1/agents/sessions/{id} replaces metadata (null → {}); any other key is 400 param = the key; a missing id is 404.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_update", "agents_sessions_get"],
            codes: ["invalid_request", "resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = id_of(&api.create(&json!({"metadata": {"a": "1", "b": "2"}})).await?)?;
                let resp = api.send(api.post(&spath(&sid, ""), &json!({"metadata": {"c": "3"}}))).await?;
                resp.expect_status(200)?;
                let s = resp.json()?;
                ensure!(s["object"] == "agent.session" && s["metadata"] == json!({"c": "3"}), "replaced: {s}");
                ensure!(api.session(&sid).await?["metadata"] == json!({"c": "3"}), "stored");
                let resp = api.send(api.post(&spath(&sid, ""), &json!({"metadata": null}))).await?;
                resp.expect_status(200)?;
                ensure!(resp.json()?["metadata"] == json!({}), "null clears: {}", resp.text());
                for (body, param) in [
                    (json!({"agent": {"model": "x"}}), "agent"),
                    (json!({"metadata": {}, "status": "idle"}), "status"),
                ] {
                    expect_invalid_update(&api, &sid, body, param).await?;
                }
                expect_invalid_update(&api, &sid, json!({"metadata": {"n": {"x": 1}}}), "metadata.n").await?;
                expect_missing(&api, api.post(&spath(MISSING, ""), &json!({"metadata": {}})), "id").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/sessions/007",
            spec: "DELETE /v1/agents/sessions/{id} answers the deleted object; the session is then 404 resource_not_found everywhere and gone from the list.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_delete", "agents_sessions_get", "agents_sessions_list"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = id_of(&api.create(&json!({})).await?)?;
                let resp = api.send(api.delete(&spath(&sid, ""))).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(
                    body == json!({"id": sid, "object": "agent.session.deleted", "deleted": true, "x_svc": {}}),
                    "deleted object: {body}"
                );
                expect_missing(&api, api.get(&spath(&sid, "")), "id").await?;
                expect_missing(&api, api.delete(&spath(&sid, "")), "id").await?;
                expect_missing(&api, api.get(&spath(&sid, "/items")), "id").await?;
                let all = api.all(SESSIONS).await?;
                ensure!(all.iter().all(|s| s["id"] != sid.as_str()), "deleted session still listed");
                Ok(())
            },
        },
        case! {
            id: "agents/sessions/008",
            spec: "A missing session id is 404 resource_not_found param id on every per-session route.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: [
                "agents_sessions_get", "agents_sessions_update", "agents_sessions_delete",
                "agents_sessions_events_create", "agents_sessions_events_stream",
                "agents_sessions_items_list", "agents_sessions_turns_list", "agents_sessions_turns_get",
                "agents_sessions_turns_items_list", "agents_artifacts_list", "agents_traces_list",
                "agents_subagents_list",
            ],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let turn = "turn_000000000000000000000000";
                let rbs = [
                    api.get(&spath(MISSING, "")),
                    api.post(&spath(MISSING, ""), &json!({"metadata": {}})),
                    api.delete(&spath(MISSING, "")),
                    api.post(&spath(MISSING, "/events"), &json!({"input": "hi"})),
                    api.get(&spath(MISSING, "/events?after=0")),
                    api.get(&spath(MISSING, "/items")),
                    api.get(&spath(MISSING, "/turns")),
                    api.get(&spath(MISSING, &format!("/turns/{turn}"))),
                    api.get(&spath(MISSING, &format!("/turns/{turn}/items"))),
                    api.get(&spath(MISSING, "/artifacts")),
                    api.get(&spath(MISSING, "/traces")),
                    api.get(&spath(MISSING, "/subagents")),
                ];
                for rb in rbs {
                    expect_missing(&api, rb, "id").await?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/sessions/009",
            spec: "Owner isolation: another identity's session id gets the identical 404 as a missing id on every route, and its list excludes the session.",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: ["needs:fake-runtimes"],
            endpoints: [
                "agents_sessions_create", "agents_sessions_get", "agents_sessions_list",
                "agents_sessions_update", "agents_sessions_delete", "agents_sessions_events_create",
                "agents_sessions_events_stream", "agents_sessions_items_list", "agents_sessions_turns_list",
            ],
            codes: ["resource_not_found"],
            run: |ctx| async move { isolation(&ctx).await },
        },
    ]
}

async fn expect_invalid_update(
    api: &Api,
    sid: &str,
    body: Value,
    param: &str,
) -> anyhow::Result<()> {
    let resp = api.send(api.post(&spath(sid, ""), &body)).await?;
    expect_error_param(&resp, 400, "invalid_request", param)
        .map_err(|e| anyhow!("update body {body}: {e}"))?;
    Ok(())
}
