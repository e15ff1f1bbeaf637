//! Reading request bodies of the sessions routes: every refusal names the field (`param`).

use crate::error::{ApiError, Code, ErrorCode};
use crate::services::paging::PagingError;
use serde_json::{Map, Value};

/// Paging parameters every agents list reads (agents spec 2.3, 7): a bad `limit` or
/// `order` is `invalid_request`, an unknown `after` is `agents.cursor_not_found`.
impl ErrorCode for PagingError {
    fn error_code(&self) -> Code {
        match self {
            PagingError::Limit(_) | PagingError::Order(_) => Code::InvalidRequest,
            PagingError::CursorNotFound(_) => Code::CursorNotFound,
        }
    }

    fn param(&self) -> Option<String> {
        Some(PagingError::param(self).to_owned())
    }
}

pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::invalid(param, message)
}

pub fn object<'a>(value: &'a Value, param: &str) -> Result<&'a Map<String, Value>, ApiError> {
    value
        .as_object()
        .ok_or_else(|| invalid(param, format!("`{param}` must be an object")))
}

/// Refuses any key outside `allowed`, naming it.
pub fn only_keys(map: &Map<String, Value>, allowed: &[&str], prefix: &str) -> Result<(), ApiError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => {
            let param = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            Err(invalid(
                param.clone(),
                format!("unknown or unsupported parameter `{param}`"),
            ))
        }
        None => Ok(()),
    }
}

pub fn opt_str<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    param: &str,
) -> Result<Option<&'a str>, ApiError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(param, format!("`{param}` must be a string"))),
    }
}

/// Metadata: string scalars (numbers and booleans are kept as their text); 16 keys of up
/// to 64 characters, values up to 512.
pub fn metadata(value: Option<&Value>, param: &str) -> Result<Map<String, Value>, ApiError> {
    let Some(value) = value else {
        return Ok(Map::new());
    };
    let map = object(value, param)?;
    if map.len() > 16 {
        return Err(invalid(param, format!("`{param}` takes at most 16 keys")));
    }
    let mut out = Map::new();
    for (key, v) in map {
        let field = format!("{param}.{key}");
        if key.is_empty() || key.chars().count() > 64 {
            return Err(invalid(field, "metadata keys are 1 to 64 characters"));
        }
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(invalid(
                    field.clone(),
                    format!("`{field}` must be a string scalar, not an object, array or null"),
                ));
            }
        };
        if text.chars().count() > 512 {
            return Err(invalid(field, "metadata values are at most 512 characters"));
        }
        out.insert(key.clone(), Value::String(text));
    }
    Ok(out)
}

/// The text of an input: a string, a message (`{role, content}`), or a list of messages.
pub fn input_text(value: &Value, param: &str) -> Result<String, ApiError> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Array(messages) => {
            let mut parts = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                parts.push(message_text(m, &format!("{param}[{i}]"))?);
            }
            parts.join("\n\n")
        }
        Value::Object(_) => message_text(value, param)?,
        _ => {
            return Err(invalid(
                param,
                format!("`{param}` must be a string or a message"),
            ));
        }
    };
    if text.trim().is_empty() {
        return Err(invalid(param, format!("`{param}` has no text")));
    }
    Ok(text)
}

fn message_text(value: &Value, param: &str) -> Result<String, ApiError> {
    let map = object(value, param)?;
    only_keys(map, &["role", "content", "type", "text"], param)?;
    if let Some(role) = map.get("role")
        && !matches!(role.as_str(), Some("user" | "system" | "developer"))
    {
        return Err(invalid(
            format!("{param}.role"),
            "only user, system and developer messages are accepted as input",
        ));
    }
    if let Some(kind) = map.get("type")
        && kind != "message"
    {
        return Err(invalid(
            format!("{param}.type"),
            "an input message has `type: message`",
        ));
    }
    match (map.get("content"), map.get("text")) {
        (Some(content), _) => content_text(content, &format!("{param}.content")),
        (None, Some(Value::String(text))) => Ok(text.clone()),
        _ => Err(invalid(
            format!("{param}.content"),
            "a message needs `content`",
        )),
    }
}

/// `content` as a string or a list of `input_text` parts; images and files are refused.
pub fn content_text(value: &Value, param: &str) -> Result<String, ApiError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                let p = format!("{param}[{i}]");
                let map = object(part, &p)?;
                match map.get("type").and_then(Value::as_str) {
                    Some("input_text" | "text") => match map.get("text") {
                        Some(Value::String(t)) => texts.push(t.clone()),
                        _ => {
                            return Err(invalid(
                                format!("{p}.text"),
                                "an input_text part needs `text`",
                            ));
                        }
                    },
                    Some(kind @ ("input_image" | "input_file")) => {
                        return Err(invalid(
                            format!("{p}.type"),
                            format!("`{kind}` input is not supported by local runtimes; send text"),
                        ));
                    }
                    _ => {
                        return Err(invalid(
                            format!("{p}.type"),
                            "content parts must be `input_text`",
                        ));
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err(invalid(
            param,
            format!("`{param}` must be a string or a list of parts"),
        )),
    }
}

/// One event of POST .../events.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionInput {
    Message(String),
    Cancel,
}

/// The typed 404 of a resource that does not exist for the caller (another owner's looks the same).
pub fn not_found(what: &str, param: &str, id: &str) -> ApiError {
    ApiError::new(Code::ResourceNotFound, format!("no {what} with id `{id}`")).with_param(param)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_refusals_name_their_param() {
        let e = metadata(Some(&json!({"a": {"b": 1}})), "metadata").unwrap_err();
        assert_eq!(e.param.as_deref(), Some("metadata.a"));
        assert_eq!(
            metadata(Some(&json!({"n": 3})), "metadata").unwrap()["n"],
            "3"
        );
    }
}
