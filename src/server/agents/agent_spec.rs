//! The agent fields that sessions (inline `agent`) and saved definitions share, checked the
//! same way in both places, and MCP tools with their secret header values.

use crate::error::ApiError;
use crate::server::agents::input::{self, invalid, only_keys, opt_str};
use crate::server::agents::runtimes::{Runtime, Selection};
use crate::services::ids;
use serde_json::{Map, Value, json};

/// The agent a session runs, fixed at creation.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub id: String,
    pub name: Option<String>,
    pub runtime: &'static Runtime,
    /// What the caller gave as the model (shown), and what goes to the CLI.
    pub model_shown: String,
    pub model_for_cli: Option<String>,
    pub instructions: Option<String>,
    pub reasoning_effort: Option<String>,
    pub service_tier: String,
    pub tools: Vec<McpTool>,
}

/// An MCP server the agent may call (http transport only). Header values are secrets: they
/// reach the runtime through its environment and are shown as `***`.
#[derive(Debug, Clone)]
pub struct McpTool {
    pub server_label: String,
    pub server_url: String,
    pub headers: Vec<(String, String)>,
    pub required: bool,
    /// Passed through as given (an object).
    pub request_metadata: Value,
    /// Which attached vault credential serves this server, when two would match.
    pub credential_id: Option<String>,
}

impl McpTool {
    pub fn to_json(&self) -> Value {
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .map(|(k, _)| (k.clone(), json!("***")))
            .collect();
        json!({
            "type": "mcp",
            "server_label": self.server_label,
            "transport": {"type": "http", "server_url": self.server_url, "headers": headers},
            "connection_origin": "service",
            "request_metadata": self.request_metadata,
            "required": self.required,
            "allowed_tools": null,
            "credential_id": self.credential_id,
        })
    }
}

fn field(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Builds the agent a session or definition runs from `map` (the `agent` object of a session,
/// or a definition body), with `prefix` naming where its fields live for error messages.
pub fn build(
    map: &Map<String, Value>,
    prefix: &str,
    selection: Selection,
    model: Option<&str>,
    id: Option<String>,
) -> Result<AgentSpec, ApiError> {
    let runtime = selection.runtime;
    if let Some(multi) = map.get("multi_agent")
        && multi.get("enabled").and_then(Value::as_bool) == Some(true)
    {
        return Err(invalid(
            field(prefix, "multi_agent.enabled"),
            "`multi_agent.enabled: true` is not supported: local runtimes manage their own sub-agents",
        ));
    }
    let reasoning_effort = reasoning(map, prefix, runtime)?;
    let service_tier =
        opt_str(map, "service_tier", &field(prefix, "service_tier"))?.unwrap_or("auto");
    if !["auto", "default"].contains(&service_tier) {
        return Err(invalid(
            field(prefix, "service_tier"),
            "`service_tier` is `auto` or `default`",
        ));
    }
    if let Some(text) = map.get("text").filter(|v| !v.is_null()) {
        let p = field(prefix, "text");
        let t = input::object(text, &p)?;
        only_keys(t, &["verbosity", "format"], &p)?;
        if t.get("verbosity").is_some_and(|v| v != "medium") {
            return Err(invalid(
                format!("{p}.verbosity"),
                "only `medium` verbosity is supported",
            ));
        }
        if t.get("format")
            .is_some_and(|f| f.get("type").and_then(Value::as_str) != Some("text"))
        {
            return Err(invalid(
                format!("{p}.format"),
                "only `{type: text}` is supported",
            ));
        }
    }
    let tools = match map.get("tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => tools(v, &field(prefix, "tools"))?,
    };
    Ok(AgentSpec {
        id: id.unwrap_or_else(|| {
            format!(
                "agent_{}_{}",
                runtime.id.replace('-', ""),
                &ids::new("x")[2..14]
            )
        }),
        name: opt_str(map, "name", &field(prefix, "name"))?.map(str::to_owned),
        runtime,
        model_shown: model.unwrap_or(runtime.id).to_owned(),
        model_for_cli: selection.model,
        instructions: opt_str(map, "instructions", &field(prefix, "instructions"))?
            .map(str::to_owned),
        reasoning_effort,
        service_tier: service_tier.to_owned(),
        tools,
    })
}

fn reasoning(
    map: &Map<String, Value>,
    prefix: &str,
    runtime: &Runtime,
) -> Result<Option<String>, ApiError> {
    let Some(reasoning) = map.get("reasoning").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let p = field(prefix, "reasoning");
    let r = input::object(reasoning, &p)?;
    only_keys(r, &["effort", "summary"], &p)?;
    if r.get("summary").is_some_and(|v| !v.is_null()) {
        return Err(invalid(
            format!("{p}.summary"),
            "`reasoning.summary` is not supported",
        ));
    }
    let Some(effort) = opt_str(r, "effort", &format!("{p}.effort"))? else {
        return Ok(None);
    };
    if runtime.id != "rt-one" {
        return Err(invalid(
            format!("{p}.effort"),
            format!(
                "`reasoning.effort` is only supported by rt-one, not {}",
                runtime.id
            ),
        ));
    }
    if !["minimal", "low", "medium", "high"].contains(&effort) {
        return Err(invalid(
            format!("{p}.effort"),
            "`reasoning.effort` is one of minimal, low, medium, high",
        ));
    }
    Ok(Some(effort.to_owned()))
}

/// Only MCP tools over http: stdio servers would run arbitrary programs, and other tool
/// types belong to the hosted platform.
pub fn tools(value: &Value, param: &str) -> Result<Vec<McpTool>, ApiError> {
    let Value::Array(list) = value else {
        return Err(invalid(param, format!("`{param}` must be an array")));
    };
    let mut out: Vec<McpTool> = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let p = format!("{param}[{i}]");
        let map = input::object(tool, &p)?;
        if map.get("type").and_then(Value::as_str) != Some("mcp") {
            return Err(invalid(
                format!("{p}.type"),
                "only `mcp` tools are supported by local runtimes",
            ));
        }
        if map.get("allowed_tools").is_some_and(|v| !v.is_null()) {
            return Err(invalid(
                format!("{p}.allowed_tools"),
                "`allowed_tools` is not supported: every tool of the server is offered",
            ));
        }
        only_keys(
            map,
            &[
                "type",
                "server_label",
                "transport",
                "required",
                "connection_origin",
                "request_metadata",
                "credential_id",
                "allowed_tools",
            ],
            &p,
        )?;
        let credential_id =
            opt_str(map, "credential_id", &format!("{p}.credential_id"))?.map(str::to_owned);
        let request_metadata = match map.get("request_metadata") {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => {
                return Err(invalid(
                    format!("{p}.request_metadata"),
                    "`request_metadata` must be an object",
                ));
            }
        };
        let label = opt_str(map, "server_label", &format!("{p}.server_label"))?.unwrap_or_default();
        let label_ok = !label.is_empty()
            && label.len() <= 64
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !label_ok {
            return Err(invalid(
                format!("{p}.server_label"),
                "`server_label` is 1-64 letters, digits, `_` or `-`",
            ));
        }
        if out.iter().any(|t| t.server_label == label) {
            return Err(invalid(
                format!("{p}.server_label"),
                format!("the server_label `{label}` is used twice"),
            ));
        }
        let transport = map
            .get("transport")
            .ok_or_else(|| invalid(format!("{p}.transport"), "an MCP tool needs a `transport`"))?;
        let t = input::object(transport, &format!("{p}.transport"))?;
        if t.get("type").and_then(Value::as_str) != Some("http") {
            return Err(invalid(
                format!("{p}.transport.type"),
                "only the `http` transport is supported (stdio servers are refused)",
            ));
        }
        only_keys(
            t,
            &["type", "server_url", "headers"],
            &format!("{p}.transport"),
        )?;
        let url =
            opt_str(t, "server_url", &format!("{p}.transport.server_url"))?.unwrap_or_default();
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url.len() < 9
            || url.contains(char::is_whitespace)
        {
            return Err(invalid(
                format!("{p}.transport.server_url"),
                "`server_url` must be an http or https URL",
            ));
        }
        let mut headers = Vec::new();
        if let Some(h) = t.get("headers").filter(|v| !v.is_null()) {
            for (name, value) in input::object(h, &format!("{p}.transport.headers"))? {
                let hp = format!("{p}.transport.headers.{name}");
                let Value::String(value) = value else {
                    return Err(invalid(hp, "header values are strings"));
                };
                if http::HeaderName::try_from(name.as_str()).is_err()
                    || value.contains(['\r', '\n'])
                {
                    return Err(invalid(hp, "not a valid HTTP header"));
                }
                headers.push((name.clone(), value.clone()));
            }
        }
        out.push(McpTool {
            server_label: label.to_owned(),
            server_url: url.to_owned(),
            headers,
            required: map
                .get("required")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            request_metadata,
            credential_id,
        });
    }
    Ok(out)
}
