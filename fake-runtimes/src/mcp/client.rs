//! JSON-RPC over streamable HTTP: initialize handshake, then `tools/call`.

use super::http::{Response, post};
use super::{McpError, McpServer, ToolResult};
use serde_json::{Value, json};
use std::io::BufRead;
use std::time::Duration;

const PROTOCOL_VERSION: &str = "2025-06-18";

struct Session<'a> {
    url: &'a str,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

/// Calls `tool` on `server`. Real servers expect the initialize handshake
/// first (and may hand out an `Mcp-Session-Id`), so the fake does it too
/// unless `RT_FAKE_MCP_HANDSHAKE=0`.
pub fn call_tool(
    server: &McpServer,
    tool: &str,
    arguments: &Value,
    client: &str,
) -> Result<ToolResult, McpError> {
    if let Some(err) = &server.config_error {
        return Err(McpError::Transport(err.clone()));
    }
    let url = server.url.as_deref().ok_or_else(|| {
        McpError::Transport(format!(
            "MCP server '{}' has no url; the fake only supports http:// servers",
            server.name
        ))
    })?;
    let mut session = Session {
        url,
        headers: server.headers.clone(),
        timeout: Duration::from_millis(crate::env::millis(crate::env::MCP_TIMEOUT_MS, 30_000)),
    };
    let handshake = crate::env::var(crate::env::MCP_HANDSHAKE).as_deref() != Some("0");
    if handshake {
        let init = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": client, "version": if client == "rt-two" { crate::CLAUDE_VERSION } else { crate::CODEX_VERSION }},
        });
        let (_, response_headers) = session.request(0, "initialize", init)?;
        if let Some(id) = response_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
        {
            session
                .headers
                .push(("Mcp-Session-Id".into(), id.1.clone()));
        }
        session
            .headers
            .push(("MCP-Protocol-Version".into(), PROTOCOL_VERSION.into()));
        session.notify("notifications/initialized")?;
    }
    let (result, _) = session.request(
        1,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )?;
    Ok(ToolResult {
        content: result
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        structured_content: result
            .get("structuredContent")
            .cloned()
            .filter(|v| !v.is_null()),
        is_error: result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

impl Session<'_> {
    fn send(&self, body: &Value) -> Result<Response, McpError> {
        let response = post(self.url, &self.headers, &body.to_string(), self.timeout)
            .map_err(McpError::Transport)?;
        Ok(response)
    }

    fn notify(&self, method: &str) -> Result<(), McpError> {
        let mut response = self.send(&json!({"jsonrpc": "2.0", "method": method}))?;
        if !(200..300).contains(&response.status) {
            let body = response.read_all().unwrap_or_default();
            return Err(status_error(self.url, response.status, &body));
        }
        Ok(())
    }

    fn request(
        &self,
        id: i64,
        method: &str,
        params: Value,
    ) -> Result<(Value, Vec<(String, String)>), McpError> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut response = self.send(&body)?;
        if !(200..300).contains(&response.status) {
            let text = response.read_all().unwrap_or_default();
            return Err(status_error(self.url, response.status, &text));
        }
        let is_sse = response
            .header("content-type")
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        let message = if is_sse {
            read_sse_reply(&mut response, id)?
        } else {
            let text = response.read_all().map_err(McpError::Transport)?;
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                McpError::Transport(format!("invalid JSON-RPC response to {method}: {e}"))
            })?;
            pick_reply(value, id).ok_or_else(|| {
                McpError::Transport(format!("no JSON-RPC response with id {id} to {method}"))
            })?
        };
        if let Some(err) = message.get("error") {
            return Err(McpError::Rpc {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_string(),
            });
        }
        let result = message.get("result").cloned().unwrap_or(Value::Null);
        Ok((result, response.headers.clone()))
    }
}

fn status_error(url: &str, status: u16, body: &str) -> McpError {
    let snippet: String = body.chars().take(200).collect();
    McpError::Transport(format!("HTTP status {status} from {url}: {snippet}"))
}

/// A response body may be one message or a batch; find ours by id.
fn pick_reply(value: Value, id: i64) -> Option<Value> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .find(|m| m.get("id").and_then(Value::as_i64) == Some(id)),
        m if m.get("id").and_then(Value::as_i64) == Some(id) => Some(m),
        _ => None,
    }
}

fn read_sse_reply(response: &mut Response, id: i64) -> Result<Value, McpError> {
    let reader = response.body_reader();
    let mut data = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| McpError::Transport(format!("error reading event stream: {e}")))?;
        let trimmed = line.trim_end_matches(['\r', '\n']);
        if let Some(rest) = trimmed.strip_prefix("data:") {
            data.push_str(rest.trim_start());
            continue;
        }
        if (trimmed.is_empty() || n == 0) && !data.is_empty() {
            if let Some(reply) = serde_json::from_str(&data)
                .ok()
                .and_then(|v| pick_reply(v, id))
            {
                return Ok(reply);
            }
            data.clear();
        }
        if n == 0 {
            return Err(McpError::Transport(format!(
                "event stream ended without a response to id {id}"
            )));
        }
    }
}
