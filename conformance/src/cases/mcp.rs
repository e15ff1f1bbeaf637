//! MCP tools of a definition reach the runtime: the runtime really calls the MCP server,
//! with the header value the definition was given, and the call becomes an `mcp_call` item.

use crate::processes::command_lines_containing;
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A minimal MCP server over HTTP: answers JSON-RPC and records each request's
/// Authorization header and method.
pub async fn mcp_server() -> anyhow::Result<(String, Seen)> {
    let (url, seen, _) = mcp_server_watching(None).await?;
    Ok((url, seen))
}

/// The same server; while it answers a request (the runtime that sent it is alive), it also
/// looks for `secret` in every process's command line, and records where it found it.
pub async fn mcp_server_watching(
    secret: Option<String>,
) -> anyhow::Result<(String, Seen, Arc<Mutex<Vec<String>>>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let leaks = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let found = leaks.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let record = record.clone();
            if let Some(secret) = &secret {
                let hits = command_lines_containing(secret);
                found.lock().map(|mut f| f.extend(hits)).ok();
            }
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let (head, body) = loop {
                    let Ok(n) = tcp.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let len = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= len {
                            break (head.to_owned(), body[..len].to_owned());
                        }
                    }
                };
                let auth = head
                    .lines()
                    .find_map(|l| {
                        l.split_once(':')
                            .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                            .map(|(_, v)| v.trim().to_owned())
                    })
                    .unwrap_or_default();
                let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let method = request["method"].as_str().unwrap_or_default().to_owned();
                record
                    .lock()
                    .map(|mut r| r.push((auth, method.clone())))
                    .ok();
                let reply = match method.as_str() {
                    "initialize" => {
                        json!({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "conformance", "version": "1"}}})
                    }
                    _ => {
                        json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "pong"}]}})
                    }
                };
                let (status, data) = if request.get("id").is_some() {
                    ("200 OK", reply.to_string())
                } else {
                    ("202 Accepted", String::new())
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{data}",
                    data.len()
                );
                let _ = tcp.write_all(response.as_bytes()).await;
            });
        }
    });
    Ok((url, seen, leaks))
}

async fn mcp_turn(ctx: &Ctx, runtime: &str) -> anyhow::Result<()> {
    let (url, seen) = mcp_server().await?;
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
        call["output"].to_string().contains("pong"),
        "the server's answer: {call}"
    );
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    ensure!(
        seen.iter().any(|(_, m)| m == "tools/call"),
        "the MCP server was called: {seen:?}"
    );
    ensure!(
        seen.iter().all(|(auth, _)| *auth == secret),
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
