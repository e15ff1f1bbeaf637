//! Bytes a program printed, as every answer and event of the engine carries them: the text
//! (a lossy reading when they are not UTF-8) and, only then, the exact bytes in base64 under
//! the same name with `_b64` (the rule of `services::output_json`, shared with the server's
//! groups).

use base64::Engine as _;

/// The text and, when the bytes are not UTF-8, their base64: the two fields of one output.
pub use crate::services::output_json::text_and_b64 as encode;

/// The exact bytes of an output: its `_b64` twin when there is one, else the text.
pub fn decode(text: String, b64: Option<String>) -> Result<Vec<u8>, base64::DecodeError> {
    match b64 {
        Some(encoded) => base64::engine::general_purpose::STANDARD.decode(encoded),
        None => Ok(text.into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_alone_when_utf8_and_exact_bytes_otherwise() {
        assert_eq!(encode("hé".as_bytes()), ("hé".to_owned(), None));
        let (text, b64) = encode(&[b'a', 0xff]);
        assert_eq!(text, "a\u{fffd}");
        assert_eq!(decode(text, b64).unwrap(), vec![b'a', 0xff]);
        assert!(decode(String::new(), Some("!!".into())).is_err());
    }
}
