//! JSON script steps to [`Step`]s, with error messages that name the step.

use super::{Step, Subagent, Tokens, UsageSetting};
use serde_json::{Map, Value};

const KINDS: &str = "text, reasoning, command, file_change, mcp_call, tool, todo, subagent, \
                     usage, fail, crash_after_ms, stderr, malformed, hang, large_output_bytes, delay_ms";

/// Parses a JSON array of steps.
pub fn parse_steps(value: &Value) -> Result<Vec<Step>, String> {
    let list = value
        .as_array()
        .ok_or_else(|| "a step list must be a JSON array".to_string())?;
    list.iter()
        .enumerate()
        .map(|(i, v)| parse_step(v).map_err(|e| format!("step {}: {e}", i + 1)))
        .collect()
}

fn parse_step(v: &Value) -> Result<Step, String> {
    let o = v
        .as_object()
        .ok_or_else(|| format!("expected an object, got {v}"))?;
    if let Some(t) = o.get("text") {
        return Ok(Step::Text {
            text: Some(string(t, "text")?),
            deltas: usize::try_from(uint(o, "deltas", 1)?)
                .unwrap_or(usize::MAX)
                .max(1),
            delay_ms: uint(o, "delay_ms", 0)?,
        });
    }
    if let Some(t) = o.get("reasoning") {
        return Ok(Step::Reasoning {
            text: string(t, "reasoning")?,
            delay_ms: uint(o, "delay_ms", 0)?,
        });
    }
    if let Some(c) = o.get("command") {
        return Ok(Step::Command {
            command: string(c, "command")?,
            output: opt_string(o, "output")?.unwrap_or_default(),
            exit_code: int(o, "exit_code", 0)?,
            delay_ms: uint(o, "delay_ms", 0)?,
        });
    }
    if let Some(f) = o.get("file_change") {
        return file_change(f);
    }
    if let Some(m) = o.get("mcp_call") {
        let m = object(m, "mcp_call")?;
        return Ok(Step::McpCall {
            server: opt_string(m, "server")?,
            tool: opt_string(m, "tool")?.ok_or("mcp_call needs a \"tool\"")?,
            arguments: m
                .get("arguments")
                .cloned()
                .unwrap_or(Value::Object(Map::new())),
        });
    }
    if let Some(t) = o.get("tool") {
        let t = object(t, "tool")?;
        return Ok(Step::Tool {
            name: opt_string(t, "name")?.ok_or("tool needs a \"name\"")?,
            input: t.get("input").cloned().unwrap_or(Value::Object(Map::new())),
            output: opt_string(t, "output")?.unwrap_or_else(|| "ok".to_string()),
            is_error: t.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        });
    }
    if let Some(t) = o.get("todo") {
        return todo(t);
    }
    if let Some(s) = o.get("subagent") {
        return subagent(s);
    }
    if let Some(u) = o.get("usage") {
        return usage(u);
    }
    if let Some(m) = o.get("fail") {
        return Ok(Step::Fail {
            message: string(m, "fail")?,
        });
    }
    if o.contains_key("crash_after_ms") {
        return Ok(Step::Crash {
            after_ms: uint(o, "crash_after_ms", 0)?,
            exit_code: int(o, "exit_code", 101)?,
        });
    }
    if let Some(s) = o.get("stderr") {
        return Ok(Step::Stderr(string(s, "stderr")?));
    }
    if let Some(s) = o.get("malformed") {
        return Ok(Step::Malformed(string(s, "malformed")?));
    }
    if let Some(h) = o.get("hang") {
        return match h.as_bool() {
            Some(true) => Ok(Step::Hang),
            _ => Err("\"hang\" must be true".to_string()),
        };
    }
    if o.contains_key("large_output_bytes") {
        let as_command = match opt_string(o, "as")?.as_deref() {
            None | Some("text") => false,
            Some("command") => true,
            Some(other) => return Err(format!("\"as\" must be text or command, got {other:?}")),
        };
        return Ok(Step::Large {
            bytes: usize::try_from(uint(o, "large_output_bytes", 0)?).unwrap_or(usize::MAX),
            as_command,
        });
    }
    if o.contains_key("delay_ms") {
        return Ok(Step::Sleep {
            ms: uint(o, "delay_ms", 0)?,
        });
    }
    Err(format!("unknown step kind; expected one of: {KINDS}"))
}

fn file_change(f: &Value) -> Result<Step, String> {
    let f = object(f, "file_change")?;
    let path = opt_string(f, "path")?.ok_or("file_change needs a \"path\"")?;
    let delete = f.get("delete").and_then(Value::as_bool).unwrap_or(false);
    let content = if delete {
        None
    } else {
        Some(opt_string(f, "content")?.unwrap_or_default())
    };
    Ok(Step::FileChange { path, content })
}

fn todo(t: &Value) -> Result<Step, String> {
    let list = t.as_array().ok_or("\"todo\" must be an array")?;
    let items = list
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok((s.clone(), false)),
            Value::Object(o) => Ok((
                opt_string(o, "text")?.ok_or("todo item needs \"text\"")?,
                o.get("completed").and_then(Value::as_bool).unwrap_or(false),
            )),
            other => Err(format!("todo item must be a string or object, got {other}")),
        })
        .collect::<Result<_, String>>()?;
    Ok(Step::Todo { items })
}

fn subagent(s: &Value) -> Result<Step, String> {
    let s = object(s, "subagent")?;
    let steps = match s.get("steps") {
        Some(v) => parse_steps(v).map_err(|e| format!("subagent {e}"))?,
        None => Vec::new(),
    };
    Ok(Step::Subagent(Subagent {
        description: opt_string(s, "description")?.unwrap_or_else(|| "sub task".to_string()),
        prompt: opt_string(s, "prompt")?.unwrap_or_else(|| "do the sub task".to_string()),
        subagent_type: opt_string(s, "subagent_type")?
            .unwrap_or_else(|| "general-purpose".to_string()),
        steps,
        result: opt_string(s, "result")?.unwrap_or_else(|| "sub task done".to_string()),
    }))
}

fn usage(u: &Value) -> Result<Step, String> {
    match u {
        Value::Bool(false) => Ok(Step::Usage(UsageSetting::Omit)),
        Value::Object(o) => Ok(Step::Usage(UsageSetting::Fixed(Tokens {
            input: uint(o, "input_tokens", 0)?,
            output: uint(o, "output_tokens", 0)?,
            cached_input: uint(o, "cached_input_tokens", 0)?,
            cache_creation: uint(o, "cache_creation_input_tokens", 0)?,
            reasoning_output: uint(o, "reasoning_output_tokens", 0)?,
        }))),
        other => Err(format!("\"usage\" must be false or an object, got {other}")),
    }
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("\"{what}\" must be an object"))
}

fn string(v: &Value, what: &str) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("\"{what}\" must be a string, got {v}"))
}

fn opt_string(o: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    o.get(key).map(|v| string(v, key)).transpose()
}

fn uint(o: &Map<String, Value>, key: &str, default: u64) -> Result<u64, String> {
    match o.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("\"{key}\" must be a non-negative integer, got {v}")),
    }
}

fn int(o: &Map<String, Value>, key: &str, default: i32) -> Result<i32, String> {
    match o.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| format!("\"{key}\" must be an integer, got {v}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_kind() {
        let steps = parse_steps(&json!([
            {"text": "hi", "deltas": 3, "delay_ms": 20},
            {"reasoning": "hmm"},
            {"command": "echo hi", "output": "hi\n", "exit_code": 0},
            {"file_change": {"path": "a.txt", "content": "x"}},
            {"mcp_call": {"server": "s", "tool": "t", "arguments": {"a": 1}}},
            {"tool": {"name": "Read", "input": {}}},
            {"todo": ["a", {"text": "b", "completed": true}]},
            {"subagent": {"description": "d"}},
            {"usage": false},
            {"fail": "boom"},
            {"crash_after_ms": 5},
            {"stderr": "noise"},
            {"malformed": "xx"},
            {"hang": true},
            {"large_output_bytes": 10},
            {"delay_ms": 1}
        ]))
        .unwrap();
        assert_eq!(steps.len(), 16);
        assert!(
            parse_steps(&json!([{"nope": 1}]))
                .unwrap_err()
                .contains("step 1")
        );
        assert!(parse_steps(&json!([{"text": 5}])).is_err());
    }
}
