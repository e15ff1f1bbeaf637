//! Plugin protocol version 1 as the engine speaks it (`docs/plugin-protocol.md`): one JSON
//! object per line on the child's stdin and stdout. What the engine writes is built here;
//! what the plugin writes is parsed here, and a line that is not a message is told apart
//! from a message the engine did not expect, so the caller can blame the right call.

use crate::error::engine::{Code, EngineError};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

/// The version this engine speaks.
pub const PROTOCOL: u32 = 1;
/// The most bytes one `chunk` message carries (before base64), either way.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// A line longer than this is not a message: the plugin is broken (a `commands/run` answer
/// carries at most 8 MiB of each stream, which base64 makes 11 MiB).
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// What the reader task hands a call: a message of the plugin about it, or why none
/// will come.
#[derive(Debug)]
pub enum Delivery {
    Message(FromPlugin),
    Failed(EngineError),
}

/// The plugin's hello: who it is and what it declares.
#[derive(Debug, Clone, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub id: String,
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub features: Vec<String>,
}

/// An error the plugin answers: `code` should be a row of the engine's table.
#[derive(Debug, Clone, Deserialize)]
pub struct PluginError {
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub suggestion: Option<String>,
}

/// A message of the plugin about one call.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromPlugin {
    Response {
        id: u64,
        #[serde(default)]
        result: Value,
        #[serde(default)]
        error: Option<PluginError>,
    },
    Event {
        id: u64,
        name: String,
        #[serde(default)]
        data: Value,
    },
    Chunk {
        id: u64,
        #[serde(default)]
        data: Option<String>,
        #[serde(default)]
        last: bool,
        #[serde(default)]
        error: Option<PluginError>,
    },
    /// "Still working on it" (and, for a stream, "it is open"): resets the idle limit.
    Alive { id: u64 },
}

/// What a line of the plugin's stdout is.
#[derive(Debug)]
pub enum Line {
    Message(FromPlugin),
    /// JSON naming call `id`, but not a message the protocol has.
    Malformed {
        id: u64,
        why: String,
    },
    /// Not JSON, or JSON naming no call: nothing can be blamed but the plugin.
    Garbage(String),
}

/// Parses one line (without its newline).
pub fn parse(line: &[u8]) -> Line {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => return Line::Garbage(format!("a line that is not JSON ({e}): {}", shown(line))),
    };
    let id = value.get("id").and_then(Value::as_u64);
    match (serde_json::from_value::<FromPlugin>(value), id) {
        (Ok(message), _) => Line::Message(message),
        (Err(e), Some(id)) => Line::Malformed {
            id,
            why: format!("a message that is not protocol 1 ({e}): {}", shown(line)),
        },
        (Err(e), None) => Line::Garbage(format!("a message naming no call ({e}): {}", shown(line))),
    }
}

/// The start of a line, for a message (a garbage line may be long and binary).
pub fn shown(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    if line.len() > 200 {
        format!("{text}…")
    } else {
        text
    }
}

/// The engine's hello; `timeout_ms` tells the plugin how often to say `alive`.
pub fn hello(timeout_ms: u64) -> Value {
    json!({
        "type": "hello",
        "protocol": PROTOCOL,
        "engine": env!("CARGO_PKG_VERSION"),
        "timeout_ms": timeout_ms,
    })
}

pub fn cancel(id: u64) -> Value {
    json!({ "type": "cancel", "id": id })
}

pub fn chunk(id: u64, bytes: &[u8]) -> Value {
    json!({
        "type": "chunk",
        "id": id,
        "data": base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

pub fn last_chunk(id: u64) -> Value {
    json!({ "type": "chunk", "id": id, "last": true })
}

/// A plugin's error as a row of the engine table: a code of the table keeps its row (and
/// so its status); any other code is the plugin's failure, E9001, naming it.
pub fn engine_error(plugin: &str, error: PluginError) -> EngineError {
    match Code::parse(&error.code) {
        Some(code) => EngineError {
            code,
            message: error.message,
            suggestion: error.suggestion.filter(|s| !s.is_empty()),
        },
        None => EngineError::new(
            Code::ProviderFailed,
            format!(
                "plugin `{plugin}` answered an error code the engine does not know, `{}`: {}",
                error.code, error.message
            ),
        ),
    }
}

/// Decodes a base64 field of the plugin.
pub fn bytes(plugin: &str, field: &str, b64: &str) -> Result<Vec<u8>, EngineError> {
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| {
            EngineError::new(
                Code::ProviderFailed,
                format!("plugin `{plugin}` sent `{field}` that is not base64: {e}"),
            )
        })
}
