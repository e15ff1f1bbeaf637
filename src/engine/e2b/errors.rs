//! The front's two error contracts, each built from one table: the control plane answers
//! `{code: int, message}` with that HTTP status (what the E2B SDKs' API client reads), envd
//! answers Connect errors `{code: "not_found", message}`, on a unary call with the status
//! the Connect protocol gives the code, on a stream inside its end frame. An engine error
//! reaches either through its row, so a code means the same thing on both.

use crate::error::engine::{Code, EngineError};
use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

/// A Connect error code, with the HTTP status of a unary answer that carries it
/// (connectrpc.com/docs/protocol, "Error Codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectCode {
    InvalidArgument,
    Unauthenticated,
    PermissionDenied,
    NotFound,
    AlreadyExists,
    FailedPrecondition,
    ResourceExhausted,
    Unimplemented,
    Unavailable,
    Internal,
}

/// code name, unary HTTP status.
const CONNECT: &[(ConnectCode, &str, u16)] = &[
    (ConnectCode::InvalidArgument, "invalid_argument", 400),
    (ConnectCode::Unauthenticated, "unauthenticated", 401),
    (ConnectCode::PermissionDenied, "permission_denied", 403),
    (ConnectCode::NotFound, "not_found", 404),
    (ConnectCode::AlreadyExists, "already_exists", 409),
    (ConnectCode::FailedPrecondition, "failed_precondition", 400),
    (ConnectCode::ResourceExhausted, "resource_exhausted", 429),
    (ConnectCode::Unimplemented, "unimplemented", 501),
    (ConnectCode::Unavailable, "unavailable", 503),
    (ConnectCode::Internal, "internal", 500),
];

/// Each engine error code: the control plane's status, the status of envd's HTTP routes
/// (`/files`, `/health`), the Connect code. A sandbox gone or not running is E2B's proxy's
/// 502 on envd (what the SDKs read as "the sandbox was killed or timed out"), and a sandbox
/// the engine does not know is `unavailable` on a Connect call, as under E2B.
const ENGINE: &[(Code, u16, u16, ConnectCode)] = &[
    (Code::Unauthorized, 401, 401, ConnectCode::Unauthenticated),
    (Code::ProviderAuth, 401, 401, ConnectCode::Unauthenticated),
    (Code::Forbidden, 403, 403, ConnectCode::PermissionDenied),
    (Code::NotFound, 404, 404, ConnectCode::NotFound),
    (Code::FileNotFound, 404, 404, ConnectCode::NotFound),
    (Code::ProcessNotFound, 404, 404, ConnectCode::NotFound),
    (Code::ContextNotFound, 404, 404, ConnectCode::NotFound),
    (Code::SandboxNotFound, 404, 502, ConnectCode::Unavailable),
    (Code::TemplateNotFound, 404, 404, ConnectCode::NotFound),
    (
        Code::InvalidArgument,
        400,
        400,
        ConnectCode::InvalidArgument,
    ),
    (Code::Configuration, 400, 400, ConnectCode::InvalidArgument),
    (
        Code::SandboxNotRunning,
        409,
        502,
        ConnectCode::FailedPrecondition,
    ),
    (Code::FileExists, 409, 409, ConnectCode::AlreadyExists),
    (
        Code::PathNotAllowed,
        400,
        400,
        ConnectCode::PermissionDenied,
    ),
    (Code::WrongFileType, 400, 400, ConnectCode::InvalidArgument),
    (
        Code::ProcessExited,
        400,
        400,
        ConnectCode::FailedPrecondition,
    ),
    (
        Code::FeatureNotSupported,
        501,
        501,
        ConnectCode::Unimplemented,
    ),
    (
        Code::IsolationUnavailable,
        501,
        501,
        ConnectCode::Unimplemented,
    ),
    (Code::ProviderFailed, 500, 500, ConnectCode::Internal),
    (Code::ProviderTimeout, 500, 500, ConnectCode::Internal),
    (Code::Busy, 503, 503, ConnectCode::Unavailable),
    (Code::Internal, 500, 500, ConnectCode::Internal),
];

/// The row of an engine code: control-plane status, envd HTTP status, Connect code.
fn engine_row(code: Code) -> (u16, u16, ConnectCode) {
    ENGINE
        .iter()
        .find(|(c, _, _, _)| *c == code)
        .map(|(_, api, envd, connect)| (*api, *envd, *connect))
        .unwrap_or((500, 500, ConnectCode::Internal))
}

/// The words of an engine error about sandbox `id`: a sandbox the engine does not know
/// in `gone`'s words (the SDKs read them), any other error as the engine said it.
fn worded(id: &str, e: EngineError, gone: fn(&str) -> String) -> String {
    if e.code == Code::SandboxNotFound {
        gone(id)
    } else {
        e.message
    }
}

impl ConnectCode {
    fn row(self) -> (&'static str, u16) {
        CONNECT
            .iter()
            .find(|(c, _, _)| *c == self)
            .map(|(_, name, status)| (*name, *status))
            .unwrap_or(("internal", 500))
    }

    pub fn name(self) -> &'static str {
        self.row().0
    }

    pub fn status(self) -> StatusCode {
        StatusCode::from_u16(self.row().1).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

/// A control-plane error: `{code, message}` with `code` the HTTP status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// An engine error about sandbox `id` on the control plane (a sandbox it does not
    /// know in the API's words).
    pub fn control(id: &str, e: EngineError) -> ApiError {
        ApiError::new(engine_row(e.code).0, worded(id, e, sandbox_unknown))
    }

    /// An engine error about sandbox `id` on envd's HTTP routes (`/files`, `/health`).
    pub fn envd(id: &str, e: EngineError) -> ApiError {
        ApiError::new(engine_row(e.code).1, worded(id, e, sandbox_gone))
    }

    /// What a local engine cannot do (template builds, volumes, snapshots...).
    pub fn not_available(what: &str) -> ApiError {
        ApiError::new(501, format!("{what} is not available in a local engine"))
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        ApiError::new(engine_row(e.code).0, e.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (
            status,
            Json(json!({"code": self.status, "message": self.message})),
        )
            .into_response()
    }
}

/// An envd error, for a unary answer or a stream's end frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: ConnectCode,
    pub message: String,
}

impl RpcError {
    pub fn new(code: ConnectCode, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// An engine error about sandbox `id` on a Connect call. There is no
    /// `From<EngineError>`: an envd call's engine error is always about its sandbox, and
    /// one that vanished mid-call must be answered in the SDKs' words, not the engine's.
    pub fn envd(id: &str, e: EngineError) -> RpcError {
        RpcError::new(engine_row(e.code).2, worded(id, e, sandbox_gone))
    }

    pub fn invalid(message: impl Into<String>) -> RpcError {
        RpcError::new(ConnectCode::InvalidArgument, message)
    }

    /// The body `{code, message}`.
    pub fn body(&self) -> serde_json::Value {
        json!({"code": self.code.name(), "message": self.message})
    }
}

impl IntoResponse for RpcError {
    fn into_response(self) -> Response {
        (self.code.status(), Json(self.body())).into_response()
    }
}

/// What envd's HTTP routes (`/files`, `/health`) answer: `{code: int, message}`.
pub fn envd_http(status: u16, message: impl Into<String>) -> Response {
    ApiError::new(status, message).into_response()
}

/// The message the SDKs read as "the sandbox is gone" (`SandboxNotRunningException`):
/// E2B's proxy answers 502 with it once a sandbox was killed or timed out.
pub fn sandbox_gone(id: &str) -> String {
    format!("The sandbox {id} was not found")
}

/// What E2B's control plane answers for a sandbox it does not know (404).
fn sandbox_unknown(id: &str) -> String {
    format!("sandbox \"{id}\" doesn't exist or you don't have access to it")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_code_has_one_row_and_every_connect_code_a_name() {
        for code in Code::ALL {
            let rows = ENGINE.iter().filter(|(c, _, _, _)| c == code).count();
            assert_eq!(rows, 1, "{code:?} has {rows} rows");
        }
        for (code, name, _) in CONNECT {
            assert_eq!(code.name(), *name);
        }
        let gone = RpcError::envd("s1", EngineError::new(Code::ProcessNotFound, "no"));
        assert_eq!(gone.code.status(), StatusCode::NOT_FOUND);
        assert_eq!(gone.body()["code"], "not_found");
        let api: ApiError = EngineError::new(Code::SandboxNotRunning, "paused").into();
        assert_eq!(api.status, 409);
    }

    #[test]
    fn a_sandbox_unknown_or_stopped_is_answered_in_each_contract_s_words() {
        let unknown = || EngineError::new(Code::SandboxNotFound, "no sandbox");
        let control = ApiError::control("s1", unknown());
        assert_eq!(control.status, 404);
        assert!(control.message.contains("\"s1\" doesn't exist"));
        let envd = ApiError::envd("s1", unknown());
        assert_eq!(
            (envd.status, envd.message.as_str()),
            (502, "The sandbox s1 was not found")
        );
        let rpc = RpcError::envd("s1", unknown());
        assert_eq!(rpc.code, ConnectCode::Unavailable);
        assert_eq!(rpc.message, "The sandbox s1 was not found");
        let paused = || EngineError::new(Code::SandboxNotRunning, "paused");
        assert_eq!(ApiError::envd("s1", paused()).status, 502);
        assert_eq!(ApiError::control("s1", paused()).status, 409);
        let missing = RpcError::envd("s1", EngineError::new(Code::FileNotFound, "no file"));
        assert_eq!(
            (missing.code, missing.message.as_str()),
            (ConnectCode::NotFound, "no file")
        );
    }
}
