//! Environment templates (agents spec 2.7, 4.6): CRUD, listings without variable values or
//! file contents, the refused keys, and `environment_template_id` at session creation.

use super::environments::{ENVS, b64, create, workspace};
use super::support::sessions::{Api, check_list, expect_error_param, id_of};
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};

const TEMPLATES: &str = "/v1/agents/environments/templates";

async fn template(api: &Api, body: &Value) -> anyhow::Result<Value> {
    let resp = api.send(api.post(TEMPLATES, body)).await?;
    resp.expect_status(200)?;
    let t = resp.json()?;
    ensure!(t["object"] == "agent.environment.template", "{t}");
    Ok(t)
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/environment_templates/001",
            spec: "Templates `{name, env, files}`: create, get, list, update, delete, all 200; listings show files by `size_bytes` only and no `env` values or file contents.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environment_templates_create", "agents_environment_templates_get", "agents_environment_templates_list", "agents_environment_templates_update", "agents_environment_templates_delete"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let t = template(&api, &json!({"name": "base", "env": {"PROJECT_MODE": "tpl-5c1e"}, "files": [{"type": "inline", "path": "/workspace/README.txt", "data": b64("from the template")}]})).await?;
                let id = id_of(&t)?;
                ensure!(t["files"] == json!([{"type": "inline", "path": "/workspace/README.txt", "size_bytes": 17}]), "{t}");
                let text = t.to_string();
                ensure!(!text.contains("tpl-5c1e") && !text.contains(&b64("from the template")), "no env value or content: {t}");
                ensure!(api.json(&format!("{TEMPLATES}/{id}")).await? == t, "get answers the template");
                let page = api.json(&format!("{TEMPLATES}?limit=100")).await?;
                check_list(&page)?;
                ensure!(page["data"].as_array().context("data")?.iter().any(|x| x["id"] == id.as_str()), "listed: {page}");
                ensure!(!page.to_string().contains("tpl-5c1e"), "the list carries no env value");
                let up = api.send(api.post(&format!("{TEMPLATES}/{id}"), &json!({"name": "renamed", "files": []}))).await?;
                up.expect_status(200)?;
                let up = up.json()?;
                ensure!(up["name"] == "renamed" && up["files"] == json!([]) && up["created_at"] == t["created_at"], "{up}");
                let gone = api.send(api.delete(&format!("{TEMPLATES}/{id}"))).await?;
                gone.expect_status(200)?;
                ensure!(gone.json()? == json!({"id": id, "object": "agent.environment.template.deleted", "deleted": true}), "deleted object");
                let resp = api.send(api.get(&format!("{TEMPLATES}/{id}"))).await?;
                expect_error_param(&resp, 404, "resource_not_found", "environment_template_id")?;
                ctx.snapshot("agents__environment_templates__object", &t)
            },
        },
        case! {
            id: "agents/environment_templates/002",
            spec: "The fields refused by environments are 400 on template create and update too, as are refused variable names, refused paths and unknown keys.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environment_templates_create", "agents_environment_templates_update"],
            codes: ["invalid_request", "agents.path_refused"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let t = template(&api, &json!({"name": "t"})).await?;
                let id = id_of(&t)?;
                for (body, param) in [
                    (json!({"network": {"access": "disabled"}}), "network"),
                    (json!({"packages": {"python": ["x"]}}), "packages"),
                    (json!({"setup_commands": []}), "setup_commands"),
                    (json!({"plugins": []}), "plugins"),
                    (json!({"skills": []}), "skills"),
                    (json!({"desktop": {"enabled": false}}), "desktop"),
                    (json!({"container_size": "small"}), "container_size"),
                    (json!({"capability_directories": []}), "capability_directories"),
                    (json!({"env": {"HOME": "/tmp"}}), "env.HOME"),
                    (json!({"workspace_directory": "/srv"}), "workspace_directory"),
                ] {
                    for path in [TEMPLATES.to_owned(), format!("{TEMPLATES}/{id}")] {
                        let resp = api.send(api.post(&path, &body)).await?;
                        expect_error_param(&resp, 400, "invalid_request", param).with_context(|| format!("{path} {body}"))?;
                    }
                }
                let resp = api.send(api.post(TEMPLATES, &json!({"files": [{"type": "inline", "path": ".ssh/config", "data": b64("x")}]}))).await?;
                expect_error_param(&resp, 400, "agents.path_refused", "files[0].path")?;
                Ok(())
            },
        },
        case! {
            id: "agents/environment_templates/003",
            spec: "`environment_template_id` (in the body or inside `environment`) applies the template at session creation: its files are written to the workspace and its variables reach the runtime; an environment created from a template gets them too.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_environment_templates_create", "agents_sessions_create", "agents_environments_create", "agents_environment_files_list"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let t = template(&api, &json!({"name": "base", "env": {"PROJECT_MODE": "tpl-5c1e"}, "files": [{"type": "inline", "path": "seed.txt", "data": b64("seed")}]})).await?;
                let tid = id_of(&t)?;
                let dir = workspace(&ctx, "t003");
                let s = api.create(&json!({"environment": {"type": "self_hosted", "workspace_directory": dir}, "environment_template_id": tid, "input": "[[scenario:env:PROJECT_MODE]]"})).await?;
                let sid = id_of(&s)?;
                api.settle(&sid, 1).await?;
                let items = api.items(&sid).await?;
                ensure!(items.iter().any(|i| i.to_string().contains("tpl-5c1e")), "the template's variable reached the runtime: {items:?}");
                if ctx.dir().is_some() {
                    ensure!(std::fs::read_to_string(format!("{dir}/seed.txt"))? == "seed", "the template's file was written");
                }
                let env = create(&api, &json!({"environment": {"type": "self_hosted", "workspace_directory": workspace(&ctx, "t003b"), "environment_template_id": tid}})).await?;
                ensure!(env["environment_template_id"] == tid.as_str(), "{env}");
                let eid = id_of(&env)?;
                let files = api.json(&format!("{ENVS}/{eid}/files")).await?;
                ensure!(files["data"].as_array().map(Vec::len) == Some(1), "the template's file is in the environment: {files}");
                let resp = api.send(api.post("/v1/agents/sessions", &json!({"environment_template_id": "envtpl_ffffffffffffffffffffffff"}))).await?;
                expect_error_param(&resp, 404, "resource_not_found", "environment_template_id")?;
                Ok(())
            },
        },
    ]
}
