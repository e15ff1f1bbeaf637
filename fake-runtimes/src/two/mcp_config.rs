//! `--mcp-config`: JSON strings or files of the form
//! `{"mcpServers": {"NAME": {"type": "http", "url": ..., "headers": {...}}}}`,
//! with `${VAR}` / `${VAR:-default}` expanded from the environment.

use crate::mcp::{McpServer, expand_env};
use serde_json::Value;
use std::path::Path;

/// Parses every `--mcp-config` word; later configs override earlier names.
pub fn load(configs: &[String], cwd: &Path) -> Result<Vec<McpServer>, String> {
    let mut servers: Vec<McpServer> = Vec::new();
    for word in configs {
        let text = if word.trim_start().starts_with('{') {
            word.clone()
        } else {
            let path = cwd.join(word);
            std::fs::read_to_string(&path).map_err(|_| {
                format!(
                    "Error: Invalid MCP configuration:\nMCP config file not found: {}",
                    path.display()
                )
            })?
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            format!("Error: Invalid MCP configuration:\nMCP config is not a valid JSON: {e}")
        })?;
        let table = value.get("mcpServers").and_then(Value::as_object).ok_or(
            "Error: Invalid MCP configuration:\nmcpServers: Expected object, received undefined",
        )?;
        for (name, cfg) in table {
            let server = server(name, cfg);
            servers.retain(|s| s.name != server.name);
            servers.push(server);
        }
    }
    Ok(servers)
}

fn server(name: &str, cfg: &Value) -> McpServer {
    let kind = cfg.get("type").and_then(Value::as_str).unwrap_or("stdio");
    let mut missing = Vec::new();
    let mut expand = |s: &str| {
        let (text, miss) = expand_env(s);
        missing.extend(miss);
        text
    };
    let url = match kind {
        "http" | "sse" => cfg.get("url").and_then(Value::as_str).map(&mut expand),
        _ => None,
    };
    let mut headers = Vec::new();
    if let Some(Value::Object(h)) = cfg.get("headers") {
        for (k, v) in h {
            if let Some(v) = v.as_str() {
                headers.push((k.clone(), expand(v)));
            }
        }
    }
    let config_error = if !missing.is_empty() {
        Some(format!(
            "Missing environment variables: {}",
            missing.join(", ")
        ))
    } else if url.is_none() {
        Some(format!(
            "MCP server \"{name}\" is a {kind} server; the fake only supports http"
        ))
    } else {
        None
    };
    McpServer {
        name: name.to_string(),
        url,
        headers,
        config_error,
    }
}

/// Status shown in the init line. The fake does not connect at startup, so
/// a well-formed http server counts as connected.
pub fn status(server: &McpServer) -> &'static str {
    if server.config_error.is_none() {
        "connected"
    } else {
        "failed"
    }
}
