//! Environments (agents spec 2.7, 4.6): type resolution, workspace rules, refused variables
//! and keys, inline files, and sessions that run in an environment with its variables.

use super::support::sessions::{Api, check_list, expect_error_param, id_of};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, ensure};
use base64::Engine;
use serde_json::{Value, json};

pub const ENVS: &str = "/v1/agents/environments";

pub fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A fresh workspace directory for one environment: under the profile's directory when the
/// suite started the server, else under the spec's default `/workspace`.
pub fn workspace(ctx: &Ctx, name: &str) -> String {
    match ctx.dir() {
        Some(dir) => dir.join("envs").join(name).display().to_string(),
        None => format!("/workspace/conformance-{name}"),
    }
}

/// POST an environment body, expecting 200; returns the environment.
pub async fn create(api: &Api, body: &Value) -> anyhow::Result<Value> {
    let resp = api.send(api.post(ENVS, body)).await?;
    resp.expect_status(200)?;
    let env = resp.json()?;
    ensure!(
        env["object"] == "agent.environment" && env["type"] == "self_hosted",
        "an environment resolves to self_hosted: {env}"
    );
    Ok(env)
}

async fn refused(api: &Api, body: Value, param: &str) -> anyhow::Result<()> {
    let resp = api.send(api.post(ENVS, &body)).await?;
    expect_error_param(&resp, 400, "invalid_request", param)
        .with_context(|| format!("body: {body}"))?;
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/environments/001",
            spec: "POST /v1/agents/environments creates a self_hosted environment (flat body or the SDK's `{environment: {...}}`); GET one and the list show it; `env` is applied and never returned.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environments_create", "agents_environments_get", "agents_environments_list"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let dir = workspace(&ctx, "e001");
                let env = create(&api, &json!({"type": "self_hosted", "workspace_directory": dir, "env": {"PROJECT_MODE": "ci-7f3a"}})).await?;
                ensure!(env["workspace_directory"] == dir.as_str() && env["status"] == "ready", "{env}");
                ensure!(!env.to_string().contains("7f3a") && !env.to_string().contains("PROJECT_MODE"), "env is never returned: {env}");
                let id = id_of(&env)?;
                ensure!(id.starts_with("env_"), "id form env_<id>: {id}");
                let got = api.json(&format!("{ENVS}/{id}")).await?;
                ensure!(got == env, "get answers the same object:\n{got}\n{env}");
                let sdk = create(&api, &json!({"environment": {"type": "self_hosted", "workspace_directory": workspace(&ctx, "e001b")}})).await?;
                let page = api.json(&format!("{ENVS}?limit=100&order=asc")).await?;
                check_list(&page)?;
                let ids: Vec<&Value> = page["data"].as_array().context("data")?.iter().map(|e| &e["id"]).collect();
                ensure!(ids.contains(&&env["id"]) && ids.contains(&&sdk["id"]), "listed: {ids:?}");
                let resp = api.send(api.get(&format!("{ENVS}/env_ffffffffffffffffffffffff"))).await?;
                expect_error_param(&resp, 404, "resource_not_found", "environment_id")?;
                ctx.snapshot("agents__environments__object", &env)
            },
        },
        case! {
            id: "agents/environments/002",
            spec: "A bare `hosted` (or the SDK's `openai_hosted`) type is converted to `self_hosted` and noted in `x_svc.differences`; `hosted` with configuration is 400; any other type is 400.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environments_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for kind in ["hosted", "openai_hosted"] {
                    let env = create(&api, &json!({"environment": {"type": kind}})).await?;
                    let notes = env["x_svc"]["differences"].as_array().context("differences")?;
                    ensure!(notes.iter().any(|n| n.as_str().is_some_and(|n| n.contains(kind))), "{kind} conversion noted: {env}");
                }
                refused(&api, json!({"environment": {"type": "hosted", "env": {"A": "1"}}}), "environment.type").await?;
                refused(&api, json!({"type": "openai_hosted", "workspace_directory": "/srv/x"}), "type").await?;
                refused(&api, json!({"type": "kubernetes"}), "type").await?;
                let plain = create(&api, &json!({"workspace_directory": workspace(&ctx, "e002")})).await?;
                ensure!(plain["x_svc"]["differences"] == json!([]), "no note without a conversion: {plain}");
                Ok(())
            },
        },
        case! {
            id: "agents/environments/003",
            spec: "`workspace_directory` is an absolute path without `..` and not `/`, `/etc`, `/proc` or a similar system directory; otherwise 400 naming it.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environments_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for bad in ["relative/dir", "/", "/etc", "/etc/app", "/proc", "/proc/1/root", "/sys", "/dev", "/usr", "/bin", "/srv/../etc", ""] {
                    refused(&api, json!({"workspace_directory": bad}), "workspace_directory").await.with_context(|| bad.to_owned())?;
                }
                refused(&api, json!({"environment": {"type": "self_hosted", "workspace_directory": "/etc"}}), "environment.workspace_directory").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/environments/004",
            spec: "`env` names refused with 400: PATH, HOME, secret-like names, proxy variables, runtime-specific prefixes, GIT_*, SVC_*; values are strings.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environments_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for name in ["PATH", "HOME", "GITHUB_TOKEN", "DB_PASSWORD", "API_KEY", "CLIENT_SECRET", "HTTPS_PROXY", "http_proxy", "NO_PROXY", "OPENAI_BASE_URL", "ANTHROPIC_MODEL", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "GIT_DIR", "SVC_SERVER_TOKEN", "LD_PRELOAD"] {
                    refused(&api, json!({"env": {name: "x"}}), &format!("env.{name}")).await?;
                }
                refused(&api, json!({"env": {"GOOD": 1}}), "env.GOOD").await?;
                refused(&api, json!({"env": {"1BAD": "x"}}), "env.1BAD").await?;
                refused(&api, json!({"env": ["A=1"]}), "env").await?;
                create(&api, &json!({"workspace_directory": workspace(&ctx, "e004"), "env": {"LANG": "C.UTF-8", "PROJECT_NAME": "demo"}})).await?;
                Ok(())
            },
        },
        case! {
            id: "agents/environments/010",
            spec: "`env` names that inject code or configuration are refused with 400 naming them: interpreter and loader options (NODE_OPTIONS, PYTHONPATH, PYTHONSTARTUP), CA bundles (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, REQUESTS_CA_BUNDLE), package registry settings (npm_config_*, PIP_*), shell start-up hooks (PROMPT_COMMAND) and XDG directories (XDG_CONFIG_HOME, which with a `.config/git/config` file would inject git configuration); harmless names of the same families still pass.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environments_create", "agents_sessions_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for name in ["NODE_OPTIONS", "PYTHONPATH", "PYTHONSTARTUP", "XDG_CONFIG_HOME", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PROMPT_COMMAND", "npm_config_registry", "NPM_CONFIG_USERCONFIG", "PIP_INDEX_URL", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS", "CURL_CA_BUNDLE", "ZDOTDIR", "XDG_DATA_HOME"] {
                    refused(&api, json!({"env": {name: "x"}}), &format!("env.{name}")).await?;
                }
                // The same rule on a session's inline environment.
                let resp = api.send(api.post(super::support::sessions::SESSIONS, &json!({"environment": {"type": "self_hosted", "env": {"XDG_CONFIG_HOME": "/tmp/x"}}}))).await?;
                expect_error_param(&resp, 400, "invalid_request", "environment.env.XDG_CONFIG_HOME")?;
                create(&api, &json!({"workspace_directory": workspace(&ctx, "e010"), "env": {"NODE_ENV": "production", "PYTHONUNBUFFERED": "1", "CARGO_TERM_COLOR": "never"}})).await?;
                Ok(())
            },
        },
        case! {
            id: "agents/environments/011",
            spec: "`workspace_directory` is judged on the path the kernel will open: a component that is a symbolic link (one to `/etc`, or inside the workspace root), or a directory that configures git, remote access, a shell or an agent tool (`.git`, `.ssh`, ...) anywhere on the path, is 400 `agents.path_refused` naming it, also on a session's inline environment; a refused directory is never created and no file lands in it.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environments_create", "agents_sessions_create"],
            codes: ["agents.path_refused"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let root = ctx.dir().context("this case makes links beside the server's workspace: it needs the profile's directory")?.join("envs").join("e011");
                std::fs::create_dir_all(&root)?;
                let to_etc = root.join("to-etc");
                std::os::unix::fs::symlink("/etc", &to_etc)?;
                let inner = root.join("inner");
                std::fs::create_dir_all(&inner)?;
                std::os::unix::fs::symlink(&inner, root.join("to-inner"))?;
                let key = json!([{"type": "inline", "path": "authorized_keys", "data": b64("ssh-ed25519 AAAA attacker")}]);
                let shown = |p: &std::path::Path| p.display().to_string();
                for dir in [
                    shown(&to_etc),
                    shown(&to_etc.join("app")),
                    shown(&root.join("to-inner").join("ws")),
                    shown(&root.join("repo/.git/hooks")),
                    shown(&root.join("home/.ssh")),
                    shown(&root.join("home/.SSH")),
                    shown(&root.join("proj/.codex")),
                ] {
                    let resp = api.send(api.post(ENVS, &json!({"workspace_directory": dir, "files": key}))).await?;
                    let body = expect_error_param(&resp, 400, "agents.path_refused", "workspace_directory").with_context(|| dir.clone())?;
                    // A link on the way is named as a link, wherever it stands.
                    if dir.contains("to-") {
                        let message = body["error"]["message"].as_str().unwrap_or_default();
                        ensure!(message.contains("symbolic link"), "{dir}: the message names the link: {message}");
                    }
                }
                let resp = api.send(api.post(super::support::sessions::SESSIONS, &json!({"environment": {"type": "self_hosted", "workspace_directory": shown(&to_etc)}}))).await?;
                expect_error_param(&resp, 400, "agents.path_refused", "environment.workspace_directory")?;
                for never in ["repo/.git", "home/.ssh", "home/.SSH", "proj/.codex", "inner/ws"] {
                    ensure!(!root.join(never).exists(), "`{never}` was created for a refused workspace");
                }
                ensure!(!std::path::Path::new("/etc/app").exists(), "nothing was created through the link to /etc");
                // The same places written without links or refused names are fine.
                let ok = create(&api, &json!({"workspace_directory": shown(&inner.join("ws")), "files": key})).await?;
                ensure!(inner.join("ws/authorized_keys").is_file(), "the file lands in a plain workspace: {ok}");
                Ok(())
            },
        },
        case! {
            id: "agents/environments/005",
            spec: "The keys network, packages, setup_commands, plugins, skills, desktop, container_size and capability_directories are 400; so is any unknown key.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environments_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let values = [
                    ("network", json!({"access": "enabled"})),
                    ("packages", json!({"npm": ["left-pad"]})),
                    ("setup_commands", json!([{"command": "true"}])),
                    ("plugins", json!([])),
                    ("skills", json!([])),
                    ("desktop", json!({"enabled": true})),
                    ("container_size", json!("large")),
                    ("capability_directories", json!(["/caps"])),
                ];
                for (key, value) in values {
                    refused(&api, json!({key: value.clone()}), key).await?;
                    refused(&api, json!({"environment": {"type": "self_hosted", key: value}}), &format!("environment.{key}")).await?;
                }
                refused(&api, json!({"colour": "blue"}), "colour").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/environments/006",
            spec: "Inline `files` ({type: inline, path, data} or {type: file_id, path, file_id}) are written under the workspace at creation and shown by size; an unknown file id is 400; a refused path fails the whole creation and leaves nothing written.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environments_create", "agents_files_create", "agents_environment_files_list"],
            codes: ["invalid_request", "agents.path_refused"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let upload = api.send(api.post("/v1/files", &json!({"purpose": "user_data", "filename": "cfg.json", "data": b64("{\"a\":1}")}))).await?.json()?;
                let file_id = upload["id"].as_str().context("file id")?;
                let dir = workspace(&ctx, "e006");
                let env = create(&api, &json!({"workspace_directory": dir, "files": [
                    {"type": "inline", "path": "src/main.txt", "data": b64("hello")},
                    {"type": "file_id", "path": format!("{dir}/conf/cfg.json"), "file_id": file_id},
                ]})).await?;
                let files = env["files"].as_array().context("files")?;
                ensure!(files.len() == 2, "{env}");
                ensure!(files[0]["path"] == format!("{dir}/src/main.txt") && files[0]["size_bytes"] == 5 && files[0]["type"] == "inline", "{env}");
                ensure!(files[1]["type"] == "file_id" && files[1]["file_id"] == file_id && files[1]["size_bytes"] == 7, "{env}");
                ensure!(!env.to_string().contains(&b64("hello")), "contents are never returned");
                let id = id_of(&env)?;
                let listed = api.json(&format!("{ENVS}/{id}/files?order=asc")).await?;
                let paths: Vec<&str> = listed["data"].as_array().context("data")?.iter().filter_map(|f| f["path"].as_str()).collect();
                ensure!(paths == [format!("{dir}/conf/cfg.json"), format!("{dir}/src/main.txt")], "written: {paths:?}");

                let bad_dir = workspace(&ctx, "e006-refused");
                let resp = api.send(api.post(ENVS, &json!({"workspace_directory": bad_dir, "files": [
                    {"type": "inline", "path": "ok.txt", "data": b64("fine")},
                    {"type": "inline", "path": ".git/hooks/pre-commit", "data": b64("#!/bin/sh")},
                ]}))).await?;
                expect_error_param(&resp, 400, "agents.path_refused", "files[1].path")?;
                let resp = api.send(api.post(ENVS, &json!({"workspace_directory": bad_dir, "files": [{"type": "file_id", "path": "x", "file_id": "file-000000000000000000000000"}]}))).await?;
                expect_error_param(&resp, 400, "invalid_request", "files[0].file_id")?;
                if ctx.dir().is_some() {
                    ensure!(!std::path::Path::new(&bad_dir).join("ok.txt").exists(), "a refused creation writes nothing");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/environments/007",
            spec: "A session created with `environment: {type: self_hosted, id}` runs its runtime in the environment's workspace with the environment's variables, and its artifacts name that environment.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_environments_create", "agents_sessions_create", "agents_environment_files_list", "agents_artifacts_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for runtime in ["rt-one", "rt-two"] {
                    let dir = workspace(&ctx, &format!("e007-{runtime}"));
                    let env = create(&api, &json!({"workspace_directory": dir, "env": {"PROJECT_MODE": "ci-7f3a"}})).await?;
                    let id = id_of(&env)?;
                    let s = api.create(&json!({"runtime": runtime, "environment": {"type": "self_hosted", "id": id}, "input": "[[scenario:env:PROJECT_MODE]] [[scenario:file_change:made-here.txt]]"})).await?;
                    ensure!(s["environment"]["id"] == id.as_str() && s["environment"]["workspace_directory"] == dir.as_str(), "{runtime}: {s}");
                    let sid = id_of(&s)?;
                    let turns = api.settle(&sid, 1).await?;
                    ensure!(turns[0]["status"] == "completed", "{runtime}: {turns:?}");
                    let items = api.items(&sid).await?;
                    let printed = items.iter().any(|i| i.to_string().contains("ci-7f3a"));
                    ensure!(printed, "{runtime}: the runtime saw PROJECT_MODE: {items:?}");
                    let files = api.json(&format!("{ENVS}/{id}/files")).await?;
                    ensure!(files.to_string().contains(&format!("{dir}/made-here.txt")), "{runtime}: the runtime worked in the workspace: {files}");
                    let artifacts = api.all(&format!("/v1/agents/sessions/{sid}/artifacts")).await?;
                    ensure!(
                        !artifacts.is_empty() && artifacts.iter().all(|x| x["environment_id"] == id.as_str()),
                        "{runtime}: artifacts name the session's environment: {artifacts:?}"
                    );
                    let resp = api.send(api.post("/v1/agents/sessions", &json!({"runtime": runtime, "environment": {"type": "self_hosted", "id": "env_ffffffffffffffffffffffff"}}))).await?;
                    expect_error_param(&resp, 404, "resource_not_found", "environment.id")?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/environments/008",
            spec: "Another owner's environment answers exactly like a missing one (get, files, sessions), and lists never include it.",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: [],
            endpoints: ["agents_environments_get", "agents_environments_list", "agents_environment_files_list", "agents_environment_files_create"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let bob = Api::as_token(&ctx, "bob-token");
                let alice = Api::as_token(&ctx, "alice-token");
                let env = create(&bob, &json!({"workspace_directory": workspace(&ctx, "e008")})).await?;
                let id = id_of(&env)?;
                let missing = "env_ffffffffffffffffffffffff";
                for (theirs, none) in [
                    (alice.get(&format!("{ENVS}/{id}")), alice.get(&format!("{ENVS}/{missing}"))),
                    (alice.get(&format!("{ENVS}/{id}/files")), alice.get(&format!("{ENVS}/{missing}/files"))),
                    (alice.post(&format!("{ENVS}/{id}/files"), &json!({"type": "inline", "path": "x", "data": b64("x")})), alice.post(&format!("{ENVS}/{missing}/files"), &json!({"type": "inline", "path": "x", "data": b64("x")}))),
                ] {
                    let a = alice.send(theirs).await?;
                    let b = alice.send(none).await?;
                    expect_error_param(&a, 404, "resource_not_found", "environment_id")?;
                    ensure!(a.text().replace(&id, "ID") == b.text().replace(missing, "ID"), "identical bodies:\n{}\n{}", a.text(), b.text());
                }
                let resp = alice.send(alice.post("/v1/agents/sessions", &json!({"environment": {"type": "self_hosted", "id": id}}))).await?;
                expect_error_param(&resp, 404, "resource_not_found", "environment.id")?;
                let list = alice.json(&format!("{ENVS}?limit=100")).await?;
                ensure!(!list.to_string().contains(&id), "alice's list has no bob environment");
                Ok(())
            },
        },
        case! {
            id: "agents/environments/009",
            spec: "The operator's path policy (template.yaml `paths`) binds environments like every other write: a workspace outside the allowed roots is 403 path_not_allowed, under a read-only root 403 read_only, and a file matching a deny pattern 403 path_denied, at creation and through the files route.",
            profile: &profiles::AGENTS_PATHS,
            tags: [],
            endpoints: ["agents_environments_create", "agents_environment_files_create", "agents_sessions_create"],
            codes: ["path_not_allowed", "read_only", "path_denied"],
            run: |ctx| async move {
                // The policy names the profile directory, where the runner starts the server.
                let dir = ctx.dir().context("needs the profile directory")?;
                let api = Api::new(&ctx);
                let post = |body: Value| api.send(api.post(ENVS, &body));
                let resp = post(json!({"workspace_directory": "/srv/elsewhere"})).await?;
                expect_error_param(&resp, 403, "path_not_allowed", "workspace_directory")?;
                let resp = post(json!({"workspace_directory": dir.join("frozen/ws")})).await?;
                expect_error_param(&resp, 403, "read_only", "workspace_directory")?;
                let ws = dir.join("envs/p009");
                let resp = post(json!({"workspace_directory": ws, "files": [{"type": "inline", "path": "certs/server.pem", "data": b64("x")}]})).await?;
                expect_error_param(&resp, 403, "path_denied", "files[0].path")?;
                let env = create(&api, &json!({"workspace_directory": ws})).await?;
                let id = id_of(&env)?;
                let resp = api.send(api.post(&format!("{ENVS}/{id}/files"), &json!({"type": "inline", "path": "key.pem", "data": b64("x")}))).await?;
                expect_error_param(&resp, 403, "path_denied", "path")?;
                ensure!(!ws.join("key.pem").exists() && !ws.join("certs").exists(), "nothing denied was written");
                let resp = api.send(api.post("/v1/agents/sessions", &json!({"environment": {"type": "self_hosted", "workspace_directory": "/srv/elsewhere"}}))).await?;
                expect_error_param(&resp, 403, "path_not_allowed", "environment.workspace_directory")?;
                Ok(())
            },
        },
    ]
}
