//! POST /v1/responses/compact (agents spec 4.9).

use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};

async fn respond(ctx: &Ctx, body: Value) -> anyhow::Result<Value> {
    let resp = ctx.send(ctx.post_json("/v1/responses", &body)).await?;
    resp.expect_status(200)?;
    resp.json()
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/compact/001",
            spec: "POST /v1/responses/compact needs `previous_response_id`; rt-two runs its local compress and the conversation goes on in the same runtime thread.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_compact"],
            codes: [],
            run: |ctx| async move {
                let first = respond(&ctx, json!({"model": "rt-two", "input": "remember me"})).await?;
                let id = first["id"].as_str().context("response id")?;
                let resp = ctx.send(ctx.post_json("/v1/responses/compact", &json!({"model": "rt-two", "previous_response_id": id}))).await?;
                resp.expect_status(200)?;
                let compacted = resp.json()?;
                ensure!(compacted["object"] == "response.compaction" && compacted["output"].is_array(), "{compacted}");
                ensure!(compacted["usage"]["total_tokens"].is_u64(), "usage is present: {compacted}");
                let after = respond(&ctx, json!({"model": "rt-two", "input": "after", "previous_response_id": id})).await?;
                let text = after["output"].as_array().and_then(|o| o.iter().find(|i| i["type"] == "message"))
                    .map(|m| m["content"][0]["text"].to_string()).unwrap_or_default();
                ensure!(text.contains("turn 3"), "the thread went on after the compaction: {text}");
                Ok(())
            },
        },
        case! {
            id: "agents/compact/002",
            spec: "Compact on rt-one is 400 `agents.compact_unsupported`; without `previous_response_id` it is 400 naming it; an unknown one is 404.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_compact"],
            codes: ["agents.compact_unsupported", "invalid_request", "resource_not_found"],
            run: |ctx| async move {
                let first = respond(&ctx, json!({"model": "rt-one", "input": "x"})).await?;
                let id = first["id"].as_str().context("response id")?;
                let resp = ctx.send(ctx.post_json("/v1/responses/compact", &json!({"previous_response_id": id}))).await?;
                resp.expect_error(400, "agents.compact_unsupported")?;
                ensure!(resp.header("x-should-retry") == Some("false"), "a refusal is not retried");
                let resp = ctx.send(ctx.post_json("/v1/responses/compact", &json!({"model": "rt-two"}))).await?;
                let err = resp.expect_error(400, "invalid_request")?;
                ensure!(err["error"]["param"] == "previous_response_id", "{err}");
                let resp = ctx.send(ctx.post_json("/v1/responses/compact", &json!({"previous_response_id": "resp_000000000000000000000000"}))).await?;
                let err = resp.expect_error(404, "resource_not_found")?;
                ensure!(err["error"]["param"] == "previous_response_id", "{err}");
                Ok(())
            },
        },
    ]
}
