//! MCP tools of a definition reach the runtime: the runtime really calls the MCP server,
//! with the header value the definition was given, and the call becomes an `mcp_call` item.

use crate::mcp_mock::McpMock;
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};
use std::time::Duration;

async fn mcp_turn(ctx: &Ctx, runtime: &str) -> anyhow::Result<()> {
    let mcp = McpMock::start(None).await;
    let url = mcp.url();
    let secret = format!("Bearer conformance-{runtime}-7f3a");
    let definition = ctx
        .send(ctx.post_json("/v1/agents", &json!({
            "model": runtime,
            "tools": [{"type": "mcp", "server_label": "probe", "transport": {"type": "http", "server_url": url, "headers": {"Authorization": secret}}}],
        })))
        .await?;
    definition.expect_status(200)?;
    ensure!(
        !definition.text().contains(&secret),
        "the header value is never returned"
    );
    let agent_id = definition.json()?["id"]
        .as_str()
        .context("definition id")?
        .to_owned();
    let session = ctx
        .send(ctx.post_json(
            "/v1/agents/sessions",
            &json!({"agent_id": agent_id, "input": "ping [[scenario:mcp:probe/echo]]"}),
        ))
        .await?
        .json()?;
    let id = session["id"].as_str().context("session id")?.to_owned();
    let mut items = Value::Null;
    for _ in 0..100 {
        let turns = ctx
            .send(ctx.get(&format!("/v1/agents/sessions/{id}/turns")))
            .await?
            .json()?;
        if turns["data"][0]["status"] == "completed" || turns["data"][0]["status"] == "failed" {
            items = ctx
                .send(ctx.get(&format!("/v1/agents/sessions/{id}/items?order=asc")))
                .await?
                .json()?;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let call = items["data"]
        .as_array()
        .and_then(|list| list.iter().find(|i| i["type"] == "mcp_call"))
        .with_context(|| format!("no mcp_call item: {items}"))?;
    ensure!(
        call["server_label"] == "probe" && call["name"] == "echo" && call["status"] == "completed",
        "{call}"
    );
    ensure!(
        call["output"].to_string().contains("echo: "),
        "the server's answer: {call}"
    );
    let seen = mcp.seen();
    ensure!(
        seen.methods.iter().any(|m| m == "tools/call"),
        "the MCP server was called: {seen:?}"
    );
    ensure!(
        seen.authorization.iter().all(|auth| *auth == secret),
        "every call carried the header: {seen:?}"
    );
    let all = ctx
        .send(ctx.get(&format!("/v1/agents/sessions/{id}/events?after=0")))
        .await?
        .text();
    ensure!(
        !all.contains(&secret),
        "the header value never reaches an event"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/mcp/001",
            spec: "An MCP tool (http transport) of a definition is offered to rt-one: it really calls the server with the configured header, and the call is an `mcp_call` item; header values are never returned.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_definitions_create", "agents_sessions_create", "agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move { mcp_turn(&ctx, "rt-one").await },
        },
        case! {
            id: "agents/mcp/002",
            spec: "The same for rt-two (its --mcp-config header refers to an environment variable).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_definitions_create", "agents_sessions_create", "agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move { mcp_turn(&ctx, "rt-two").await },
        },
    ]
}
