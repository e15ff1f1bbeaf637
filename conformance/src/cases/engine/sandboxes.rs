//! Sandboxes (spec 4.4, 8): create with every field validated the same for every
//! provider, list, connect, info, running, kill, and port URLs.

use super::support::{
    check_record, create, delete, epoch, error_snapshot, expect_error, get, kill,
    post, processes, q, req, sandbox, sb, snapshot,
};
use crate::{Case, case, profiles};
use anyhow::{Context as _, anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/sandboxes/001",
            spec: "POST /v1/sandboxes answers 201 and the sandbox record `{sandbox_id, provider, template, status, created_at, expires_at, metadata, envs_keys, cpu, memory, disk, secure, limits_enforced}`: template `base` and `secure: true` by default, `expires_at` the lifetime `timeout` after `created_at`, the metadata echoed and the names of `envs` only, never their values.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_create"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(req(&ctx, Method::POST, "/v1/sandboxes").json(&json!({
                    "timeout": 120,
                    "metadata": {"purpose": "conformance"},
                    "envs": {"CONFORMANCE_SECRET": "s3cr3t-never-echoed"},
                }))).await?;
                resp.expect_status(201)?;
                let record = resp.json()?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                ctx.track_sandbox(super::support::own(&ctx), &id);
                check_record(&record)?;
                ensure!(!resp.text().contains("s3cr3t-never-echoed"), "an env value is never echoed: {record}");
                ensure!(record["provider"] == ctx.provider().unwrap_or("local") && record["template"] == "base" && record["status"] == "running" && record["secure"] == true, "{record}");
                ensure!(record["metadata"] == json!({"purpose": "conformance"}) && record["envs_keys"] == json!(["CONFORMANCE_SECRET"]), "{record}");
                ensure!(record["cpu"].is_null() && record["memory"].is_null() && record["disk"].is_null(), "no limits asked, none shown: {record}");
                let life = epoch(record["expires_at"].as_str().unwrap_or_default())? - epoch(record["created_at"].as_str().unwrap_or_default())?;
                ensure!((119..=121).contains(&life), "`expires_at` is `timeout` (120 s) after `created_at`, not {life} s: {record}");
                // How a sandbox is kept apart from the machine is said by the providers that
                // run sandboxes on it (`isolation`, `allow_internet_access`,
                // `max_processes`, the isolation keys of `limits_enforced`): checked here,
                // left out of the record every provider shares.
                let mut shared = record.clone();
                if let Some(map) = shared.as_object_mut() {
                    if let Some(isolation) = map.remove("isolation") {
                        ensure!(["namespaces", "none"].contains(&isolation.as_str().unwrap_or_default()), "{record}");
                        ensure!(map.remove("allow_internet_access").is_some_and(|v| v.is_boolean()), "{record}");
                        ensure!(map.remove("max_processes").is_some_and(|v| v.as_u64().is_some_and(|n| n >= 1)), "{record}");
                    }
                    if let Some(limits) = map.get_mut("limits_enforced").and_then(Value::as_object_mut) {
                        for key in ["filesystem", "processes", "network", "pids"] {
                            limits.remove(key);
                        }
                    }
                }
                snapshot(&ctx, "engine__sandboxes__record", &shared)?;
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/002",
            spec: "Create validates every field before the provider sees it: `timeout` 0 or 86401 (1-86400 seconds), an unknown field, a bad variable name in `envs`, `cpu` 0 or 65537 (1-65536 cores), `max_processes` 0 or 4194305 (1-4194304, Linux's own ceiling), an empty `template` or a body that is not a JSON object is 400 `E4001`; `timeout` 1 and 86400 are accepted, and so are `cpu` 65536 with `max_processes` 4194304 (once a 500 from the kernel refusing the cgroup's limit).",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_create"],
            codes: ["E4001"],
            run: |ctx| async move {
                for bad in [
                    json!({"timeout": 0}),
                    json!({"timeout": 86401}),
                    json!({"timeout": -5}),
                    json!({"timeout": "60"}),
                    json!({"colour": "red"}),
                    json!({"envs": {"1BAD": "x"}}),
                    json!({"envs": {"A-B": "x"}}),
                    json!({"cpu": 0}),
                    json!({"cpu": 65_537}),
                    json!({"cpu": u32::MAX}),
                    json!({"memory": 0}),
                    json!({"max_processes": 0}),
                    json!({"max_processes": 4_194_305}),
                    json!({"template": ""}),
                    json!({"metadata": "not a map"}),
                    json!([]),
                ] {
                    let resp = post(&ctx, "/v1/sandboxes", &bad).await?;
                    let body = expect_error(&resp, 400, "E4001").with_context(|| format!("body {bad}"))?;
                    if bad == json!({"timeout": 0}) {
                        error_snapshot(&ctx, "engine__sandboxes__timeout_refused", &body, &[])?;
                    }
                }
                let garbage = ctx.send(req(&ctx, Method::POST, "/v1/sandboxes").header("content-type", "application/json").body("{not json")).await?;
                expect_error(&garbage, 400, "E4001")?;
                for ok in [1, 86_400] {
                    let record = create(&ctx, &json!({"timeout": ok})).await?;
                    let life = epoch(record["expires_at"].as_str().unwrap_or_default())? - epoch(record["created_at"].as_str().unwrap_or_default())?;
                    ensure!((ok - 1..=ok + 1).contains(&life), "timeout {ok} gives a lifetime of {life} s: {record}");
                    kill(&ctx, record["sandbox_id"].as_str().unwrap_or_default()).await;
                }
                let top = create(&ctx, &json!({"timeout": 60, "cpu": 65_536, "max_processes": 4_194_304})).await?;
                ensure!(top["cpu"] == 65_536, "the cores asked are shown: {top}");
                kill(&ctx, top["sandbox_id"].as_str().unwrap_or_default()).await;
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/003",
            spec: "A create asking for what the provider cannot give is 501 `E8004`: `gpu` on the `local` provider; an empty `gpu` (`\"\"`, blanks) asks for nothing and is 400 `E4001`, never taken as a GPU request (issue 30, item 7).",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_create"],
            codes: ["E8004", "E4001"],
            run: |ctx| async move {
                for empty in ["", "  "] {
                    let resp = post(&ctx, "/v1/sandboxes", &json!({"timeout": 60, "gpu": empty, "metadata": {"case": "sandboxes-003"}})).await?;
                    let body = expect_error(&resp, 400, "E4001")?;
                    ensure!(body.to_string().contains("gpu"), "names `gpu`: {body}");
                }
                let resp = post(&ctx, "/v1/sandboxes", &json!({"timeout": 60, "gpu": "a100", "metadata": {"case": "sandboxes-003"}})).await?;
                let body = expect_error(&resp, 501, "E8004")?;
                error_snapshot(&ctx, "engine__sandboxes__gpu_refused", &body, &[])?;
                let list = get(&ctx, "/v1/sandboxes").await?.json()?;
                ensure!(list["sandboxes"].as_array().is_some_and(|l| l.iter().all(|s| s["metadata"]["case"] != "sandboxes-003")), "nothing was created: {list}");
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/004",
            spec: "A template the provider does not have is 404 `E2010`.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_create"],
            codes: ["E2010"],
            run: |ctx| async move {
                let resp = post(&ctx, "/v1/sandboxes", &json!({"timeout": 60, "template": "no-such-template"})).await?;
                let body = expect_error(&resp, 404, "E2010")?;
                error_snapshot(&ctx, "engine__sandboxes__template_not_found", &body, &[])?;
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/005",
            spec: "GET /v1/sandboxes?status=&limit=&offset= answers `{sandboxes: [record...]}` of this account, filtered by status, at most `limit` (1-1000); a bad status or limit, an unknown or a repeated parameter is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_list"],
            codes: ["E4001"],
            run: |ctx| async move {
                let record = create(&ctx, &json!({"timeout": 300, "metadata": {"case": "sandboxes-005"}})).await?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                let list = |query: &'static str| { let ctx = ctx.clone(); async move {
                    let resp = get(&ctx, &format!("/v1/sandboxes{query}")).await?;
                    resp.expect_status(200)?;
                    let body = resp.json()?;
                    ensure!(body.as_object().is_some_and(|m| m.len() == 1), "the answer is `{{sandboxes}}`: {body}");
                    body["sandboxes"].as_array().cloned().ok_or_else(|| anyhow!("`sandboxes` is a list: {body}"))
                }};
                let all = list("").await?;
                let ours: Vec<&Value> = all.iter().filter(|s| s["sandbox_id"] == id.as_str()).collect();
                ensure!(ours.len() == 1, "the new sandbox is listed once: {all:?}");
                check_record(ours[0])?;
                ensure!(ours[0]["metadata"] == json!({"case": "sandboxes-005"}), "{:?}", ours[0]);
                ensure!(list("?status=running").await?.iter().any(|s| s["sandbox_id"] == id.as_str()), "status=running lists it");
                ensure!(list("?status=paused").await?.iter().all(|s| s["sandbox_id"] != id.as_str()), "status=paused does not");
                ensure!(list("?limit=1").await?.len() <= 1, "limit=1 lists at most one");
                ensure!(list("?offset=100000").await?.is_empty(), "an offset past the end lists none");
                for bad in ["?limit=0", "?limit=1001", "?status=bogus", "?limit=1&limit=2", "?colour=red", "?offset=-1"] {
                    let resp = get(&ctx, &format!("/v1/sandboxes{bad}")).await?;
                    expect_error(&resp, 400, "E4001").with_context(|| bad.to_owned())?;
                }
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/006",
            spec: "GET /v1/sandboxes/:id answers the record, POST .../connect attaches and answers it too (a body field it does not know is 400 `E4001`), and GET .../running answers `{running: true}` for a running sandbox.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_info", "sandboxes_connect", "sandboxes_running"],
            codes: ["E4001"],
            run: |ctx| async move {
                let created = create(&ctx, &json!({"timeout": 300, "metadata": {"k": "v"}})).await?;
                let id = created["sandbox_id"].as_str().unwrap_or_default().to_owned();
                let resp = get(&ctx, &sb(&id, "")).await?;
                resp.expect_status(200)?;
                let info = resp.json()?;
                check_record(&info)?;
                ensure!(info == created, "info answers the record create did: {info} vs {created}");
                let resp = post(&ctx, &sb(&id, "/connect"), &json!({})).await?;
                resp.expect_status(200)?;
                let connected = resp.json()?;
                ensure!(connected == created, "connect answers the record: {connected}");
                let resp = post(&ctx, &sb(&id, "/connect"), &json!({"colour": "red"})).await?;
                expect_error(&resp, 400, "E4001")?;
                let resp = get(&ctx, &sb(&id, "/running")).await?;
                resp.expect_status(200)?;
                let running = resp.json()?;
                ensure!(running == json!({"running": true}), "{running}");
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/007",
            spec: "DELETE /v1/sandboxes/:id kills the sandbox and everything in it, a process left in the background included, and answers its last record; after it the sandbox is 404 `E2009` and no longer listed.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes", "feature:commands", "feature:processes"],
            endpoints: ["sandboxes_kill", "sandboxes_running"],
            codes: ["E2009"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let bg = super::support::leave_sleeps(&ctx, &id, 1).await?.remove(0);
                ensure!(bg.alive(), "the background sleep runs");
                ensure!(processes(&ctx, &id).await?.iter().any(|p| p["pid"] == bg.pid), "it is listed");
                let resp = delete(&ctx, &sb(&id, "")).await?;
                resp.expect_status(200)?;
                let last = resp.json()?;
                check_record(&last)?;
                ensure!(last["sandbox_id"] == id.as_str() && (last["status"] == "stopped" || last["status"] == "stopping"), "the last record: {last}");
                snapshot(&ctx, "engine__sandboxes__killed", &last)?;
                bg.gone(Duration::from_secs(10)).await?;
                for path in [sb(&id, ""), sb(&id, "/running")] {
                    expect_error(&get(&ctx, &path).await?, 404, "E2009").with_context(|| path.clone())?;
                }
                expect_error(&delete(&ctx, &sb(&id, "")).await?, 404, "E2009")?;
                let list = get(&ctx, "/v1/sandboxes").await?.json()?;
                ensure!(list["sandboxes"].as_array().is_some_and(|l| l.iter().all(|s| s["sandbox_id"] != id.as_str())), "{list}");
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/008",
            spec: "A sandbox id nobody made is 404 `E2009` (`SandboxNotFoundError`) on every sandbox route.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_info", "sandboxes_connect", "sandboxes_running", "sandboxes_kill"],
            codes: ["E2009"],
            run: |ctx| async move {
                let id = "sbx-conformance-nobody-made-this";
                let mut sent = vec![
                    (Method::GET, sb(id, ""), None),
                    (Method::POST, sb(id, "/connect"), Some(json!({}))),
                    (Method::GET, sb(id, "/running"), None),
                    (Method::DELETE, sb(id, ""), None),
                ];
                let declared = super::support::declared(&ctx).await?;
                let optional = [
                    ("timeout", Method::POST, "/timeout", Some(json!({"timeout": 60}))),
                    ("pause", Method::POST, "/pause", Some(json!({}))),
                    ("pause", Method::POST, "/resume", Some(json!({}))),
                    ("ports", Method::GET, "/ports/8080/url", None),
                    ("commands", Method::POST, "/commands/run", Some(json!({"cmd": "true"}))),
                    ("processes", Method::GET, "/processes", None),
                    ("files", Method::GET, "/files/list?path=.", None),
                    ("files", Method::GET, "/files/content?path=a", None),
                    ("code", Method::POST, "/code/run", Some(json!({"code": "print(1)"}))),
                    ("code_contexts", Method::GET, "/code/contexts", None),
                ];
                for (feature, method, rest, body) in optional {
                    if declared.iter().any(|f| f == feature) {
                        sent.push((method, sb(id, rest), body));
                    }
                }
                for (method, path, body) in sent {
                    let mut rb = req(&ctx, method.clone(), &path);
                    if let Some(body) = body { rb = rb.json(&body); }
                    let resp = ctx.send(rb).await?;
                    let err = expect_error(&resp, 404, "E2009").with_context(|| format!("{method} {path}"))?;
                    if method == Method::GET && path == sb(id, "") {
                        error_snapshot(&ctx, "engine__sandboxes__not_found", &err, &[(id, "[sandbox_id]")])?;
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/009",
            spec: "GET .../ports/:port/url answers `{url, headers}` through which the port of the sandbox is reached (for `local`, on loopback); a port that is not 1-65535 is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:ports"],
            endpoints: ["sandboxes_port_url"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                // A listener of our own stands for a server in the sandbox: the URL must reach it.
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                let port = listener.local_addr()?.port();
                let resp = get(&ctx, &sb(&id, &format!("/ports/{port}/url"))).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let mut keys: Vec<&str> = body.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
                keys.sort_unstable();
                ensure!(keys == ["headers", "url"], "the answer is `{{url, headers}}`: {body}");
                ensure!(body["headers"].as_object().is_some_and(|h| h.values().all(Value::is_string)), "`headers` maps names to values: {body}");
                let url = reqwest::Url::parse(body["url"].as_str().unwrap_or_default()).with_context(|| format!("`url` is a URL: {body}"))?;
                ensure!(url.port_or_known_default() == Some(port), "the URL names port {port}: {body}");
                let host = url.host_str().unwrap_or_default().to_owned();
                ensure!(["127.0.0.1", "localhost"].contains(&host.as_str()), "a local sandbox's port is on loopback: {body}");
                let connect = tokio::net::TcpStream::connect(("127.0.0.1", port));
                let (accepted, connected) = tokio::join!(tokio::time::timeout(Duration::from_secs(5), listener.accept()), connect);
                connected?;
                ensure!(matches!(accepted, Ok(Ok(_))), "the URL's port reaches the listener");
                let mut shown = body.clone();
                shown["url"] = Value::from(body["url"].as_str().unwrap_or_default().replace(&port.to_string(), "[port]"));
                snapshot(&ctx, "engine__sandboxes__port_url", &shown)?;
                for bad in ["0", "65536", "http", "-1"] {
                    let resp = get(&ctx, &sb(&id, &format!("/ports/{}/url", q(bad)))).await?;
                    expect_error(&resp, 400, "E4001").with_context(|| format!("port {bad}"))?;
                }
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/sandboxes/010",
            spec: "Limits asked for are in the record (`cpu` cores, `memory` and `disk` MB), and `limits_enforced` says for each whether the provider really enforces it, never pretending: `local` does not enforce `disk`. A provider that runs sandboxes on the machine also says which of `filesystem`, `processes`, `network` and `pids` hold.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_create"],
            codes: [],
            run: |ctx| async move {
                let record = create(&ctx, &json!({"timeout": 120, "cpu": 1, "memory": 512, "disk": 1024})).await?;
                check_record(&record)?;
                ensure!(record["cpu"] == 1 && record["memory"] == 512 && record["disk"] == 1024, "{record}");
                let enforced = record["limits_enforced"].as_object().cloned().unwrap_or_default();
                let mut keys: Vec<&str> = enforced.keys().map(String::as_str).filter(|k| !["filesystem", "processes", "network", "pids"].contains(k)).collect();
                keys.sort_unstable();
                ensure!(keys == ["cpu", "disk", "memory", "timeout"], "one answer per limit asked for: {record}");
                ensure!(enforced["timeout"] == true, "the lifetime is always enforced: {record}");
                ensure!(enforced["disk"] == false, "`local` does not pretend to enforce `disk`: {record}");
                kill(&ctx, record["sandbox_id"].as_str().unwrap_or_default()).await;
                Ok(())
            },
        },
    ]
}
