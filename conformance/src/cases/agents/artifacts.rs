//! Artifacts, traces and subagents of a session (issue 3).

use super::support::sessions::{
    Api, RUNTIMES, on_each_runtime, check_id, check_list, event_data, expect_missing, id_of, spath,
};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, anyhow, ensure};
use serde_json::{Value, json};

async fn artifact(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let rel = format!("notes/art-{rt}.txt");
    let (sid, turn, _) = api
        .run_turn(rt, &format!("[[scenario:file_change:{rel}]] artifact body"))
        .await?;
    ensure!(turn["status"] == "completed", "{rt}: {turn}");
    let list = api.all(&spath(&sid, "/artifacts")).await?;
    ensure!(list.len() == 1, "{rt}: one artifact: {list:?}");
    let a = &list[0];
    check_id(&a["id"], "art")?;
    ensure!(a["object"] == "agent.session.artifact", "{rt}: {a}");
    ensure!(
        a["session_id"] == sid.as_str() && a["turn_id"] == turn["id"],
        "{rt}: {a}"
    );
    ensure!(a["environment_id"] == "env_local", "{rt}: {a}");
    ensure!(a["path"] == format!("/workspace/{rel}"), "{rt}: path {a}");
    ensure!(a["created_at"].is_u64(), "{rt}: {a}");
    let disk = ctx.dir().map(|d| d.join("workspace").join(&rel));
    let on_disk = match &disk {
        Some(p) => Some(std::fs::read(p).map_err(|e| anyhow!("{rt}: {}: {e}", p.display()))?),
        None => None,
    };
    if let Some(bytes) = &on_disk {
        ensure!(
            a["size_bytes"] == bytes.len(),
            "{rt}: size_bytes {a} vs {} on disk",
            bytes.len()
        );
    }
    let aid = id_of(a)?;
    let one = format!("/artifacts/{aid}");
    ensure!(
        &api.json(&spath(&sid, &one)).await? == a,
        "{rt}: get equals the listed artifact"
    );
    let resp = api
        .send(api.get(&spath(&sid, &format!("{one}/content"))))
        .await?;
    resp.expect_status(200)?;
    ensure!(
        resp.header("content-type") == Some("application/octet-stream"),
        "{rt}: {}",
        resp.describe()
    );
    ensure!(
        resp.header("x-content-type-options") == Some("nosniff"),
        "{rt}: {}",
        resp.describe()
    );
    ensure!(a["size_bytes"] == resp.body.len(), "{rt}: content length");
    if let Some(bytes) = &on_disk {
        ensure!(
            resp.body.as_ref() == bytes.as_slice(),
            "{rt}: content is the file's bytes"
        );
    }
    ensure!(
        resp.text().contains("artifact body"),
        "{rt}: content {:?}",
        resp.text()
    );
    let resp = api.send(api.delete(&spath(&sid, &one))).await?;
    resp.expect_status(200)?;
    let body = resp.json()?;
    let want = json!({"id": aid, "object": "agent.session.artifact.deleted", "deleted": true, "deleted_scope": "snapshot"});
    ensure!(body == want, "{rt}: deleted object {body}");
    if rt == "rt-one" {
        ctx.snapshot("agents__artifacts__deleted", &body)?;
    }
    if let Some(p) = &disk {
        ensure!(
            p.exists(),
            "{rt}: deleting the snapshot must leave {} on disk",
            p.display()
        );
    }
    for path in [one.clone(), format!("{one}/content")] {
        expect_missing(&api, api.get(&spath(&sid, &path)), "artifact_id").await?;
    }
    expect_missing(&api, api.delete(&spath(&sid, &one)), "artifact_id").await?;
    ensure!(
        api.all(&spath(&sid, "/artifacts")).await?.is_empty(),
        "{rt}: list after delete"
    );
    Ok(())
}

async fn subagent(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (sid, turn, _) = api.run_turn(rt, "[[scenario:subagent]] delegate").await?;
    ensure!(turn["status"] == "completed", "{rt}: {turn}");
    let session = api.session(&sid).await?;
    let list = api.all(&spath(&sid, "/subagents")).await?;
    ensure!(list.len() == 1, "{rt}: one subagent: {list:?}");
    let s = &list[0];
    let sub = s["id"]
        .as_str()
        .filter(|i| !i.is_empty())
        .ok_or_else(|| anyhow!("{rt}: id {s}"))?;
    ensure!(
        s["object"] == "agent.session.subagent" && s["session_id"] == sid.as_str(),
        "{rt}: {s}"
    );
    ensure!(
        s["opened_at"].is_u64() && (s["closed_at"].is_u64() || s["closed_at"].is_null()),
        "{rt}: {s}"
    );
    ensure!(
        s["parent_agent_id"] == session["agent"]["id"],
        "{rt}: parent_agent_id {s}"
    );
    ensure!(
        ["active", "closed"].contains(&s["status"].as_str().unwrap_or_default()),
        "{rt}: {s}"
    );
    ensure!(s["name"].is_string() || s["name"].is_null(), "{rt}: {s}");
    let base = format!("/subagents/{sub}");
    ensure!(
        &api.json(&spath(&sid, &base)).await? == s,
        "{rt}: get equals the listed subagent"
    );
    for rest in ["/items", "/turns"] {
        let page = api.json(&spath(&sid, &format!("{base}{rest}"))).await?;
        check_list(&page)?;
        ensure!(
            page["data"] == json!([]),
            "{rt}: {rest} of a subagent is empty: {page}"
        );
    }
    let unknown_turn = format!("{base}/turns/turn_000000000000000000000000");
    expect_missing(&api, api.get(&spath(&sid, &unknown_turn)), "turn_id").await?;
    expect_missing(
        &api,
        api.get(&spath(&sid, &format!("{unknown_turn}/items"))),
        "turn_id",
    )
    .await?;
    let page = api
        .json(&format!("{}?after={sub}", spath(&sid, "/subagents")))
        .await?;
    ensure!(
        page["data"] == json!([]),
        "{rt}: after the only subagent: {page}"
    );
    let events = event_data(&api.replay(&sid, "after=0").await?, &sid)?;
    let created: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "agent.session.subagent.created")
        .collect();
    ensure!(
        created.len() == 1 && created[0]["subagent"]["id"] == sub,
        "{rt}: subagent.created event: {created:?}"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/artifacts/001",
            spec: "A file the runtime changed is one artifact (path /workspace/<rel>, size_bytes); content returns its bytes as octet-stream with nosniff; DELETE answers deleted_scope snapshot, leaves the file on disk, and the artifact is then 404 (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_artifacts_list", "agents_artifacts_get", "agents_artifacts_content", "agents_artifacts_delete"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                on_each_runtime(&ctx, artifact).await
            },
        },
        case! {
            id: "agents/artifacts/004",
            spec: "Artifacts are snapshots of files inside the workspace: a file the runtime reports through a symbolic link leading out of it is never read into an artifact.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_artifacts_list"],
            codes: [],
            run: |ctx| async move {
                let dir = ctx.dir().context("needs the profile directory")?;
                let outside = dir.join("outside-artifacts");
                std::fs::create_dir_all(&outside)?;
                std::fs::create_dir_all(dir.join("workspace"))?;
                let link = dir.join("workspace/escape");
                if !link.exists() {
                    std::os::unix::fs::symlink(&outside, &link)?;
                }
                let api = Api::new(&ctx);
                for rt in RUNTIMES {
                    let (sid, turn, _) = api.run_turn(rt, &format!("[[scenario:file_change:escape/{rt}.txt]] escaped body")).await?;
                    ensure!(turn["status"] == "completed", "{rt}: {turn}");
                    ensure!(outside.join(format!("{rt}.txt")).exists(), "{rt}: the runtime wrote through the link");
                    let listed = api.all(&spath(&sid, "/artifacts")).await?;
                    ensure!(listed.is_empty(), "{rt}: no snapshot through a link: {listed:?}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/artifacts/002",
            spec: "An unknown artifact id is 404 resource_not_found param artifact_id on get, content and delete.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_artifacts_get", "agents_artifacts_content", "agents_artifacts_delete"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = api.create_on("rt-one", None).await?;
                let one = spath(&sid, "/artifacts/art_000000000000000000000000");
                expect_missing(&api, api.get(&one), "artifact_id").await?;
                expect_missing(&api, api.get(&format!("{one}/content")), "artifact_id").await?;
                expect_missing(&api, api.delete(&one), "artifact_id").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/traces/001",
            spec: "Without SVC_AGENTS_TRACES the traces list stays empty after finished turns.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_traces_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let (sid, _, _) = api.run_turn("rt-one", "no traces").await?;
                let page = api.json(&spath(&sid, "/traces")).await?;
                check_list(&page)?;
                ensure!(page["data"] == json!([]), "{page}");
                Ok(())
            },
        },
        case! {
            id: "agents/traces/002",
            spec: "With SVC_AGENTS_TRACES=1 there is one trace per finished turn (completed or failed) with timing and counts and no prompt text (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS_TWO,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_traces_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for rt in RUNTIMES {
                    let sid = api.create_on(rt, Some("[[scenario:reasoning]] zebra-4711 one")).await?;
                    api.settle(&sid, 1).await?;
                    api.input(&sid, "[[scenario:fail]] zebra-4711 two").await?;
                    let turns = api.settle(&sid, 2).await?;
                    let traces = api.all(&spath(&sid, "/traces")).await?;
                    ensure!(traces.len() == 2, "{rt}: one trace per finished turn: {traces:?}");
                    for (t, turn) in traces.iter().zip(&turns) {
                        check_id(&t["id"], "trace")?;
                        ensure!(t["object"] == "agent.session.trace" && t["session_id"] == sid.as_str(), "{rt}: {t}");
                        ensure!(t["turn_id"] == turn["id"] && t["created_at"].is_u64(), "{rt}: {t}");
                        let o = &t["otlp"];
                        ensure!(o["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{rt}: {t}");
                        ensure!(o["status"].is_string(), "{rt}: {t}");
                        let by_type = o["items_by_type"].as_object().ok_or_else(|| anyhow!("{rt}: items_by_type {t}"))?;
                        let sum: u64 = by_type.values().filter_map(Value::as_u64).sum();
                        ensure!(o["item_count"].as_u64() == Some(sum) && sum > 0, "{rt}: counts {t}");
                    }
                    let text = serde_json::to_string(&traces)?;
                    ensure!(!text.contains("zebra-4711") && !text.contains("Thinking about"), "{rt}: content in traces: {text}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/subagents/001",
            spec: "A subagent the runtime emitted is listed and gettable, its items/turns lists are empty, an unknown subagent turn is 404 param turn_id, and agent.session.subagent.created is sent (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: [
                "agents_subagents_list", "agents_subagents_get", "agents_subagents_items_list",
                "agents_subagents_turns_list", "agents_subagents_turns_get", "agents_subagents_turns_items_list",
            ],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                on_each_runtime(&ctx, subagent).await
            },
        },
        case! {
            id: "agents/subagents/002",
            spec: "An unknown subagent id is 404 resource_not_found param subagent_id on every subagent route.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: [
                "agents_subagents_get", "agents_subagents_items_list", "agents_subagents_turns_list",
                "agents_subagents_turns_get", "agents_subagents_turns_items_list",
            ],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = api.create_on("rt-one", None).await?;
                let base = "/subagents/no-such-subagent";
                for rest in ["", "/items", "/turns", "/turns/turn_000000000000000000000000", "/turns/turn_000000000000000000000000/items"] {
                    expect_missing(&api, api.get(&spath(&sid, &format!("{base}{rest}"))), "subagent_id").await?;
                }
                Ok(())
            },
        },
    ]
}
