//! Bytes a program printed, as every answer and event of the engine carries them: the text
//! (a lossy reading when they are not UTF-8) and, only then, the exact bytes in base64 under
//! the same name with `_b64` (the rule of `services::output_json`, shared with the server's
//! groups).

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The text and, when the bytes are not UTF-8, their base64: the two fields of one output.
pub use crate::services::output_json::text_and_b64 as encode;

/// The exact bytes of an output: its `_b64` twin when there is one, else the text.
pub fn decode(text: String, b64: Option<String>) -> Result<Vec<u8>, base64::DecodeError> {
    match b64 {
        Some(encoded) => base64::engine::general_purpose::STANDARD.decode(encoded),
        None => Ok(text.into_bytes()),
    }
}

/// What a program printed, as a command's and a code run's result carry it (flattened
/// into theirs: `stdout`, `stdout_b64`, `stderr`, `stderr_b64`, in that order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Printed {
    pub stdout: String,
    /// Present when stdout is not UTF-8: its exact bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_b64: Option<String>,
    pub stderr: String,
    /// Present when stderr is not UTF-8: its exact bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_b64: Option<String>,
}

impl Printed {
    pub fn new(stdout: &[u8], stderr: &[u8]) -> Self {
        let (stdout, stdout_b64) = encode(stdout);
        let (stderr, stderr_b64) = encode(stderr);
        Printed {
            stdout,
            stdout_b64,
            stderr,
            stderr_b64,
        }
    }

    /// The exact bytes of stdout and stderr.
    pub fn exact(self) -> Result<(Vec<u8>, Vec<u8>), base64::DecodeError> {
        Ok((
            decode(self.stdout, self.stdout_b64)?,
            decode(self.stderr, self.stderr_b64)?,
        ))
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
