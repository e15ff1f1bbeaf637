//! Turns: completion, resume, queueing, cancel, crash and failure (issue 3).

use super::support::sessions::{
    Api, RUNTIMES, on_each_runtime, assistant_text, check_id, check_item, check_turn, check_usage, expect_missing,
    id_of, pre_redact, spath,
};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};

async fn completes(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (sid, turn, items) = api.run_turn(rt, "echo me please").await?;
    check_turn(&turn, &sid, rt)?;
    ensure!(turn["status"] == "completed", "{rt}: {turn}");
    ensure!(
        turn["started_at"].is_u64() && turn["completed_at"].is_u64(),
        "{rt}: times {turn}"
    );
    ensure!(turn["error"].is_null(), "{rt}: {turn}");
    check_usage(&turn["usage"]).map_err(|e| anyhow!("{rt}: {e}"))?;
    ensure!(
        turn["x_svc"]["exit_code"] == 0 && turn["x_svc"]["queued_not_steered"] == false,
        "{rt}: {turn}"
    );
    for it in &items {
        check_item(it)?;
        ensure!(
            it["turn_id"] == turn["id"],
            "{rt}: item of another turn {it}"
        );
    }
    let user = &items[0];
    check_id(&user["id"], "item")?;
    ensure!(
        user["type"] == "message"
            && user["role"] == "user"
            && user["status"] == "completed"
            && user["content"] == json!([{"type": "input_text", "text": "echo me please"}]),
        "{rt}: first item is the user message: {user}"
    );
    let replies: Vec<&Value> = items.iter().filter(|i| i["role"] == "assistant").collect();
    ensure!(replies.len() == 1, "{rt}: one assistant message: {items:?}");
    let msg = replies[0];
    check_id(&msg["id"], "msg")?;
    ensure!(
        msg["status"] == "completed" && msg["phase"] == "final_answer",
        "{rt}: {msg}"
    );
    let text = assistant_text(&items);
    ensure!(
        msg["content"] == json!([{"type": "output_text", "text": text}]),
        "{rt}: content {msg}"
    );
    ensure!(
        text.contains("echo (turn 1)") && text.contains("echo me please"),
        "{rt}: reply {text:?}"
    );
    let s = api.session(&sid).await?;
    ensure!(
        s["status"] == "idle" && s["error"].is_null(),
        "{rt}: session {s}"
    );
    check_usage(&s["usage"]).map_err(|e| anyhow!("{rt}: session {e}"))?;
    ensure!(
        s["x_svc"]["thread_id"].is_string(),
        "{rt}: thread_id after a turn: {s}"
    );
    if rt == "rt-one" {
        ctx.snapshot("agents__turns__object", &pre_redact(&turn)?)?;
    }
    Ok(())
}

async fn resumes(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let sid = api.create_on(rt, Some("alpha")).await?;
    api.settle(&sid, 1).await?;
    let thread = api.session(&sid).await?["x_svc"]["thread_id"].clone();
    ensure!(thread.is_string(), "{rt}: thread_id {thread}");
    api.input(&sid, "beta").await?;
    let turns = api.settle(&sid, 2).await?;
    ensure!(
        turns.iter().all(|t| t["status"] == "completed"),
        "{rt}: {turns:?}"
    );
    let tid = turns[1]["id"].as_str().unwrap_or_default();
    let items = api
        .all(&spath(&sid, &format!("/turns/{tid}/items")))
        .await?;
    let text = assistant_text(&items);
    ensure!(
        text.contains("turn 2") && text.contains("beta"),
        "{rt}: the runtime's own thread continues: {text:?}"
    );
    ensure!(
        api.session(&sid).await?["x_svc"]["thread_id"] == thread,
        "{rt}: same thread"
    );
    Ok(())
}

async fn queues(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let sid = api
        .create_on(rt, Some("[[scenario:stream:300]] slow one"))
        .await?;
    api.wait_turn(&sid, 0, "in_progress").await?;
    ensure!(
        api.session(&sid).await?["status"] == "in_progress",
        "{rt}: session in progress"
    );
    api.input(&sid, "quick two").await?;
    let turns = api.turns(&sid).await?;
    ensure!(turns.len() == 2, "{rt}: {turns:?}");
    ensure!(
        turns[1]["status"] == "queued",
        "{rt}: second turn waits: {}",
        turns[1]
    );
    ensure!(
        turns[1]["x_svc"]["queued_not_steered"] == true,
        "{rt}: {}",
        turns[1]
    );
    let turns = api.settle(&sid, 2).await?;
    ensure!(
        turns.iter().all(|t| t["status"] == "completed"),
        "{rt}: {turns:?}"
    );
    ensure!(
        turns[0]["x_svc"]["queued_not_steered"] == false,
        "{rt}: {}",
        turns[0]
    );
    ensure!(
        turns[1]["started_at"].as_u64().context("started_at")?
            >= turns[0]["completed_at"].as_u64().context("completed_at")?,
        "{rt}: ran after: {turns:?}"
    );
    let text_of = |tid: &Value| {
        let api = api.clone();
        let path = spath(
            &sid,
            &format!("/turns/{}/items", tid.as_str().unwrap_or_default()),
        );
        async move { anyhow::Ok(assistant_text(&api.all(&path).await?)) }
    };
    let first = text_of(&turns[0]["id"]).await?;
    let second = text_of(&turns[1]["id"]).await?;
    ensure!(
        !first.contains("quick two"),
        "{rt}: the input was steered into the running turn: {first:?}"
    );
    ensure!(
        second.contains("turn 2") && second.contains("quick two"),
        "{rt}: {second:?}"
    );
    Ok(())
}

async fn cancels(ctx: &Ctx, rt: &str, spelling: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let sid = api
        .create_on(rt, Some("[[scenario:hang]] wait forever"))
        .await?;
    api.wait_turn(&sid, 0, "in_progress").await?;
    api.input(&sid, "queued behind").await?;
    api.events(&sid, &json!({"events": [{"type": spelling}]}))
        .await?;
    let turns = api.settle(&sid, 2).await?;
    ensure!(
        turns.iter().all(|t| t["status"] == "cancelled"),
        "{rt}: cancel stops the running and queued turns: {turns:?}"
    );
    ensure!(
        api.session(&sid).await?["status"] == "idle",
        "{rt}: idle after cancel"
    );
    api.input(&sid, "after cancel").await?;
    let turns = api.settle(&sid, 3).await?;
    ensure!(
        turns[2]["status"] == "completed",
        "{rt}: the session still works: {}",
        turns[2]
    );
    Ok(())
}

async fn crashes(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (sid, turn, _) = api.run_turn(rt, "[[scenario:crash]] boom").await?;
    ensure!(turn["status"] == "failed", "{rt}: {turn}");
    ensure!(turn["error"]["code"] == "server_error", "{rt}: {turn}");
    let msg = turn["error"]["message"].as_str().unwrap_or_default();
    ensure!(
        msg.contains("101") && msg.contains("simulated crash"),
        "{rt}: message names the exit code and stderr tail: {msg:?}"
    );
    ensure!(turn["x_svc"]["exit_code"] == 101, "{rt}: {turn}");
    let s = api.session(&sid).await?;
    ensure!(
        s["status"] == "failed" && s["error"] == msg,
        "{rt}: session {s}"
    );
    ctx.send(ctx.get("/health")).await?.expect_status(200)?;
    let (_, other, _) = api.run_turn(rt, "still here").await?;
    ensure!(
        other["status"] == "completed",
        "{rt}: another session still works: {other}"
    );
    api.input(&sid, "again").await?;
    let turns = api.settle(&sid, 2).await?;
    ensure!(
        turns[1]["status"] == "completed",
        "{rt}: the failed session takes new input: {}",
        turns[1]
    );
    ensure!(
        api.session(&sid).await?["status"] == "idle",
        "{rt}: idle again"
    );
    Ok(())
}

async fn fails(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (sid, turn, _) = api
        .run_turn(rt, "[[scenario:stderr]] [[scenario:fail:boom here]]")
        .await?;
    ensure!(
        turn["status"] == "failed" && turn["error"]["code"] == "server_error",
        "{rt}: {turn}"
    );
    let msg = turn["error"]["message"].as_str().unwrap_or_default();
    ensure!(
        msg.contains("boom here") || msg.contains("exit"),
        "{rt}: message {msg:?}"
    );
    ensure!(
        msg.contains("rt-fake noise 3"),
        "{rt}: message carries the stderr tail: {msg:?}"
    );
    ensure!(turn["x_svc"]["exit_code"] == 1, "{rt}: {turn}");
    let s = api.session(&sid).await?;
    ensure!(
        s["status"] == "failed" && s["error"].is_string(),
        "{rt}: {s}"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/turns/001",
            spec: "A turn completes with the echo reply in an assistant message item; turn, items and session carry every design field (both runtimes; turn snapshot).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_sessions_turns_list", "agents_sessions_items_list", "agents_sessions_get"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, completes).await
            },
        },
        case! {
            id: "agents/turns/002",
            spec: "Later turns resume the runtime's own thread: the second reply says `turn 2` and the thread id is kept (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create", "agents_sessions_turns_items_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, resumes).await
            },
        },
        case! {
            id: "agents/turns/003",
            spec: "Input while a turn runs queues a new turn (x_svc.queued_not_steered true) that runs after it and is never written into the running process (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create", "agents_sessions_turns_list", "agents_sessions_turns_items_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, queues).await
            },
        },
        case! {
            id: "agents/turns/004",
            spec: "A cancel event stops the running turn and every queued one (status cancelled), the session goes idle and takes new input (both runtimes, both spellings).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create", "agents_sessions_turns_list"],
            codes: [],
            run: |ctx| async move {
                cancels(&ctx, "rt-one", "agent.session.input.cancel").await?;
                cancels(&ctx, "rt-two", "input.cancel").await
            },
        },
        case! {
            id: "agents/turns/005",
            spec: "A runtime that crashes (exit 101, no terminal event) fails the turn with error.message naming the exit code and stderr tail; the session is failed, the server healthy, other sessions work (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_sessions_turns_list", "agents_sessions_get", "agents_sessions_events_create"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, crashes).await
            },
        },
        case! {
            id: "agents/turns/006",
            spec: "A scripted runtime failure (exit 1) fails the turn with error.code server_error and the stderr tail in the message (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_sessions_turns_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, fails).await
            },
        },
        case! {
            id: "agents/turns/007",
            spec: "GET …/turns/{turn_id} returns the listed turn and …/turns/{turn_id}/items only its items; an unknown turn is 404 resource_not_found param turn_id.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_turns_get", "agents_sessions_turns_items_list", "agents_sessions_items_list"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = api.create_on("rt-two", Some("one")).await?;
                api.settle(&sid, 1).await?;
                api.input(&sid, "two").await?;
                let turns = api.settle(&sid, 2).await?;
                let all = api.items(&sid).await?;
                let mut joined = Vec::new();
                for t in &turns {
                    let tid = id_of(t)?;
                    let got = api.json(&spath(&sid, &format!("/turns/{tid}"))).await?;
                    ensure!(&got == t, "turn get {got} != listed {t}");
                    let items = api.all(&spath(&sid, &format!("/turns/{tid}/items"))).await?;
                    ensure!(!items.is_empty() && items.iter().all(|i| i["turn_id"] == tid.as_str()), "turn items: {items:?}");
                    joined.extend(items);
                }
                ensure!(joined == all, "the turns' items make up the session's items");
                let unknown = "turn_000000000000000000000000";
                expect_missing(&api, api.get(&spath(&sid, &format!("/turns/{unknown}"))), "turn_id").await?;
                expect_missing(&api, api.get(&spath(&sid, &format!("/turns/{unknown}/items"))), "turn_id").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/turns/008",
            spec: "Deleting a session with a running turn stops it and answers the deleted object at once.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_delete", "agents_sessions_get"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for rt in RUNTIMES {
                    let sid = api.create_on(rt, Some("[[scenario:hang]] forever")).await?;
                    api.wait_turn(&sid, 0, "in_progress").await?;
                    let started = std::time::Instant::now();
                    let resp = api.send(api.req(Method::DELETE, &spath(&sid, ""))).await?;
                    resp.expect_status(200)?;
                    ensure!(resp.json()?["deleted"] == true, "{}", resp.describe());
                    ensure!(started.elapsed() < std::time::Duration::from_secs(10), "{rt}: delete took {:?}", started.elapsed());
                    expect_missing(&api, api.get(&spath(&sid, "")), "id").await?;
                }
                Ok(())
            },
        },
    ]
}
