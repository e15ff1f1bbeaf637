//! Snapshots of response event sequences: replay, cancel and WebSocket (the sync object and
//! the live stream have theirs in `responses.rs` and `responses_stream.rs`).

use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};

/// The `type` of every `data:` frame of a closed SSE body.
fn types(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .map(|e| e["type"].clone())
        .collect()
}

async fn create(ctx: &Ctx, body: Value) -> anyhow::Result<String> {
    let resp = ctx.send(ctx.post_json("/v1/responses", &body)).await?;
    resp.expect_status(200)?;
    Ok(resp.json()?["id"]
        .as_str()
        .context("response id")?
        .to_owned())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/responses_sequences/001",
            spec: "Replay with `starting_after=2` of a finished response: the event types after the second, ending with response.completed (snapshot).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_get"],
            codes: [],
            run: |ctx| async move {
                let id = create(&ctx, json!({"model": "rt-one", "input": "replay me"})).await?;
                let body = ctx.send(ctx.get(&format!("/v1/responses/{id}?stream=true&starting_after=2"))).await?.text();
                let seen = types(&body);
                ensure!(seen.last() == Some(&json!("response.completed")), "{seen:?}");
                ctx.snapshot("agents__responses__replay_after_2_rt_one", &Value::Array(seen))
            },
        },
        case! {
            id: "agents/responses_sequences/002",
            spec: "A cancelled background response replays as created, in_progress, the items so far, then response.failed whose response.status is cancelled (snapshot).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_cancel", "agents_responses_get"],
            codes: [],
            run: |ctx| async move {
                let id = create(&ctx, json!({"model": "rt-one", "input": "wait [[scenario:hang]]", "background": true})).await?;
                // Let the runtime start (its reasoning item arrives before it hangs).
                for _ in 0..50 {
                    let now = ctx.send(ctx.get(&format!("/v1/responses/{id}"))).await?.json()?;
                    if now["output"].as_array().is_some_and(|o| !o.is_empty()) {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                ctx.send(ctx.post_json(&format!("/v1/responses/{id}/cancel"), &json!({}))).await?.expect_status(200)?;
                let body = ctx.send(ctx.get(&format!("/v1/responses/{id}?stream=true"))).await?.text();
                let last = body.lines().rev().find_map(|l| l.strip_prefix("data: ")).context("events")?;
                let last: Value = serde_json::from_str(last)?;
                ensure!(last["type"] == "response.failed" && last["response"]["status"] == "cancelled", "{last}");
                ctx.snapshot("agents__responses__cancelled_rt_one", &Value::Array(types(&body)))
            },
        },
        case! {
            id: "agents/responses_sequences/003",
            spec: "The WebSocket mode sends the same event types as the SSE stream (snapshot, rt-two).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_connect"],
            codes: [],
            run: |ctx| async move {
                use futures::{SinkExt, StreamExt};
                use tokio_tungstenite::tungstenite::Message;
                let mut ws = ctx.ws("/v1/responses").await?;
                let create = json!({"type": "response.create", "model": "rt-two", "input": "over the socket [[scenario:stream:5]]"});
                ws.send(Message::Text(create.to_string().into())).await?;
                let mut seen = Vec::new();
                while let Some(frame) = tokio::time::timeout(std::time::Duration::from_secs(15), ws.next()).await? {
                    if let Message::Text(text) = frame? {
                        let event: Value = serde_json::from_str(&text)?;
                        seen.push(event["type"].clone());
                        if event["type"] == "response.completed" {
                            break;
                        }
                    }
                }
                ws.close(None).await.ok();
                ensure!(seen.first() == Some(&json!("response.created")), "{seen:?}");
                ctx.snapshot("agents__responses__websocket_rt_two", &Value::Array(seen))
            },
        },
    ]
}
