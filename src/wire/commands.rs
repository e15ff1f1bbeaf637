//! Commands (run to completion, or streamed as events) and the processes of a sandbox: the
//! request bodies, the answers, and the events of `commands/stream`.

use super::output;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Spec 8: the client default of a command's `timeout`.
pub const COMMAND_TIMEOUT_DEFAULT_S: u64 = 60;

/// Spec 4.4: the only signals `processes/:pid/signal` delivers, TERM and KILL.
pub const ALLOWED_SIGNALS: [i32; 2] = [15, 9];

/// `commands/run` and `commands/stream`: `cmd` alone is a shell line (`/bin/sh -c`); `cmd`
/// with `args` is a program and its arguments, no shell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandBody {
    pub cmd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Seconds; default 60; 0 means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 86_400))]
    pub timeout: Option<u64>,
    /// Written to the command's stdin, then closed. Without it stdin stays open for
    /// `processes/:pid/stdin` while the command runs (streamed commands) or is closed (run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
}

/// `POST .../processes/:pid/signal`: 15 or 9 only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalBody {
    #[schemars(extend("enum" = ALLOWED_SIGNALS))]
    pub signal: i32,
}

/// `POST .../processes/:pid/stdin`: `data` (text) or `data_b64` (bytes), and `close` to
/// close stdin after them (the server's `process_stdin` names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StdinBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_b64: Option<String>,
    #[serde(default)]
    pub close: bool,
}

/// `commands/run`: what the command printed (see [`output`]) and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandResult {
    pub pid: u32,
    #[serde(flatten)]
    pub printed: output::Printed,
    /// The exit status; 128 + the signal when a signal ended it (as shells say it).
    pub exit_code: i32,
    pub timed_out: bool,
}

/// A process of a sandbox, as `GET .../processes` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessInfo {
    pub pid: u32,
    /// The process group it belongs to.
    pub pgid: u32,
    /// Its command line, arguments joined by spaces.
    pub cmd: String,
    /// `running`, `sleeping`, `stopped` (paused), `zombie`, as the kernel says.
    pub state: String,
    /// Started by `commands/*` (`command`), or left by one (`background`).
    pub tag: String,
    /// Its stdin can be written with `processes/:pid/stdin`.
    pub stdin_open: bool,
}

/// `GET .../processes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessList {
    pub processes: Vec<ProcessInfo>,
}

/// `POST .../processes/:pid/signal`: the signal was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SignalSent {
    pub pid: u32,
    #[schemars(extend("enum" = ALLOWED_SIGNALS))]
    pub signal: i32,
}

/// `POST .../processes/:pid/stdin`: how many bytes went in, and whether stdin is closed now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StdinWritten {
    pub pid: u32,
    pub written: usize,
    pub closed: bool,
}

/// `DELETE .../processes/:pid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessKilled {
    pub pid: u32,
    #[schemars(extend("const" = true))]
    pub killed: bool,
}

/// The data of a `start` event: the command's pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Started {
    pub pid: u32,
}

/// The data of a `stdout` or `stderr` event: output in order (see [`output`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutputChunk {
    /// The bytes, as UTF-8 (lossy when they are not).
    pub data: String,
    /// The bytes, when they are not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("contentEncoding" = "base64"))]
    pub data_b64: Option<String>,
}

impl OutputChunk {
    pub fn new(bytes: &[u8]) -> Self {
        let (data, data_b64) = output::encode(bytes);
        OutputChunk { data, data_b64 }
    }

    /// The exact bytes.
    pub fn exact(self) -> Result<Vec<u8>, base64::DecodeError> {
        output::decode(self.data, self.data_b64)
    }
}

/// The data of an `exit` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Exited {
    /// `null` when no exit status could be read.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
}

/// An event of `commands/stream`, in the order they come: `start`, output, `exit`. The
/// stream then closes with [`END_EVENT`]; an [`ERROR_EVENT`] (the engine error body) ends
/// it early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandEvent {
    /// The command started.
    Start(Started),
    /// Output, in order.
    Stdout(OutputChunk),
    /// Output, in order.
    Stderr(OutputChunk),
    /// How it ended.
    Exit(Exited),
}

/// The last event of a command stream (data `{}`).
pub const END_EVENT: &str = "end";
/// An event whose data is the engine error body; nothing follows it.
pub const ERROR_EVENT: &str = "error";

impl CommandEvent {
    /// The event names, in the order a stream sends them.
    pub const NAMES: [&'static str; 4] = ["start", "stdout", "stderr", "exit"];

    pub fn name(&self) -> &'static str {
        match self {
            CommandEvent::Start(_) => "start",
            CommandEvent::Stdout(_) => "stdout",
            CommandEvent::Stderr(_) => "stderr",
            CommandEvent::Exit(_) => "exit",
        }
    }

    /// The event's data as it goes on the wire.
    pub fn data(&self) -> Value {
        let value = match self {
            CommandEvent::Start(d) => serde_json::to_value(d),
            CommandEvent::Stdout(d) | CommandEvent::Stderr(d) => serde_json::to_value(d),
            CommandEvent::Exit(d) => serde_json::to_value(d),
        };
        // Plain structs of strings and numbers: serializing them cannot fail.
        value.unwrap_or(Value::Null)
    }

    /// Reads one event; `Ok(None)` for a name this protocol does not give a command stream
    /// (`end`, `error` and names a newer engine may add are the reader's to judge).
    pub fn parse(name: &str, data: &str) -> Result<Option<CommandEvent>, serde_json::Error> {
        Ok(Some(match name {
            "start" => CommandEvent::Start(serde_json::from_str(data)?),
            "stdout" => CommandEvent::Stdout(serde_json::from_str(data)?),
            "stderr" => CommandEvent::Stderr(serde_json::from_str(data)?),
            "exit" => CommandEvent::Exit(serde_json::from_str(data)?),
            _ => return Ok(None),
        }))
    }

    /// Each event with what it means and the schema of its data, for the OpenAPI document.
    pub fn described(
        g: &mut schemars::SchemaGenerator,
    ) -> Vec<(&'static str, &'static str, Value)> {
        let schema = |s: schemars::Schema| serde_json::to_value(s).unwrap_or(Value::Null);
        vec![
            (
                "start",
                "The command started.",
                schema(g.subschema_for::<Started>()),
            ),
            (
                "stdout",
                "Output, in order.",
                schema(g.subschema_for::<OutputChunk>()),
            ),
            (
                "stderr",
                "Output, in order.",
                schema(g.subschema_for::<OutputChunk>()),
            ),
            ("exit", "How it ended.", schema(g.subschema_for::<Exited>())),
            (
                END_EVENT,
                "The last event.",
                serde_json::json!({"type": "object", "maxProperties": 0}),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_keeps_the_field_order_and_adds_b64_only_when_needed() {
        let r = CommandResult {
            pid: 4,
            printed: output::Printed::new(b"o", &[0xff]),
            exit_code: 7,
            timed_out: false,
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"pid":4,"stdout":"o","stderr":"\ufffd","stderr_b64":"/w==","exit_code":7,"timed_out":false}"#
                .replace("\\ufffd", "\u{fffd}")
        );
        assert_eq!(r.printed.exact().unwrap(), (b"o".to_vec(), vec![0xff]));
    }

    #[test]
    fn events_round_trip_by_name() {
        for event in [
            CommandEvent::Start(Started { pid: 9 }),
            CommandEvent::Stdout(OutputChunk::new("hé".as_bytes())),
            CommandEvent::Stderr(OutputChunk::new(&[0, 0xff])),
            CommandEvent::Exit(Exited {
                exit_code: None,
                timed_out: true,
            }),
        ] {
            assert!(CommandEvent::NAMES.contains(&event.name()));
            let back = CommandEvent::parse(event.name(), &event.data().to_string()).unwrap();
            assert_eq!(back, Some(event));
        }
        assert_eq!(CommandEvent::parse(END_EVENT, "{}").unwrap(), None);
        assert!(CommandEvent::parse("exit", "{").is_err());
        assert_eq!(
            CommandEvent::Exit(Exited {
                exit_code: Some(1),
                timed_out: false
            })
            .data(),
            json!({"exit_code": 1, "timed_out": false})
        );
    }
}
