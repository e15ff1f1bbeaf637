//! Plugin protocol version 1 from the plugin's side (`docs/plugin-protocol.md`), shared by
//! the example plugin `svc-plugin-dir` ([`dir`]) and the deliberately faulty
//! `svc-plugin-broken` ([`broken`]). Nothing here comes from the engine's crate: the doc is
//! all a plugin needs. One JSON object per line: read lines from stdin, write lines to
//! stdout (whole lines, flushed), log to stderr.

pub mod broken;
pub mod dir;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

/// The protocol version these plugins speak.
pub const PROTOCOL: u32 = 1;
/// The most bytes one `chunk` carries.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// The engine's hello.
#[derive(Debug, Clone, Deserialize)]
pub struct EngineHello {
    pub protocol: u32,
    #[serde(default)]
    pub engine: String,
    /// The engine's idle limit: say something about a call at least this often.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// What the engine sends after the hello.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromEngine {
    Request(Request),
    Chunk {
        id: u64,
        #[serde(default)]
        data: Option<String>,
        #[serde(default)]
        last: bool,
    },
    Cancel {
        id: u64,
    },
}

#[derive(Debug, Clone, Deserialize)]
pub struct Request {
    pub id: u64,
    /// A route id of the engine (`sandboxes_create`, `files_read`, ...).
    pub op: String,
    /// Who is asking: sandboxes of one account are not another's.
    #[serde(default)]
    pub account: String,
    #[serde(default)]
    pub sandbox_id: Option<String>,
    #[serde(default)]
    pub params: Value,
}

/// An error answer: `code` is a row of the engine's error table.
#[derive(Debug, Clone)]
pub struct Fault {
    pub code: &'static str,
    pub message: String,
    pub suggestion: Option<String>,
}

impl Fault {
    pub fn new(code: &'static str, message: impl Into<String>) -> Fault {
        Fault {
            code,
            message: message.into(),
            suggestion: None,
        }
    }

    pub fn suggest(mut self, suggestion: &str) -> Fault {
        self.suggestion = Some(suggestion.into());
        self
    }

    pub fn to_json(&self) -> Value {
        json!({ "code": self.code, "message": self.message, "suggestion": self.suggestion })
    }
}

pub type Answer = Result<Value, Fault>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The plugin's stdout, shared by every thread: one whole line at a time.
#[derive(Clone)]
pub struct Out(Arc<Mutex<std::io::Stdout>>);

impl Default for Out {
    fn default() -> Self {
        Out(Arc::new(Mutex::new(std::io::stdout())))
    }
}

impl Out {
    pub fn send(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let mut out = lock(&self.0);
        // The engine gone means stdin closes too: the main loop ends the plugin.
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }

    pub fn respond(&self, id: u64, answer: Answer) {
        self.send(&match answer {
            Ok(result) => json!({ "type": "response", "id": id, "result": result }),
            Err(fault) => json!({ "type": "response", "id": id, "error": fault.to_json() }),
        });
    }

    pub fn event(&self, id: u64, name: &str, data: Value) {
        self.send(&json!({ "type": "event", "id": id, "name": name, "data": data }));
    }

    pub fn alive(&self, id: u64) {
        self.send(&json!({ "type": "alive", "id": id }));
    }

    pub fn chunk(&self, id: u64, bytes: &[u8]) {
        self.send(&json!({ "type": "chunk", "id": id, "data": b64(bytes) }));
    }

    pub fn last_chunk(&self, id: u64) {
        self.send(&json!({ "type": "chunk", "id": id, "last": true }));
    }
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn unb64(text: &str) -> Result<Vec<u8>, Fault> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| Fault::new("E4001", format!("not base64: {e}")))
}

/// Reads the engine's hello from the first line; `None` when it is not one.
pub fn read_hello(line: &str) -> Option<EngineHello> {
    serde_json::from_str::<Value>(line)
        .ok()
        .filter(|v| v["type"] == "hello")
        .and_then(|v| serde_json::from_value(v).ok())
}

/// The plugin's hello.
pub fn hello(id: &str, name: &str, version: &str, features: &[&str]) -> Value {
    json!({
        "type": "hello",
        "protocol": PROTOCOL,
        "id": id,
        "name": name,
        "version": version,
        "features": features,
    })
}
