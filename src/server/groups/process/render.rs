//! How records and output look on the wire. Output is text when its bytes are UTF-8; when
//! they are not, the text field carries the lossy reading and a `_b64` field the exact
//! bytes, so nothing a program writes is lost.

use crate::services::supervisor::{ProcessRecord, Status};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::time::SystemTime;

/// RFC 3339 UTC, seconds.
pub fn timestamp(at: SystemTime) -> String {
    crate::services::files::rfc3339(at)
}

/// `{pid, tag, cmd, args, cwd, status, exit_code, signal, started_at, ended_at}`.
pub fn record_json(record: &ProcessRecord) -> Map<String, Value> {
    let value = json!({
        "pid": record.pid,
        "tag": record.tag,
        "cmd": record.cmd,
        "args": record.args,
        "cwd": record.cwd.as_ref().map(|p| p.to_string_lossy()),
        "status": match record.status {
            Status::Running => "running",
            Status::Exited => "exited",
        },
        "exit_code": record.exit_code,
        "signal": record.signal,
        "started_at": timestamp(record.started_at),
        "ended_at": record.ended_at.map(timestamp),
    });
    match value {
        Value::Object(map) => map,
        _ => unreachable!("a json! object"),
    }
}

pub use crate::services::output_json::put_bytes as put_output;

/// A stream event's data: `{data}` for UTF-8 text, `{data_b64}` otherwise.
pub fn chunk_data(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({ "data": text }),
        Err(_) => json!({ "data_b64": base64::engine::general_purpose::STANDARD.encode(bytes) }),
    }
}

/// Text cut between two reads is held back until it is whole (shared with the engine).
pub use crate::services::utf8_carry::Utf8Carry;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_that_is_not_utf8_keeps_its_bytes() {
        let mut map = Map::new();
        put_output(&mut map, "stdout", b"ok\xff");
        assert_eq!(map["stdout_b64"], "b2v/");
        assert_eq!(chunk_data(b"\xff"), json!({"data_b64": "/w=="}));
        assert_eq!(chunk_data(b"hi"), json!({"data": "hi"}));
    }
}
