//! What goes wrong between this engine and its remote, as rows of the engine table: the
//! remote's own errors pass through with their code, message and suggestion; its 401 is
//! the provider refusing the `api_key` (`E1002`); an unreachable remote is `E9001`, a
//! silent one `E9002`; an answer that is not the protocol is `E9001`. Messages name the
//! remote's URL, never its key (the key travels only in a sensitive header).

use crate::error::engine::{Code, EngineError};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Duration;

/// The remote's error body, `{error: {type, code, message, suggestion, docs_url}}`.
#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorFields,
}

#[derive(Deserialize)]
struct ErrorFields {
    code: String,
    message: String,
    #[serde(default)]
    suggestion: Option<String>,
}

/// Builds the errors of one remote (it knows the URL they name).
#[derive(Debug, Clone)]
pub struct Failure {
    shown: Arc<str>,
}

impl Failure {
    pub fn new(shown: String) -> Failure {
        Failure {
            shown: shown.into(),
        }
    }

    /// A request that did not complete: not reached, cut, or timed out on the way.
    pub fn transport(&self, e: &reqwest::Error) -> EngineError {
        let cause = causes(e);
        if e.is_timeout() {
            EngineError::new(
                Code::ProviderTimeout,
                format!(
                    "the remote engine at {} did not answer in time: {cause}",
                    self.shown
                ),
            )
        } else if e.is_connect() {
            EngineError::new(
                Code::ProviderFailed,
                format!("cannot reach the remote engine at {}: {cause}", self.shown),
            )
        } else {
            EngineError::new(
                Code::ProviderFailed,
                format!(
                    "the exchange with the remote engine at {} failed: {cause}",
                    self.shown
                ),
            )
        }
    }

    /// No connection to the remote (an exchange made without reqwest).
    pub fn unreachable(&self, e: impl std::fmt::Display) -> EngineError {
        EngineError::new(
            Code::ProviderFailed,
            format!("cannot reach the remote engine at {}: {e}", self.shown),
        )
    }

    /// An exchange made without reqwest broke on the way.
    pub fn cut(&self, e: impl std::fmt::Display) -> EngineError {
        EngineError::new(
            Code::ProviderFailed,
            format!(
                "the exchange with the remote engine at {} failed: {e}",
                self.shown
            ),
        )
    }

    /// The whole answer did not come within `limit`.
    pub fn no_answer(&self, limit: Duration) -> EngineError {
        EngineError::new(
            Code::ProviderTimeout,
            format!(
                "the remote engine at {} did not answer within {:.1} s",
                self.shown,
                limit.as_secs_f64()
            ),
        )
    }

    /// An open stream, body or upload stood still for `idle`.
    pub fn silent(&self, idle: Duration) -> EngineError {
        EngineError::new(
            Code::ProviderTimeout,
            format!(
                "the remote engine at {} sent nothing for {:.1} s",
                self.shown,
                idle.as_secs_f64()
            ),
        )
    }

    /// An answer the protocol does not have.
    pub fn garbled(&self, what: impl std::fmt::Display) -> EngineError {
        EngineError::new(
            Code::ProviderFailed,
            format!(
                "the remote engine at {} does not speak svc-engine/1: {what}",
                self.shown
            ),
        )
    }

    /// A connection or cut error of a terminal's WebSocket.
    pub fn socket(&self, e: impl std::fmt::Display) -> EngineError {
        EngineError::new(
            Code::ProviderFailed,
            format!(
                "the terminal of the remote engine at {} failed: {e}",
                self.shown
            ),
        )
    }

    /// A success answer of `route` read as `T`.
    pub fn parse<T: DeserializeOwned>(
        &self,
        route: &[&str],
        bytes: &[u8],
    ) -> Result<T, EngineError> {
        serde_json::from_slice(bytes).map_err(|e| {
            self.garbled(format_args!(
                "its answer to /{} is not the expected JSON ({e})",
                route.join("/")
            ))
        })
    }

    /// An error answer (`status` and its body) as the engine's error.
    pub fn answer(&self, status: u16, body: &[u8]) -> EngineError {
        match serde_json::from_slice::<ErrorBody>(body) {
            Ok(ErrorBody { error }) => self.passed(error, Some(status)),
            Err(_) if status == 401 => self.refused_key(None),
            // The body is not quoted: a server that is not an engine may echo the request,
            // and the request carries the key.
            Err(_) => self.garbled(format_args!(
                "it answered HTTP {status} without an engine error body"
            )),
        }
    }

    /// The data of the remote's `error` event.
    pub fn event(&self, data: &str) -> EngineError {
        match serde_json::from_str::<ErrorBody>(data) {
            Ok(ErrorBody { error }) => self.passed(error, None),
            Err(_) => self.garbled("an `error` event without an engine error body"),
        }
    }

    fn passed(&self, error: ErrorFields, status: Option<u16>) -> EngineError {
        match Code::parse(&error.code) {
            // The remote's door refused its token: to the caller, the provider refused the
            // connection's `api_key`.
            Some(Code::Unauthorized) => self.refused_key(Some(&error.message)),
            None if status == Some(401) => self.refused_key(Some(&error.message)),
            // The remote's door refused this engine's request (not loopback, or an Origin):
            // the connection points at an engine that cannot be reached this way.
            Some(Code::Forbidden) => EngineError::new(
                Code::Configuration,
                format!(
                    "the remote engine at {} refuses requests from here: {} (an engine serves its own machine's loopback: set `api_url` to a loopback address or a tunnel to one)",
                    self.shown, error.message
                ),
            ),
            Some(code) => EngineError {
                code,
                message: error.message,
                suggestion: error.suggestion,
            },
            None => self.garbled(format_args!("unknown error code `{}`", error.code)),
        }
    }

    fn refused_key(&self, why: Option<&str>) -> EngineError {
        let why = why.map(|w| format!(" ({w})")).unwrap_or_default();
        EngineError {
            code: Code::ProviderAuth,
            message: format!(
                "the remote engine at {} refused the api_key{why}",
                self.shown
            ),
            suggestion: Some(
                "set the connection's `api_key` to the remote engine's token (the `token` of its descriptor `engine.json`; it changes when that engine restarts)".to_owned(),
            ),
        }
    }
}

/// An error and its causes, `: `-joined, without the URL reqwest puts first.
fn causes(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.contains(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    if parts.is_empty() {
        parts.push(
            if e.is_body() {
                "the body failed"
            } else {
                "the request failed"
            }
            .to_owned(),
        );
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure() -> Failure {
        Failure::new("http://127.0.0.1:9".into())
    }

    #[test]
    fn the_remotes_errors_pass_through_and_its_401_is_the_key() {
        let body = Code::PathNotAllowed.body("`/etc` leaves the sandbox", Some("stay inside"));
        let e = failure().answer(400, body.to_string().as_bytes());
        assert_eq!(e.code, Code::PathNotAllowed);
        assert_eq!(e.message, "`/etc` leaves the sandbox");
        assert_eq!(e.suggestion.as_deref(), Some("stay inside"));

        let door = Code::Unauthorized.body("wrong token", None);
        let e = failure().answer(401, door.to_string().as_bytes());
        assert_eq!(e.code, Code::ProviderAuth);
        assert!(e.message.contains("refused the api_key"), "{}", e.message);
        assert_eq!(failure().answer(401, b"nope").code, Code::ProviderAuth);

        let e = failure().event(&Code::SandboxNotFound.body("gone", None).to_string());
        assert_eq!(e.code, Code::SandboxNotFound);
    }

    #[test]
    fn what_is_not_the_protocol_is_e9001_and_quotes_nothing() {
        for (status, body) in [
            (502, &b"<html>Authorization: Bearer k3y</html>"[..]),
            (400, br#"{"error": {"code": "E7777", "message": "m"}}"#),
            (500, b""),
        ] {
            let e = failure().answer(status, body);
            assert_eq!(e.code, Code::ProviderFailed, "{status}");
            assert!(!e.message.contains("k3y"));
        }
        let e = failure()
            .parse::<u32>(&["sandboxes"], b"\"x\"")
            .unwrap_err();
        assert_eq!(e.code, Code::ProviderFailed);
        assert!(e.message.contains("/sandboxes"), "{}", e.message);
    }
}
