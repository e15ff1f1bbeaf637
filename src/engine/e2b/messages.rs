//! The envd messages the front reads, from the `.proto` descriptors embedded in the SDKs
//! (`process/process.proto`, `filesystem/filesystem.proto`) as proto3 JSON spells them:
//! camelCase names, every field optional (absent is its default), bytes as base64,
//! unknown fields ignored (a newer SDK may send more). Answers are built as JSON values
//! where they are made.

use super::errors::RpcError;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProcessConfig {
    pub cmd: String,
    pub args: Vec<String>,
    pub envs: BTreeMap<String, String>,
    pub cwd: Option<String>,
}

#[derive(Debug, Default, Deserialize, Clone, Copy)]
#[serde(default)]
pub struct Size {
    pub cols: u32,
    pub rows: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Pty {
    pub size: Option<Size>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct StartRequest {
    pub process: Option<ProcessConfig>,
    pub pty: Option<Pty>,
    pub tag: Option<String>,
    pub stdin: Option<bool>,
}

/// `oneof selector { uint32 pid; string tag; }`
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Selector {
    pub pid: Option<u32>,
    pub tag: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Selected {
    pub process: Option<Selector>,
}

/// `oneof input { bytes stdin; bytes pty; }`
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ProcessInput {
    pub stdin: Option<String>,
    pub pty: Option<String>,
}

impl ProcessInput {
    /// The bytes, and whether they go to a PTY.
    pub fn bytes(&self) -> Result<(Vec<u8>, bool), RpcError> {
        let (text, pty) = match (&self.stdin, &self.pty) {
            (Some(text), _) => (text, false),
            (None, Some(text)) => (text, true),
            (None, None) => return Err(RpcError::invalid("`input` needs `stdin` or `pty`")),
        };
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(|bytes| (bytes, pty))
            .map_err(|e| RpcError::invalid(format!("`input` is not base64: {e}")))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SendInputRequest {
    pub process: Option<Selector>,
    pub input: Option<ProcessInput>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SendSignalRequest {
    pub process: Option<Selector>,
    /// An enum: its name (`SIGNAL_SIGKILL`) or its number.
    pub signal: Value,
}

impl SendSignalRequest {
    pub fn signal(&self) -> Result<i32, RpcError> {
        match &self.signal {
            Value::String(name) if name == "SIGNAL_SIGTERM" => Ok(15),
            Value::String(name) if name == "SIGNAL_SIGKILL" => Ok(9),
            Value::Number(n) if n.as_i64() == Some(15) => Ok(15),
            Value::Number(n) if n.as_i64() == Some(9) => Ok(9),
            other => Err(RpcError::invalid(format!(
                "`signal` must be SIGNAL_SIGTERM or SIGNAL_SIGKILL, not {other}"
            ))),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct UpdateRequest {
    pub process: Option<Selector>,
    pub pty: Option<Pty>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct StreamInputRequest {
    pub start: Option<Selected>,
    pub data: Option<StreamInputData>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct StreamInputData {
    pub input: Option<ProcessInput>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PathRequest {
    pub path: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MoveRequest {
    pub source: String,
    pub destination: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ListDirRequest {
    pub path: String,
    pub depth: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WatchRequest {
    pub path: String,
    pub recursive: bool,
    pub include_entry: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WatcherRequest {
    pub watcher_id: String,
}
