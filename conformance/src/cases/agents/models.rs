//! GET /v1/models and GET /v1/models/{model} (issue 4): the two implemented
//! runtimes plus the caller's agent definitions.

use super::definitions::{AGENTS, MISSING_AGENT, MODELS, create_def, dpath};
use super::support::sessions::{Api, check_list, expect_error_param, id_of};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};

/// Every field of a model object.
fn check_model(m: &Value) -> anyhow::Result<()> {
    ensure!(m["id"].is_string(), "id: {m}");
    ensure!(m["object"] == "model", "object: {m}");
    ensure!(m["created"].is_u64(), "created (unix seconds): {m}");
    ensure!(m["owned_by"] == "svc-local", "owned_by: {m}");
    let kind = m["x_svc"]["kind"].as_str().unwrap_or_default();
    ensure!(
        ["runtime", "agent_definition"].contains(&kind),
        "x_svc.kind: {m}"
    );
    ensure!(
        ["rt-one", "rt-two"].contains(&m["x_svc"]["runtime"].as_str().unwrap_or_default()),
        "x_svc.runtime: {m}"
    );
    if kind == "agent_definition" {
        ensure!(
            m["id"].as_str().is_some_and(|id| id.starts_with("agent_")),
            "a definition model has the definition id: {m}"
        );
    }
    Ok(())
}

/// GET /v1/models: the envelope checked, every model checked; returns `data`.
async fn models(api: &Api) -> anyhow::Result<Vec<Value>> {
    let resp = api.send(api.get(MODELS)).await?;
    resp.expect_status(200)?;
    ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local: 1");
    let body = resp.json()?;
    check_list(&body)?;
    ensure!(
        body["has_more"] == false,
        "GET /v1/models answers the whole list in one response (the OpenAI SDK's models.list() does not page): {body}"
    );
    let data = body["data"].as_array().cloned().unwrap_or_default();
    for m in &data {
        check_model(m)?;
        if m["x_svc"]["kind"] == "runtime" {
            ensure!(
                m["x_svc"]["runtime"] == m["id"],
                "a listed runtime model names itself: {m}"
            );
        }
    }
    Ok(data)
}

async fn get_model(api: &Api, model: &str) -> anyhow::Result<Value> {
    let resp = api.send(api.get(&format!("{MODELS}/{model}"))).await?;
    resp.expect_status(200)
        .map_err(|e| anyhow!("model {model}: {e}"))?;
    let m = resp.json()?;
    check_model(&m)?;
    Ok(m)
}

fn kind_runtime(m: &Value) -> (&str, &str) {
    let x = &m["x_svc"];
    (
        x["kind"].as_str().unwrap_or_default(),
        x["runtime"].as_str().unwrap_or_default(),
    )
}

fn find<'a>(list: &'a [Value], id: &str) -> Option<&'a Value> {
    list.iter().find(|m| m["id"] == id)
}

async fn isolation(ctx: &Ctx) -> anyhow::Result<()> {
    let alice = Api::as_token(ctx, "alice-token");
    let bob = Api::as_token(ctx, "bob-token");
    let id =
        id_of(&create_def(&alice, &json!({"model": "rt-two", "name": "alice's model"})).await?)?;
    let theirs = models(&alice).await?;
    let m = find(&theirs, &id).ok_or_else(|| anyhow!("alice's models miss her definition {id}"))?;
    ensure!(
        m["x_svc"]["kind"] == "agent_definition" && m["x_svc"]["runtime"] == "rt-two",
        "{m}"
    );
    ensure!(
        &get_model(&alice, &id).await? == m,
        "get equals the listed model"
    );

    let bobs = models(&bob).await?;
    ensure!(
        find(&bobs, &id).is_none(),
        "bob's models show alice's definition"
    );
    let bobs_defs = bob.all(AGENTS).await?;
    for m in bobs
        .iter()
        .filter(|m| m["x_svc"]["kind"] == "agent_definition")
    {
        ensure!(
            bobs_defs.iter().any(|d| d["id"] == m["id"]),
            "bob's models list only his own definitions: {m}"
        );
    }
    let other = bob.send(bob.get(&format!("{MODELS}/{id}"))).await?;
    let missing = bob
        .send(bob.get(&format!("{MODELS}/{MISSING_AGENT}")))
        .await?;
    expect_error_param(&other, 404, "model_not_found", "model")?;
    expect_error_param(&missing, 404, "model_not_found", "model")?;
    ensure!(
        other.text().replace(&id, "<id>") == missing.text().replace(MISSING_AGENT, "<id>"),
        "another owner's definition must answer exactly like a missing model:\n{}\n{}",
        other.describe(),
        missing.describe()
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/models/001",
            spec: "GET /v1/models is a list of models ({id, object: model, created, owned_by: svc-local, x_svc {kind, runtime}}) holding rt-one and rt-two (not the declared-only runtimes) and the caller's definitions.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_models_list", "agents_definitions_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let id = id_of(&create_def(&api, &json!({"model": "rt-two-alias-3"})).await?)?;
                let list = models(&api).await?;
                for rt in ["rt-one", "rt-two"] {
                    let m = find(&list, rt).ok_or_else(|| anyhow!("{rt} missing from {list:?}"))?;
                    ensure!(m["x_svc"]["kind"] == "runtime", "{m}");
                }
                for declared in ["declared-a", "declared-b", "command"] {
                    ensure!(find(&list, declared).is_none(), "{declared} is not implemented, not a model");
                }
                let m = find(&list, &id).ok_or_else(|| anyhow!("definition {id} missing from the models"))?;
                ensure!(kind_runtime(m) == ("agent_definition", "rt-two"), "{m}");
                // Other cases of this profile create and delete definitions meanwhile; that the
                // list holds exactly the caller's is checked by definitions/012, alone as bob.
                for m in list.iter().filter(|m| m["x_svc"]["kind"] == "agent_definition") {
                    ensure!(m["id"].as_str().is_some_and(|id| id.starts_with("agent_")), "{m}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/models/002",
            spec: "GET /v1/models/{model} answers 200 for a runtime id, a runtime alias and a definition id; anything else (unknown name, declared-only runtime, missing definition) is 404 model_not_found param model.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_models_get", "agents_definitions_create"],
            codes: ["model_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let d = create_def(&api, &json!({"model": "gpt-x", "runtime": "rt-two"})).await?;
                let id = id_of(&d)?;
                let list = models(&api).await?;
                for rt in ["rt-one", "rt-two"] {
                    let m = get_model(&api, rt).await?;
                    ensure!(Some(&m) == find(&list, rt), "get {rt} equals the listed model: {m}");
                }
                for (alias, rt) in [("rt-one-alias", "rt-one"), ("rt-two-alias-3", "rt-two"), ("rt-two-alias-1", "rt-two")] {
                    let m = get_model(&api, alias).await?;
                    ensure!(kind_runtime(&m) == ("runtime", rt), "alias {alias}: {m}");
                }
                let m = get_model(&api, &id).await?;
                ensure!(m["id"] == id.as_str(), "{m}");
                ensure!(kind_runtime(&m) == ("agent_definition", "rt-two"), "{m}");
                for bad in ["gpt-nope", "declared-a", "command", MISSING_AGENT] {
                    let resp = api.send(api.get(&format!("{MODELS}/{bad}"))).await?;
                    expect_error_param(&resp, 404, "model_not_found", "model").map_err(|e| anyhow!("{bad}: {e}"))?;
                }
                api.send(api.delete(&dpath(&id))).await?.expect_status(200)?;
                let resp = api.send(api.get(&format!("{MODELS}/{id}"))).await?;
                expect_error_param(&resp, 404, "model_not_found", "model")?;
                Ok(())
            },
        },
        case! {
            id: "agents/models/003",
            spec: "Models are owner-scoped: another identity's definition is not in the caller's models and GET /v1/models/{its id} answers exactly like a missing model (404 model_not_found).",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: [],
            endpoints: ["agents_models_list", "agents_models_get", "agents_definitions_create"],
            codes: ["model_not_found"],
            run: |ctx| async move { isolation(&ctx).await },
        },
        case! {
            id: "agents/models/004",
            spec: "Snapshot of the models list: the two runtimes and one definition of the caller (other definitions left out, `created` masked after checks).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_models_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let id = id_of(&create_def(&api, &json!({"model": "rt-one", "name": "snap"})).await?)?;
                let mut body = api.json(MODELS).await?;
                check_list(&body)?;
                ensure!(body["has_more"] == false, "the whole list in one response: {body}");
                let data = body["data"].as_array().cloned().unwrap_or_default();
                let mut kept = Vec::new();
                for mut m in data {
                    check_model(&m)?;
                    if m["x_svc"]["kind"] == "runtime" || m["id"] == id.as_str() {
                        m["created"] = json!("[created]");
                        kept.push(m);
                    }
                }
                body["first_id"] = kept.first().map_or(Value::Null, |m| m["id"].clone());
                body["last_id"] = kept.last().map_or(Value::Null, |m| m["id"].clone());
                body["data"] = json!(kept);
                ctx.snapshot("agents__models__list", &body)
            },
        },
    ]
}
