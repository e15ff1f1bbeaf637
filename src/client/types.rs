//! The client's reading of the engine's answers (spelled in [`crate::wire`]): command and
//! code results with their output decoded to exact bytes, and the typed events of the
//! streamed routes, an event this client does not know skipped so a newer engine stays
//! readable.

use super::error::{ApiError, ClientError, ClientResult};
use crate::wire::{self, END_EVENT, ERROR_EVENT};
use serde_json::Value;

pub use crate::wire::EntryInfo;

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

impl CommandResult {
    /// The answer of `commands/run`, its output decoded to exact bytes.
    pub(crate) fn from_wire(answer: wire::CommandResult) -> ClientResult<CommandResult> {
        let (pid, exit_code, timed_out) = (answer.pid, answer.exit_code, answer.timed_out);
        let (stdout, stderr) = answer.printed.exact().map_err(garbled)?;
        Ok(CommandResult {
            pid,
            stdout,
            stderr,
            exit_code,
            timed_out,
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

impl CodeResult {
    /// The answer of `code/run`, its output decoded to exact bytes.
    pub(crate) fn from_wire(answer: wire::CodeResult) -> ClientResult<CodeResult> {
        let (exit_code, timed_out, duration_ms) =
            (answer.exit_code, answer.timed_out, answer.duration_ms);
        let (stdout, stderr) = answer.printed.exact().map_err(garbled)?;
        Ok(CodeResult {
            stdout,
            stderr,
            exit_code,
            timed_out,
            duration_ms,
        })
    }
}

fn garbled(e: base64::DecodeError) -> ClientError {
    ClientError::Transport(format!("bad base64 from the engine: {e}"))
}

/// A process of a sandbox (`GET .../processes`).
pub type ProcessRecord = wire::ProcessInfo;

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

impl CommandEvent {
    /// Reads one SSE event of a command stream.
    pub(crate) fn parse(event: &str, data: &str) -> ClientResult<Step<CommandEvent>> {
        let bad = |e: serde_json::Error| {
            ClientError::Transport(format!("a `{event}` event the client cannot read: {e}"))
        };
        if event == END_EVENT {
            return Ok(Step::End);
        }
        if event == ERROR_EVENT {
            return Err(ApiError::from_event(data).into());
        }
        Ok(match wire::CommandEvent::parse(event, data).map_err(bad)? {
            None => Step::Skip,
            Some(wire::CommandEvent::Start(started)) => {
                Step::Event(CommandEvent::Start { pid: started.pid })
            }
            Some(wire::CommandEvent::Stdout(chunk)) => {
                Step::Event(CommandEvent::Stdout(chunk.exact().map_err(garbled)?))
            }
            Some(wire::CommandEvent::Stderr(chunk)) => {
                Step::Event(CommandEvent::Stderr(chunk.exact().map_err(garbled)?))
            }
            Some(wire::CommandEvent::Exit(exited)) => {
                let exit_code = exited.exit_code.ok_or_else(|| {
                    ClientError::Transport(format!(
                        "a `{event}` event the client cannot read: no `exit_code`"
                    ))
                })?;
                Step::Event(CommandEvent::Exit {
                    exit_code,
                    timed_out: exited.timed_out,
                })
            }
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
        let raw: wire::CommandResult = serde_json::from_value(json!({
            "pid": 4, "stdout": "\u{fffd}", "stdout_b64": "/w==", "stderr": "e",
            "exit_code": 7, "timed_out": false
        }))
        .unwrap();
        let r = CommandResult::from_wire(raw).unwrap();
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
