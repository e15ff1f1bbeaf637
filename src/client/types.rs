//! The answers the client reads that `engine::wire` does not spell (the engine builds them
//! from provider types the client must not import): command and code results with their
//! output as exact bytes, process records, entry info, and the typed events of the streamed
//! routes. Fields the engine may add later are ignored; fields it may leave out default.

use super::error::{ApiError, ClientError, ClientResult};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Called with the number of bytes that just went by (sent or received).
pub type Progress = std::sync::Arc<dyn Fn(u64) + Send + Sync>;

/// `commands/run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandResult {
    pub pid: u32,
    /// Exact bytes (from `stdout_b64` when the output was not UTF-8).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// 128 + the signal when a signal ended the command.
    pub exit_code: i32,
    pub timed_out: bool,
}

/// The output both results carry: the text, and its exact bytes when it was not UTF-8.
#[derive(Deserialize)]
struct RawOutput {
    #[serde(default)]
    stdout: String,
    #[serde(default)]
    stderr: String,
    #[serde(default)]
    stdout_b64: Option<String>,
    #[serde(default)]
    stderr_b64: Option<String>,
}

impl RawOutput {
    /// The exact bytes of stdout and stderr.
    fn exact(self) -> ClientResult<(Vec<u8>, Vec<u8>)> {
        Ok((
            exact(self.stdout, self.stdout_b64)?,
            exact(self.stderr, self.stderr_b64)?,
        ))
    }
}

#[derive(Deserialize)]
pub(crate) struct RawCommandResult {
    #[serde(default)]
    pid: u32,
    #[serde(flatten)]
    output: RawOutput,
    exit_code: i32,
    #[serde(default)]
    timed_out: bool,
}

impl RawCommandResult {
    pub(crate) fn into_result(self) -> ClientResult<CommandResult> {
        let (stdout, stderr) = self.output.exact()?;
        Ok(CommandResult {
            pid: self.pid,
            stdout,
            stderr,
            exit_code: self.exit_code,
            timed_out: self.timed_out,
        })
    }
}

/// `code/run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeResult {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// `None` when it timed out or a signal ended it.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
}

#[derive(Deserialize)]
pub(crate) struct RawCodeResult {
    #[serde(flatten)]
    output: RawOutput,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    duration_ms: u64,
}

impl RawCodeResult {
    pub(crate) fn into_result(self) -> ClientResult<CodeResult> {
        let (stdout, stderr) = self.output.exact()?;
        Ok(CodeResult {
            stdout,
            stderr,
            exit_code: self.exit_code,
            timed_out: self.timed_out,
            duration_ms: self.duration_ms,
        })
    }
}

/// The exact bytes of an output field: its `_b64` twin when there is one, else the text.
fn exact(text: String, b64: Option<String>) -> ClientResult<Vec<u8>> {
    match b64 {
        Some(encoded) => decode(&encoded),
        None => Ok(text.into_bytes()),
    }
}

fn decode(encoded: &str) -> ClientResult<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| ClientError::Transport(format!("bad base64 from the engine: {e}")))
}

/// A process of a sandbox (`GET .../processes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    pub pid: u32,
    #[serde(default)]
    pub pgid: u32,
    #[serde(default)]
    pub cmd: String,
    /// `running`, `sleeping`, `stopped` (paused), `zombie`.
    #[serde(default)]
    pub state: String,
    /// `command` (started by `commands/*`) or `background` (left by one).
    #[serde(default)]
    pub tag: String,
    #[serde(default)]
    pub stdin_open: bool,
}

/// Entry info, as every file route answers about a file, directory or link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryInfo {
    #[serde(default)]
    pub name: String,
    pub path: String,
    /// `file`, `dir`, `symlink`, `other`.
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub size: u64,
    /// Octal, `"0644"`.
    #[serde(default)]
    pub mode: String,
    /// RFC 3339 UTC.
    #[serde(default)]
    pub modified_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<String>,
}

impl EntryInfo {
    pub fn is_dir(&self) -> bool {
        self.type_ == "dir"
    }
}

/// An event of `commands/stream`. The closing `end` ends the stream instead of being one;
/// an `error` event ends it with the typed error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandEvent {
    Start {
        pid: u32,
    },
    /// Exact bytes (from `data_b64` when the engine sent one).
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Exit {
        exit_code: i32,
        timed_out: bool,
    },
}

/// What an SSE event of a command stream means to the client.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step<T> {
    Event(T),
    /// `end`: the stream is over.
    End,
    /// An event this client does not know: skipped, so a newer engine stays readable.
    Skip,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    data_b64: Option<String>,
}

#[derive(Deserialize)]
struct Exit {
    exit_code: i32,
    #[serde(default)]
    timed_out: bool,
}

#[derive(Deserialize)]
struct Start {
    pid: u32,
}

impl CommandEvent {
    /// Reads one SSE event of a command stream.
    pub(crate) fn parse(event: &str, data: &str) -> ClientResult<Step<CommandEvent>> {
        let bad = |e: serde_json::Error| {
            ClientError::Transport(format!("a `{event}` event the client cannot read: {e}"))
        };
        Ok(match event {
            "start" => {
                let start: Start = serde_json::from_str(data).map_err(bad)?;
                Step::Event(CommandEvent::Start { pid: start.pid })
            }
            "stdout" | "stderr" => {
                let chunk: Chunk = serde_json::from_str(data).map_err(bad)?;
                let bytes = match (chunk.data_b64, chunk.data) {
                    (Some(encoded), _) => decode(&encoded)?,
                    (None, Some(text)) => text.into_bytes(),
                    (None, None) => Vec::new(),
                };
                Step::Event(if event == "stdout" {
                    CommandEvent::Stdout(bytes)
                } else {
                    CommandEvent::Stderr(bytes)
                })
            }
            "exit" => {
                let exit: Exit = serde_json::from_str(data).map_err(bad)?;
                Step::Event(CommandEvent::Exit {
                    exit_code: exit.exit_code,
                    timed_out: exit.timed_out,
                })
            }
            "end" => Step::End,
            "error" => return Err(ApiError::from_event(data).into()),
            _ => Step::Skip,
        })
    }
}

/// An event of `files/watch`: `create`, `modify`, `delete`, `rename` `{path, type, entry?}`,
/// or `overflow` (events were lost: list the directory again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    /// The event's name.
    pub kind: String,
    pub path: Option<String>,
    /// `file`, `dir`, ... when the engine knows.
    pub type_: Option<String>,
    /// Entry info of the path after the change, when the engine sends it.
    pub entry: Option<EntryInfo>,
    /// The whole data, for fields this client does not name.
    pub data: Value,
}

impl WatchEvent {
    pub(crate) fn parse(event: &str, data: &str) -> ClientResult<Step<WatchEvent>> {
        match event {
            "end" => return Ok(Step::End),
            "error" => return Err(ApiError::from_event(data).into()),
            "message" | "ping" | "keepalive" => return Ok(Step::Skip),
            _ => {}
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ClientError::Transport(format!("a `{event}` event the client cannot read: {e}"))
        })?;
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(Step::Event(WatchEvent {
            kind: event.to_owned(),
            path: text("path"),
            type_: text("type"),
            entry: value
                .get("entry")
                .and_then(|e| serde_json::from_value(e.clone()).ok()),
            data: value,
        }))
    }
}

/// The items of a list answer: `{key: [...]}`, or the bare array.
pub(crate) fn items<T: serde::de::DeserializeOwned>(
    value: Value,
    key: &str,
) -> ClientResult<Vec<T>> {
    let list = match value {
        Value::Object(mut map) => map.remove(key).unwrap_or(Value::Null),
        other => other,
    };
    serde_json::from_value(list).map_err(|e| {
        ClientError::Transport(format!(
            "the engine's `{key}` list is not what the protocol says: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn command_output_prefers_the_exact_bytes() {
        let raw: RawCommandResult = serde_json::from_value(json!({
            "pid": 4, "stdout": "\u{fffd}", "stdout_b64": "/w==", "stderr": "e",
            "exit_code": 7, "timed_out": false
        }))
        .unwrap();
        let r = raw.into_result().unwrap();
        assert_eq!(r.stdout, vec![0xff]);
        assert_eq!(r.stderr, b"e");
        assert_eq!(r.exit_code, 7);
    }

    #[test]
    fn stream_events_are_typed() {
        assert_eq!(
            CommandEvent::parse("start", r#"{"pid":9}"#).unwrap(),
            Step::Event(CommandEvent::Start { pid: 9 })
        );
        assert_eq!(
            CommandEvent::parse("stdout", r#"{"data":"hé"}"#).unwrap(),
            Step::Event(CommandEvent::Stdout("hé".as_bytes().to_vec()))
        );
        assert_eq!(
            CommandEvent::parse("stderr", r#"{"data":"?","data_b64":"AP8="}"#).unwrap(),
            Step::Event(CommandEvent::Stderr(vec![0, 0xff]))
        );
        assert_eq!(
            CommandEvent::parse("exit", r#"{"exit_code":124,"timed_out":true}"#).unwrap(),
            Step::Event(CommandEvent::Exit {
                exit_code: 124,
                timed_out: true
            })
        );
        assert_eq!(CommandEvent::parse("end", "{}").unwrap(), Step::End);
        assert_eq!(CommandEvent::parse("later", "{}").unwrap(), Step::Skip);
        let body = crate::error::engine::Code::SandboxNotFound.body("gone", None);
        let err = CommandEvent::parse("error", &body.to_string()).unwrap_err();
        assert_eq!(err.api().unwrap().type_, "SandboxNotFoundError");
        assert!(CommandEvent::parse("exit", "{").is_err());
        assert!(CommandEvent::parse("stdout", r#"{"data_b64":"!!"}"#).is_err());
    }

    #[test]
    fn watch_events_keep_their_data() {
        let step = WatchEvent::parse("create", r#"{"path":"/a","type":"file"}"#).unwrap();
        let Step::Event(e) = step else { panic!() };
        assert_eq!(e.kind, "create");
        assert_eq!(e.path.as_deref(), Some("/a"));
        assert_eq!(e.type_.as_deref(), Some("file"));
        assert!(e.entry.is_none());
    }

    #[test]
    fn lists_come_wrapped_or_bare() {
        let wrapped: Vec<u32> = items(json!({"processes": [1, 2]}), "processes").unwrap();
        let bare: Vec<u32> = items(json!([1, 2]), "processes").unwrap();
        assert_eq!(wrapped, bare);
        assert!(items::<u32>(json!({"other": []}), "processes").is_err());
    }
}
