//! `-c key=value` overrides: the model and `mcp_servers.*` tables.

use crate::mcp::McpServer;
use crate::toml_lite::parse_value;
use serde_json::{Map, Value};

#[derive(Debug, Default)]
pub struct Config {
    pub model: Option<String>,
    pub mcp_servers: Vec<McpServer>,
}

/// Builds the config tree from the overrides (later ones win, like codex).
pub fn from_overrides(overrides: &[String]) -> Result<Config, String> {
    let mut root = Map::new();
    for item in overrides {
        let (key, raw) = item.split_once('=').ok_or_else(|| {
            format!("Error parsing -c overrides: Invalid override (missing '='): {item}")
        })?;
        let path: Vec<&str> = key.trim().split('.').collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "Error parsing -c overrides: Invalid override (empty key): {item}"
            ));
        }
        insert(&mut root, &path, parse_value(raw.trim()));
    }
    let model = root
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut mcp_servers = Vec::new();
    if let Some(Value::Object(servers)) = root.get("mcp_servers") {
        for (name, cfg) in servers {
            mcp_servers.push(server(name, cfg));
        }
    }
    Ok(Config { model, mcp_servers })
}

fn insert(map: &mut Map<String, Value>, path: &[&str], value: Value) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        // Merge tables so `mcp_servers.x={url=..}` plus `mcp_servers.x.y=..` combine.
        match (map.get_mut(*first), value) {
            (Some(Value::Object(existing)), Value::Object(new)) => existing.extend(new),
            (_, value) => {
                map.insert((*first).to_string(), value);
            }
        }
        return;
    }
    let entry = map
        .entry((*first).to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(child) = entry {
        insert(child, rest, value);
    }
}

/// One `mcp_servers.NAME` table, using codex's field names.
fn server(name: &str, cfg: &Value) -> McpServer {
    let get = |k: &str| cfg.get(k).and_then(Value::as_str).map(str::to_string);
    let mut headers = Vec::new();
    let mut config_error = None;
    if let Some(var) = get("bearer_token_env_var") {
        match crate::env::var(&var) {
            Some(token) => headers.push(("Authorization".to_string(), format!("Bearer {token}"))),
            None => {
                config_error = Some(format!(
                    "Environment variable {var} for MCP server '{name}' is not set"
                ));
            }
        }
    }
    if let Some(Value::Object(h)) = cfg.get("http_headers") {
        for (k, v) in h {
            if let Some(v) = v.as_str() {
                headers.push((k.clone(), v.to_string()));
            }
        }
    }
    // Values name environment variables; unset ones are skipped like codex does.
    if let Some(Value::Object(h)) = cfg.get("env_http_headers") {
        for (k, v) in h {
            if let Some(value) = v.as_str().and_then(crate::env::var) {
                headers.push((k.clone(), value));
            }
        }
    }
    // Like codex 0.169 in `exec`, which can ask no one: a server's tools run only when the
    // configuration approves them.
    if config_error.is_none() && get("default_tools_approval_mode").as_deref() != Some("approve") {
        config_error =
            Some("MCP tool call requires approval, but approval policy is never".to_string());
    }
    McpServer {
        name: name.to_string(),
        url: get("url"),
        headers,
        config_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_model_and_servers() {
        let c = from_overrides(&[
            "model=\"o3\"".into(),
            "mcp_servers.demo.url=http://127.0.0.1:1/mcp".into(),
            "mcp_servers.demo.http_headers={\"X-A\"=\"1\"}".into(),
            "mcp_servers.other={url=\"http://h/m\"}".into(),
        ])
        .unwrap();
        assert_eq!(c.model.as_deref(), Some("o3"));
        assert_eq!(c.mcp_servers.len(), 2);
        assert_eq!(
            c.mcp_servers[0].url.as_deref(),
            Some("http://127.0.0.1:1/mcp")
        );
        assert_eq!(
            c.mcp_servers[0].headers,
            vec![("X-A".to_string(), "1".to_string())]
        );
        assert!(
            from_overrides(&["novalue".into()])
                .unwrap_err()
                .contains("missing '='")
        );
    }
}
