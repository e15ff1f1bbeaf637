//! Bytes on the wire, for every route (the server's groups, the engine's) that answers with what a program or a server sent
//! (shells, processes, code runs, fetches): text when they are UTF-8; otherwise the text
//! field carries the lossy reading and a `_b64` field the exact bytes, so nothing is lost.

use base64::Engine as _;
use serde_json::{Map, Value};

/// The text of `bytes` (a lossy reading when they are not UTF-8) and, only then, their
/// exact base64: the two fields of one output on the wire.
pub fn text_and_b64(bytes: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), None),
        Err(_) => (
            String::from_utf8_lossy(bytes).into_owned(),
            Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
    }
}

/// Puts `bytes` under `field` (text), and under `field_b64` too when they are not UTF-8.
pub fn put_bytes(map: &mut Map<String, Value>, field: &str, bytes: &[u8]) {
    let (text, b64) = text_and_b64(bytes);
    map.insert(field.into(), Value::from(text));
    if let Some(b64) = b64 {
        map.insert(format!("{field}_b64"), Value::from(b64));
    }
}
