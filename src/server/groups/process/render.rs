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

/// Holds back the end of a chunk that is the start of a UTF-8 character cut by the read,
/// so text split across reads still arrives as text.
#[derive(Debug, Default)]
pub struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    /// What to send now of `bytes` (after what was held back).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.pending);
        all.extend_from_slice(bytes);
        let keep = incomplete_tail(&all);
        self.pending = all.split_off(all.len() - keep);
        all
    }

    /// What is still held back, at the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 character that is not complete (0
/// when the end is complete, or when those bytes could never be UTF-8 anyway).
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_by_a_read_arrives_whole() {
        let text = "héllo €".as_bytes();
        for cut in 0..=text.len() {
            let mut carry = Utf8Carry::default();
            let mut out = carry.push(&text[..cut]);
            assert!(std::str::from_utf8(&out).is_ok(), "cut at {cut}");
            out.extend(carry.push(&text[cut..]));
            out.extend(carry.finish());
            assert_eq!(out, text);
        }
        let mut carry = Utf8Carry::default();
        assert_eq!(carry.push(b"\xff\xfe"), b"\xff\xfe");
        assert_eq!(carry.push(b"a\xE2\x82"), b"a");
        assert_eq!(carry.finish(), b"\xE2\x82");
    }

    #[test]
    fn output_that_is_not_utf8_keeps_its_bytes() {
        let mut map = Map::new();
        put_output(&mut map, "stdout", b"ok\xff");
        assert_eq!(map["stdout_b64"], "b2v/");
        assert_eq!(chunk_data(b"\xff"), json!({"data_b64": "/w=="}));
        assert_eq!(chunk_data(b"hi"), json!({"data": "hi"}));
    }
}
