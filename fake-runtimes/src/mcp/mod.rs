//! MCP over streamable HTTP, std only. Only `http://` is supported: the
//! servers the fakes talk to in tests listen on loopback.

mod client;
mod http;

pub use client::call_tool;

use serde_json::Value;

/// An MCP server as configured on the command line of either fake.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    pub name: String,
    /// None for stdio servers (`command`), which the fakes cannot start.
    pub url: Option<String>,
    /// Headers sent on every request, with env references already resolved.
    pub headers: Vec<(String, String)>,
    /// Set when the configuration itself is unusable (e.g. a missing env var),
    /// reported as the call's error instead of making a request.
    pub config_error: Option<String>,
}

/// A `tools/call` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum McpError {
    /// The server answered with a JSON-RPC error.
    Rpc { code: i64, message: String },
    /// No usable answer: connection, HTTP status, or protocol problem.
    Transport(String),
}

impl std::fmt::Display for McpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpError::Rpc { code, message } => write!(f, "Mcp error: {code}: {message}"),
            McpError::Transport(m) => f.write_str(m),
        }
    }
}

impl ToolResult {
    /// The text parts joined, for places that show a plain string.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Replaces `${VAR}` and `${VAR:-default}` with environment values, as
/// Claude Code does for `--mcp-config` headers. Returns the names of unset
/// variables that had no default.
pub fn expand_env(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut missing = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return (out, missing);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (crate::env::var(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => missing.push(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    (out, missing)
}
