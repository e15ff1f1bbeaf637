//! GET /v1/responses: the WebSocket mode (agents spec 4.9).

use crate::{Case, WsStream, case, profiles};
use anyhow::{Context, bail, ensure};
use futures::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

async fn next_json(ws: &mut WsStream) -> anyhow::Result<Value> {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(15), ws.next())
            .await
            .context("no frame within 15 s")?
            .context("the socket closed")??;
        match message {
            Message::Text(text) => {
                return serde_json::from_str(&text).context("a frame that is not JSON");
            }
            Message::Ping(_) | Message::Pong(_) => continue,
            other => bail!("unexpected frame {other:?}"),
        }
    }
}

/// Sends one `response.create` and reads its events through the terminal one.
async fn create(ws: &mut WsStream, params: Value) -> anyhow::Result<Vec<Value>> {
    let mut message = json!({"type": "response.create"});
    if let (Some(m), Value::Object(p)) = (message.as_object_mut(), params) {
        m.extend(p);
    }
    ws.send(Message::Text(message.to_string().into())).await?;
    let mut events = Vec::new();
    loop {
        let event = next_json(ws).await?;
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        events.push(event);
        if kind == "response.completed" || kind == "response.failed" || kind == "error" {
            return Ok(events);
        }
    }
}

fn final_text(events: &[Value]) -> String {
    events
        .last()
        .and_then(|e| e["response"]["output"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|i| i["type"] == "message")
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/ws/001",
            spec: "GET /v1/responses without a WebSocket upgrade is 400 `agents.websocket_upgrade_required`.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_responses_connect"],
            codes: ["agents.websocket_upgrade_required"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.request(Method::GET, "/v1/responses")).await?;
                resp.expect_error(400, "agents.websocket_upgrade_required")?;
                ensure!(resp.header("x-should-retry") == Some("false"), "a refusal is not retried");
                Ok(())
            },
        },
        case! {
            id: "agents/ws/002",
            spec: "With an upgrade, `response.create` messages run responses one after another on one socket and send the same events as the SSE stream; a bad message gets an error event and the socket stays usable.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_connect"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let mut ws = ctx.ws("/v1/responses").await?;
                for (model, prompt) in [("rt-one", "first"), ("rt-two", "second [[scenario:stream:10]]")] {
                    let events = create(&mut ws, json!({"model": model, "input": prompt})).await?;
                    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap_or_default()).collect();
                    ensure!(kinds.first() == Some(&"response.created") && kinds.last() == Some(&"response.completed"), "{kinds:?}");
                    ensure!(events.iter().all(|e| e["sequence_number"].is_u64()), "every event has a sequence_number");
                    ensure!(final_text(&events) == format!("echo (turn 1): {prompt}"), "{}", final_text(&events));
                }
                ws.send(Message::Text("not json".into())).await?;
                let error = next_json(&mut ws).await?;
                ensure!(error["type"] == "error" && error["code"] == "invalid_request", "{error}");
                let events = create(&mut ws, json!({"model": "rt-one", "input": [{"role": "assistant", "content": "x"}]})).await?;
                let last = events.last().context("an answer")?;
                ensure!(last["type"] == "error" && last["param"] == "input[0].role", "{last}");
                let events = create(&mut ws, json!({"model": "rt-one", "input": "still open"})).await?;
                ensure!(final_text(&events) == "echo (turn 1): still open", "the socket stays usable");
                ws.close(None).await.ok();
                Ok(())
            },
        },
        case! {
            id: "agents/ws/003",
            spec: "A handshake carrying an `Origin` (a web page: a browser sends one on every WebSocket and lets any page open one to any host) is 403 `origin_refused`, whatever the origin, even with a good token; refused by the pipeline as on every WebSocket route (issue 31, item 4).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_responses_connect"],
            codes: ["origin_refused"],
            run: |ctx| async move {
                let bearer = ctx.token().map(|t| format!("Bearer {t}"));
                for origin in ["https://evil.example", ctx.base_url(), "null"] {
                    let mut headers = vec![("origin", origin)];
                    if let Some(bearer) = &bearer {
                        headers.push(("authorization", bearer.as_str()));
                    }
                    let resp = ctx.ws_refused("/v1/responses", &headers).await?;
                    resp.expect_error(403, "origin_refused").with_context(|| origin.to_owned())?;
                }
                Ok(())
            },
        },
    ]
}
