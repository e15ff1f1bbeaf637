//! The client's errors. An engine error body (spec 7.2) is rebuilt into [`ApiError`] with the
//! same `type` (the exception class name), `code`, `message`, `suggestion` and `docs_url`,
//! whether it came as an answer or as an SSE `error` event; what never reached an engine
//! (transport, start, local files) is a variant of its own, so a caller can tell "the engine
//! said no" from "no engine answered".

use crate::error::engine::Code;
use serde::Deserialize;
use std::fmt;

/// An engine error, as the engine rendered it (or as the client refused a request before
/// sending it, rendered from the same table row so callers see one shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status (for an SSE `error` event: the status its code maps to).
    pub status: u16,
    /// The client exception class name (`SandboxNotFoundError`).
    pub type_: String,
    /// The machine code (`E2009`).
    pub code: String,
    pub message: String,
    pub suggestion: String,
    pub docs_url: String,
}

#[derive(Debug)]
pub enum ClientError {
    /// The engine answered with an error body, or a stream carried an `error` event, or the
    /// client refused the request before sending it (a signal other than 15 or 9).
    /// Boxed: the error path should not make every `Result` of the client large.
    Api(Box<ApiError>),
    /// No answer: the connection failed, broke, or the answer was not what the protocol
    /// says.
    Transport(String),
    /// No engine could be started, or none runs when the caller asked not to start one.
    NoEngine(String),
    /// A local file or stream failed (cp's source or target, the terminal).
    Io {
        context: String,
        source: std::io::Error,
    },
}

pub type ClientResult<T> = Result<T, ClientError>;

impl ApiError {
    /// The error of a table row, for refusals the client makes itself.
    pub fn from_code(code: Code, message: impl Into<String>) -> ApiError {
        ApiError {
            status: code.status().as_u16(),
            type_: code.class().to_owned(),
            code: code.as_str().to_owned(),
            message: message.into(),
            suggestion: code.suggestion().to_owned(),
            docs_url: code.docs_url(),
        }
    }

    /// Rebuilds the error from an answer's status and body. A body that is not the engine's
    /// shape (a proxy, a truncated answer) still gives a typed error: the row its status maps
    /// to (spec 7.2), with the body's text as the message.
    pub fn from_body(status: u16, body: &[u8]) -> ApiError {
        match serde_json::from_slice::<Envelope>(body) {
            Ok(envelope) => envelope.error.into_api(status),
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                let text = text.trim();
                let message = if text.is_empty() {
                    format!("the engine answered {status} without a body")
                } else {
                    format!("the engine answered {status}: {}", truncate(text, 500))
                };
                let mut error = ApiError::from_code(Code::for_status(status), message);
                error.status = status;
                error
            }
        }
    }

    /// The error of an SSE `error` event: `{error: {...}}` (or the inner object alone).
    pub fn from_event(data: &str) -> ApiError {
        if let Ok(envelope) = serde_json::from_str::<Envelope>(data) {
            let status = status_of(&envelope.error.code);
            return envelope.error.into_api(status);
        }
        if let Ok(body) = serde_json::from_str::<Body>(data) {
            let status = status_of(&body.code);
            return body.into_api(status);
        }
        ApiError::from_code(
            Code::Internal,
            format!("the stream ended with an error: {}", truncate(data, 500)),
        )
    }

    /// The table row of this error, when it is one the client knows.
    pub fn kind(&self) -> Option<Code> {
        Code::parse(&self.code)
    }
}

/// The status an SSE error's code would have had as an answer.
fn status_of(code: &str) -> u16 {
    Code::parse(code).map_or(500, |c| c.status().as_u16())
}

fn truncate(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[derive(Deserialize)]
struct Envelope {
    error: Body,
}

/// Every field defaults so a partial body still rebuilds (missing parts come from the row).
#[derive(Deserialize)]
struct Body {
    #[serde(default, rename = "type")]
    type_: Option<String>,
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    suggestion: Option<String>,
    #[serde(default)]
    docs_url: Option<String>,
}

impl Body {
    fn into_api(self, status: u16) -> ApiError {
        let row = Code::parse(&self.code).unwrap_or_else(|| Code::for_status(status));
        ApiError {
            status,
            type_: self.type_.unwrap_or_else(|| row.class().to_owned()),
            code: if self.code.is_empty() {
                row.as_str().to_owned()
            } else {
                self.code
            },
            message: self.message.unwrap_or_default(),
            suggestion: self
                .suggestion
                .unwrap_or_else(|| row.suggestion().to_owned()),
            docs_url: self.docs_url.unwrap_or_else(|| row.docs_url()),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if !self.suggestion.is_empty() {
            write!(f, " ({})", self.suggestion)?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Api(e) => e.fmt(f),
            ClientError::Transport(message) => write!(f, "engine connection failed: {message}"),
            ClientError::NoEngine(message) => f.write_str(message),
            ClientError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Io { source, .. } => Some(source),
            ClientError::Api(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<ApiError> for ClientError {
    fn from(e: ApiError) -> ClientError {
        ClientError::Api(Box::new(e))
    }
}

impl ClientError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> ClientError {
        ClientError::Io {
            context: context.into(),
            source,
        }
    }

    /// The engine's error, when it is one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            ClientError::Api(e) => Some(e.as_ref()),
            _ => None,
        }
    }

    /// A transport error of reqwest, said plainly (its `Display` alone hides the cause).
    pub(crate) fn transport(e: &reqwest::Error) -> ClientError {
        let mut message = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        ClientError::Transport(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_body_is_rebuilt_field_for_field() {
        let body = Code::SandboxNotFound.body("no sandbox `sb_1`", None);
        let bytes = serde_json::to_vec(&body).unwrap();
        let e = ApiError::from_body(404, &bytes);
        assert_eq!(e.status, 404);
        assert_eq!(e.type_, "SandboxNotFoundError");
        assert_eq!(e.code, "E2009");
        assert_eq!(e.message, "no sandbox `sb_1`");
        assert_eq!(e.suggestion, "list the sandboxes, or create one");
        assert_eq!(e.docs_url, "docs/errors.md#e2009");
        assert_eq!(e.kind(), Some(Code::SandboxNotFound));
        assert_eq!(
            e.to_string(),
            "E2009: no sandbox `sb_1` (list the sandboxes, or create one)"
        );
    }

    #[test]
    fn an_unknown_code_keeps_what_the_engine_said() {
        let body = br#"{"error":{"type":"QuotaError","code":"E7777","message":"too many","suggestion":"wait","docs_url":"x#e7777"}}"#;
        let e = ApiError::from_body(400, body);
        assert_eq!(e.type_, "QuotaError");
        assert_eq!(e.code, "E7777");
        assert_eq!(e.kind(), None);
        assert_eq!(e.suggestion, "wait");
    }

    #[test]
    fn a_foreign_body_maps_by_status() {
        let e = ApiError::from_body(404, b"Not Found");
        assert_eq!(e.code, "E2000");
        assert_eq!(e.type_, "NotFoundError");
        assert!(e.message.contains("Not Found"));
        let e = ApiError::from_body(502, b"");
        assert_eq!(e.status, 502);
        assert_eq!(e.code, "E9000");
        let e = ApiError::from_body(401, b"{\"error\":\"nope\"}");
        assert_eq!(e.code, "E1001");
    }

    #[test]
    fn a_partial_body_is_completed_from_its_row() {
        let e = ApiError::from_body(501, br#"{"error":{"code":"E8004","message":"no pause"}}"#);
        assert_eq!(e.type_, "FeatureNotSupportedError");
        assert_eq!(e.docs_url, "docs/errors.md#e8004");
        assert!(!e.suggestion.is_empty());
    }

    #[test]
    fn a_stream_error_event_carries_its_codes_status() {
        let data = serde_json::to_string(&Code::ProcessExited.body("gone", None)).unwrap();
        let e = ApiError::from_event(&data);
        assert_eq!(e.status, 400);
        assert_eq!(e.type_, "ProcessExitedError");
        let inner = r#"{"type":"SandboxNotFoundError","code":"E2009","message":"m"}"#;
        assert_eq!(ApiError::from_event(inner).status, 404);
        let e = ApiError::from_event("not json");
        assert_eq!(e.code, "E9000");
    }

    #[test]
    fn long_bodies_are_cut_on_a_character() {
        let body = "é".repeat(2000);
        let e = ApiError::from_body(500, body.as_bytes());
        assert!(e.message.chars().count() < 600);
    }
}
