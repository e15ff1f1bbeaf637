//! Reading `POST /v1/responses` (agents spec 4.9): every refusal is a 400 naming `param`;
//! `temperature`, `top_p` and `max_output_tokens` are accepted and ignored (the caller is
//! told in `X-Svc-Ignored-Params`).

use crate::error::ApiError;
use crate::server::agents::agent_spec::McpTool;
use crate::server::agents::input::{self, content_text, invalid, opt_str};
use crate::server::agents::responses::wire::ResponseCreate;
use crate::server::agents::wire::Object;
use crate::services::ids;
use serde_json::{Map, Value, json};

#[derive(Debug, Clone)]
pub struct ResponseRequest {
    pub model: String,
    /// The user's text, for the runtime's prompt.
    pub prompt: String,
    /// System and developer messages, added to the instructions.
    pub system: Vec<String>,
    /// The input as items (`input_items`), each with an id.
    pub items: Vec<Value>,
    pub instructions: Option<String>,
    pub metadata: Map<String, Value>,
    pub store: bool,
    pub background: bool,
    pub stream: bool,
    pub previous_response_id: Option<String>,
    pub tools: Vec<McpTool>,
    pub reasoning_effort: Option<String>,
    pub ignored: Vec<&'static str>,
}

pub fn parse(body: ResponseCreate) -> Result<ResponseRequest, ApiError> {
    for (key, given) in [
        ("conversation", body.conversation.is_some()),
        ("prompt", body.prompt.is_some()),
    ] {
        if given {
            return Err(invalid(
                key,
                format!("`{key}` needs the hosted platform; use previous_response_id"),
            ));
        }
    }
    if body.include.as_ref().is_some_and(|a| !a.is_empty()) {
        return Err(invalid("include", "`include` is not supported locally"));
    }
    if body
        .service_tier
        .as_deref()
        .is_some_and(|tier| !["auto", "default"].contains(&tier))
    {
        return Err(invalid(
            "service_tier",
            "`service_tier` is `auto` or `default`",
        ));
    }
    if body
        .tool_choice
        .as_ref()
        .is_some_and(|choice| choice != "auto")
    {
        return Err(invalid(
            "tool_choice",
            "only `tool_choice: auto` is supported",
        ));
    }
    if let Some(Object(text)) = &body.text {
        if text
            .format
            .as_ref()
            .is_some_and(|f| f.get("type").and_then(Value::as_str) != Some("text"))
        {
            return Err(invalid("text.format", "only `{type: text}` is supported"));
        }
        if text.verbosity.as_ref().is_some_and(|v| v != "medium") {
            return Err(invalid(
                "text.verbosity",
                "only `medium` verbosity is supported",
            ));
        }
    }
    let model = body.model.filter(|m| !m.trim().is_empty()).ok_or_else(|| {
        invalid(
            "model",
            "`model` is required: a definition id, a model id or a runtime name",
        )
    })?;
    let store = body.store.unwrap_or(true);
    let background = body.background.unwrap_or(false);
    if background && !store {
        return Err(invalid(
            "store",
            "`store: false` cannot be combined with `background: true`",
        ));
    }
    let (prompt, system, items) = read_input(body.input.as_ref())?;
    let reasoning_effort = match body.reasoning {
        None => None,
        Some(Object(r)) => {
            if r.summary.as_ref().is_some_and(|v| !v.is_null()) {
                return Err(invalid(
                    "reasoning.summary",
                    "`reasoning.summary` is not supported",
                ));
            }
            r.effort
        }
    };
    let ignored = [
        ("temperature", body.temperature.is_some()),
        ("top_p", body.top_p.is_some()),
        ("max_output_tokens", body.max_output_tokens.is_some()),
    ];
    Ok(ResponseRequest {
        model,
        prompt,
        system,
        items,
        instructions: body.instructions,
        metadata: match &body.metadata {
            Some(metadata) => metadata.read("metadata")?,
            None => Map::new(),
        },
        store,
        background,
        stream: body.stream.unwrap_or(false),
        previous_response_id: body.previous_response_id,
        tools: tools(body.tools.as_ref())?,
        reasoning_effort,
        ignored: ignored
            .into_iter()
            .filter_map(|(key, given)| given.then_some(key))
            .collect(),
    })
}

/// A string, or user/system/developer messages with `input_text` content. Assistant
/// history is refused: the runtime keeps its own thread (use `previous_response_id`).
fn read_input(value: Option<&Value>) -> Result<(String, Vec<String>, Vec<Value>), ApiError> {
    let item = |role: &str, text: &str| {
        json!({"id": ids::new("msg"), "type": "message", "role": role, "status": "completed",
               "content": [{"type": "input_text", "text": text}]})
    };
    match value {
        None | Some(Value::Null) => Err(invalid("input", "`input` is required")),
        Some(Value::String(text)) if !text.trim().is_empty() => {
            Ok((text.clone(), Vec::new(), vec![item("user", text)]))
        }
        Some(Value::Array(messages)) if !messages.is_empty() => {
            let (mut user, mut system, mut items) = (Vec::new(), Vec::new(), Vec::new());
            for (i, m) in messages.iter().enumerate() {
                let p = format!("input[{i}]");
                let map = input::object(m, &p)?;
                if map.get("type").is_some_and(|t| t != "message") {
                    return Err(invalid(
                        format!("{p}.type"),
                        "only messages are accepted as input",
                    ));
                }
                let role = map.get("role").and_then(Value::as_str).unwrap_or("user");
                if !["user", "system", "developer"].contains(&role) {
                    return Err(invalid(
                        format!("{p}.role"),
                        "assistant history is not accepted: the runtime keeps its own thread (use previous_response_id)",
                    ));
                }
                let text = content_text(
                    map.get("content").unwrap_or(&Value::Null),
                    &format!("{p}.content"),
                )?;
                items.push(item(role, &text));
                if role == "user" {
                    user.push(text)
                } else {
                    system.push(text)
                }
            }
            if user.iter().all(|t| t.trim().is_empty()) {
                return Err(invalid("input", "`input` has no user text"));
            }
            Ok((user.join("\n\n"), system, items))
        }
        Some(_) => Err(invalid(
            "input",
            "`input` must be a non-empty string or a list of messages",
        )),
    }
}

/// MCP tools only; `headers` and `authorization` are write-only.
fn tools(value: Option<&Value>) -> Result<Vec<McpTool>, ApiError> {
    let Some(Value::Array(list)) = value.filter(|v| !v.is_null()) else {
        return match value {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(_) => Err(invalid("tools", "`tools` must be an array")),
        };
    };
    let mut as_definitions = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let p = format!("tools[{i}]");
        let map = input::object(tool, &p)?;
        if map.get("type").and_then(Value::as_str) != Some("mcp") {
            return Err(invalid(
                format!("{p}.type"),
                "only `mcp` tools are supported by local runtimes",
            ));
        }
        input::only_keys(
            map,
            &[
                "type",
                "server_label",
                "server_url",
                "headers",
                "authorization",
                "require_approval",
                "server_description",
            ],
            &p,
        )?;
        // Checked here, before `authorization` is added to it: the common check below sees
        // the merged headers only.
        let mut headers = match map.get("headers") {
            None | Some(Value::Null) => json!({}),
            Some(h @ Value::Object(_)) => h.clone(),
            Some(_) => {
                return Err(invalid(
                    format!("{p}.headers"),
                    "`headers` must be an object of header names to values",
                ));
            }
        };
        if let Some(token) = opt_str(map, "authorization", &format!("{p}.authorization"))? {
            headers["Authorization"] = json!(format!("Bearer {token}"));
        }
        as_definitions.push(json!({
            "type": "mcp",
            "server_label": map.get("server_label").cloned().unwrap_or(Value::Null),
            "transport": {"type": "http", "server_url": map.get("server_url").cloned().unwrap_or(Value::Null), "headers": headers},
        }));
    }
    // The same checks as a definition's tools, on the equivalent definition form, all at
    // once so that checks across tools (a label used twice) apply too.
    crate::server::agents::agent_spec::tools(&Value::Array(as_definitions), "tools").map_err(
        |mut e| {
            e.param = e.param.map(|q| q.replacen(".transport", "", 1));
            e
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz run: `headers` that is not an object, with `authorization`, was a
    /// caught panic (500) instead of a refusal naming the field.
    #[test]
    fn tool_headers_that_are_not_an_object_are_refused_naming_them() {
        for headers in [json!([null, null]), json!("x"), json!(1)] {
            let body = json!({"model": "rt-one", "input": "hi", "tools": [{
                "type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/mcp",
                "headers": headers, "authorization": "t",
            }]});
            let body = crate::server::agents::wire::read(&body, "").unwrap();
            let e = parse(body).unwrap_err();
            assert_eq!(e.param.as_deref(), Some("tools[0].headers"), "{headers}");
        }
    }
}
