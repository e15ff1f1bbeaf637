//! Events in: POST /v1/agents/sessions/{id}/events (issue 3).

use super::support::sessions::{Api, on_each_runtime, assistant_text, id_of, spath};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};

async fn input_at_create(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let sid = api.create_on(rt, Some("first words")).await?;
    // The turn is queued at once: it is listed before anything else is posted.
    let turns = api.turns(&sid).await?;
    ensure!(
        turns.len() == 1,
        "{rt}: input at create queues one turn: {turns:?}"
    );
    let turns = api.settle(&sid, 1).await?;
    ensure!(turns[0]["status"] == "completed", "{rt}: {}", turns[0]);
    let text = assistant_text(&api.items(&sid).await?);
    ensure!(text.contains("first words"), "{rt}: reply {text:?}");
    Ok(())
}

/// Each accepted input shape queues exactly one turn carrying its text.
async fn input_shapes(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let sid = api.create_on(rt, None).await?;
    let shapes = [
        ("shape-a", json!({"input": "shape-a"})),
        (
            "shape-b",
            json!({"events": [{"type": "agent.session.input.message", "input": "shape-b"}]}),
        ),
        (
            "shape-c",
            json!({"events": [{"type": "input.message", "content": "shape-c"}]}),
        ),
        (
            "shape-d",
            json!({"events": [{"type": "input.message", "text": "shape-d"}]}),
        ),
        (
            "shape-e",
            json!({"events": [{"type": "agent.session.input.message",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "shape-e"}]}]}]}),
        ),
        (
            "shape-f",
            json!({"events": [{"type": "agent.session.input.message",
                "content": [{"type": "input_text", "text": "shape-f"}]}]}),
        ),
    ];
    for (i, (word, body)) in shapes.iter().enumerate() {
        api.events(&sid, body)
            .await
            .map_err(|e| anyhow!("{rt} {body}: {e}"))?;
        let turns = api.settle(&sid, i + 1).await?;
        ensure!(
            turns.len() == i + 1,
            "{rt}: {body} queued {} turns in all",
            turns.len()
        );
        let tid = turns[i]["id"].as_str().unwrap_or_default();
        let items = api
            .all(&spath(&sid, &format!("/turns/{tid}/items")))
            .await?;
        let user = items
            .iter()
            .find(|it| it["type"] == "message" && it["role"] == "user")
            .ok_or_else(|| anyhow!("{rt}: no user message in {items:?}"))?;
        ensure!(
            user["content"] == json!([{"type": "input_text", "text": word}])
                && user["status"] == "completed",
            "{rt}: user message for {body}: {user}"
        );
    }
    Ok(())
}

async fn refused(
    api: &Api,
    sid: &str,
    body: Value,
    status: u16,
    code: &str,
) -> anyhow::Result<Value> {
    let resp = api.send(api.post(&spath(sid, "/events"), &body)).await?;
    resp.expect_error(status, code)
        .map_err(|e| anyhow!("body {body}: {e}"))
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/input/001",
            spec: "A non-empty `input` at create queues a turn at once, which completes (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_sessions_turns_list", "agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, input_at_create).await
            },
        },
        case! {
            id: "agents/input/002",
            spec: "POST …/events answers 202 with an empty body for `{input}`, `{events:[…]}`, both type spellings and `input`/`content`/`text`, each queueing one turn (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create", "agents_sessions_turns_list", "agents_sessions_turns_items_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, input_shapes).await
            },
        },
        case! {
            id: "agents/input/003",
            spec: "tool_result and computer_use_approval_request_result events (both spellings) are 400 `agents.tool_result_unsupported` and queue nothing.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create", "agents_sessions_turns_list"],
            codes: ["agents.tool_result_unsupported"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = api.create_on("rt-one", None).await?;
                for ty in [
                    "agent.session.input.tool_result",
                    "tool_result",
                    "agent.session.input.computer_use_approval_request_result",
                    "computer_use_approval_request_result",
                ] {
                    let body = json!({"events": [{"type": ty, "tool_use_id": "call_1", "output": "x"}]});
                    let b = refused(&api, &sid, body, 400, "agents.tool_result_unsupported").await?;
                    ensure!(b["error"]["type"] == "invalid_request_error", "{b}");
                }
                ensure!(api.turns(&sid).await?.is_empty(), "a refused event queued a turn");
                Ok(())
            },
        },
        case! {
            id: "agents/input/004",
            spec: "Bad events: input_image / input_file parts (param names the part), an unknown type (param events[i].type), empty text, an empty events array: 400 invalid_request, nothing queued.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create", "agents_sessions_turns_list"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = api.create_on("rt-one", None).await?;
                for part in ["input_image", "input_file"] {
                    let body = json!({"events": [{"type": "agent.session.input.message",
                        "content": [{"type": "input_text", "text": "look"}, {"type": part, "file_id": "file_x", "image_url": "http://x/y.png"}]}]});
                    let b = refused(&api, &sid, body, 400, "invalid_request").await?;
                    let param = b["error"]["param"].as_str().unwrap_or_default();
                    ensure!(param.contains("content") && param.contains('1'), "{part}: param should name the part, got {param:?}");
                }
                let body = json!({"events": [{"type": "input.message", "text": "ok"}, {"type": "agent.session.bogus"}]});
                let b = refused(&api, &sid, body, 400, "invalid_request").await?;
                ensure!(b["error"]["param"] == "events[1].type", "{b}");
                for body in [
                    json!({"events": [{"type": "input.message", "text": ""}]}),
                    json!({"input": ""}),
                    json!({"events": []}),
                    json!({"events": ["text"]}),
                ] {
                    refused(&api, &sid, body, 400, "invalid_request").await?;
                }
                ensure!(api.turns(&sid).await?.is_empty(), "a refused event queued a turn");
                Ok(())
            },
        },
        case! {
            id: "agents/input/005",
            spec: "Idempotency-Key: the same key and body again is 202 and queues nothing more; the same key with another body is 409 `idempotency.mismatch`, x-should-retry false.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create", "agents_sessions_turns_list"],
            codes: ["idempotency.mismatch"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = id_of(&api.create(&json!({"runtime": "rt-two"})).await?)?;
                let path = spath(&sid, "/events");
                let body = json!({"input": "once only"});
                for _ in 0..2 {
                    let resp = api.send(api.post(&path, &body).header("idempotency-key", "key-1")).await?;
                    resp.expect_status(202)?;
                    ensure!(resp.body.is_empty(), "{}", resp.describe());
                }
                let resp = api
                    .send(api.post(&path, &json!({"input": "something else"})).header("idempotency-key", "key-1"))
                    .await?;
                resp.expect_error(409, "idempotency.mismatch")?;
                ensure!(resp.header("x-should-retry") == Some("false"), "{}", resp.describe());
                let turns = api.settle(&sid, 1).await?;
                ensure!(turns.len() == 1, "a replayed key queued a second turn: {turns:?}");
                // A fresh key is a fresh request.
                let resp = api.send(api.post(&path, &body).header("idempotency-key", "key-2")).await?;
                resp.expect_status(202)?;
                ensure!(api.settle(&sid, 2).await?.len() == 2, "key-2 queues a turn");
                Ok(())
            },
        },
        case! {
            id: "agents/input/006",
            spec: "A non-object events body is 400 invalid_request.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = api.create_on("rt-one", None).await?;
                for body in [json!([{"input": "x"}]), json!("x"), json!({})] {
                    refused(&api, &sid, body, 400, "invalid_request").await?;
                }
                let resp = api.send(api.req(reqwest::Method::POST, &spath(&sid, "/events")).header("content-type", "application/json").body("{not json")).await?;
                resp.expect_error(400, "invalid_request")?;
                Ok(())
            },
        },
    ]
}
