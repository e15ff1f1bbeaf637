//! The error table: every error the server can answer with is one row here (meilisearch's
//! `error.rs` is the model). Bodies are rendered from the row, never ad hoc, in the two
//! shapes the spec asks for: the flat server body outside `/v1`, the nested OpenAI-style
//! object under `/v1`.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// Which roadmap item makes the server produce a code. The coverage gate demands a
/// conformance case for every `Live` code and lists the rest as pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "by")]
pub enum Availability {
    Live,
    Pending(&'static str),
}

macro_rules! error_table {
    ($( $variant:ident => $code:literal, $status:literal, $class:literal, $retry:literal, $denial:literal, $avail:expr; )*) => {
        /// A machine code of the error table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            fn row(self) -> Row {
                match self {
                    $(Code::$variant => Row {
                        code: $code,
                        status: $status,
                        class: $class,
                        retry: $retry,
                        denial: $denial,
                        availability: $avail,
                    },)*
                }
            }
        }
    };
}

struct Row {
    code: &'static str,
    status: u16,
    /// Exception name of the flat server body (`type`).
    class: &'static str,
    /// Whether a retry of the same request may succeed; refusals say `x-should-retry: false`.
    retry: bool,
    /// A pipeline step or guard refused the call (what `audit: deny` records).
    denial: bool,
    availability: Availability,
}

use Availability::{Live, Pending};
const FILES: Availability = Pending("file_ops issue");
const PROCESS: Availability = Pending("process issue");
const SYSTEM: Availability = Pending("system issue");
const DEV_TOOLS: Availability = Pending("dev_tools issue");

error_table! {
    // Server pipeline (second document, 7.1).
    NotFound               => "not_found",               404, "NotFoundError",            false, false, Live;
    Unauthorized           => "unauthorized",            401, "AuthenticationError",      false, true,  Live;
    AmbiguousCredentials   => "ambiguous_credentials",   400, "AmbiguousCredentialsError", false, true, Live;
    EndpointDisabled       => "endpoint_disabled",       404, "EndpointDisabledError",    false, true,  Live;
    MissingScope           => "missing_scope",           403, "PermissionDeniedError",    false, true,  Live;
    ScopeRequired          => "scope_required",          403, "PermissionDeniedError",    false, true,  PROCESS;
    PathNotAllowed         => "path_not_allowed",        403, "PathNotAllowedError",      false, true,  Live;
    PathDenied             => "path_denied",             403, "PathDeniedError",          false, true,  Live;
    ReadOnly               => "read_only",               403, "ReadOnlyError",            false, true,  Live;
    SymlinkDenied          => "symlink_denied",          403, "SymlinkDeniedError",       false, true,  Live;
    InvalidPath            => "invalid_path",            400, "InvalidPathError",         false, false, Live;
    CommandNotAllowed      => "command_not_allowed",     403, "CommandNotAllowedError",   false, true,  PROCESS;
    CommandInvalid         => "command_invalid",         400, "CommandInvalidError",      false, false, PROCESS;
    ProcessInvalid         => "process_invalid",         400, "ProcessInvalidError",      false, false, PROCESS;
    ProcessDenied          => "process_denied",          403, "ProcessDeniedError",       false, true,  PROCESS;
    EnvVarDenied           => "env_var_denied",          403, "EnvVarDeniedError",        false, true,  SYSTEM;
    EnvVarNotAllowed       => "env_var_not_allowed",     403, "EnvVarNotAllowedError",    false, true,  SYSTEM;
    EnvInvalid             => "env_invalid",             400, "EnvInvalidError",          false, false, SYSTEM;
    UrlInvalid             => "url_invalid",             400, "UrlInvalidError",          false, false, DEV_TOOLS;
    UrlDenied              => "url_denied",              403, "UrlDeniedError",           false, true,  DEV_TOOLS;
    LanguageNotAllowed     => "language_not_allowed",    403, "LanguageNotAllowedError",  false, true,  DEV_TOOLS;
    ExtensionNotAllowed    => "extension_not_allowed",   403, "ExtensionNotAllowedError", false, true,  FILES;
    FileExists             => "file_exists",             409, "FileExistsError",          false, false, FILES;
    PayloadTooLarge        => "payload_too_large",       413, "PayloadTooLargeError",     false, true,  Live;
    RateLimited            => "rate_limited",            429, "RateLimitError",           true,  true,  Live;
    ConcurrencyLimited     => "concurrency_limited",     429, "ConcurrencyLimitError",    true,  true,  Live;
    DuplicateParameter     => "duplicate_parameter",     400, "DuplicateParameterError",  false, true,  Live;
    // Ours: the HTTP layer's size limits, answered typed before routing.
    UriTooLong             => "uri_too_long",            414, "UriTooLongError",          false, true,  Live;
    HeadersTooLarge        => "headers_too_large",       431, "HeadersTooLargeError",     false, true,  Live;
    // Ours: bad bodies and queries, named commands, roadmap placeholders, the safety net.
    InvalidRequest         => "invalid_request",         400, "BadRequestError",          false, false, Live;
    CommandNotFound        => "command_not_found",       404, "NotFoundError",            false, false, Live;
    CommandUnavailable     => "command_unavailable",     503, "CommandUnavailableError",  false, false, Live;
    NotImplemented         => "not_implemented",         501, "NotImplementedError",      false, false, Live;
    Internal               => "internal_error",          500, "InternalServerError",      true,  false, Live;
    // Agents group (first document, 7).
    ToolResultUnsupported  => "agents.tool_result_unsupported", 400, "BadRequestError", false, false, Live;
    AgentsFileExists       => "agents.file_exists",      400, "BadRequestError",          false, false, Live;
    PathRefused            => "agents.path_refused",     400, "BadRequestError",          false, true,  Live;
    CredentialUnavailable  => "agents.credential_unavailable", 400, "BadRequestError",    false, false, Live;
    CredentialExpired      => "agents.credential_expired", 400, "BadRequestError",        false, false, Live;
    PreviousResponseNotLatest => "agents.previous_response_not_latest", 400, "BadRequestError", false, false, Live;
    CompactUnsupported     => "agents.compact_unsupported", 400, "BadRequestError",       false, false, Live;
    NotCancellable         => "agents.not_cancellable",  400, "BadRequestError",          false, false, Live;
    WebsocketUpgradeRequired => "agents.websocket_upgrade_required", 400, "BadRequestError", false, false, Live;
    NotImplementedLocally  => "agents.not_implemented_locally", 404, "NotFoundError",     false, false, Live;
    RuntimeNotInstalled    => "agents.runtime_not_installed", 400, "BadRequestError",     false, false, Live;
    CursorNotFound         => "agents.cursor_not_found", 404, "NotFoundError",            false, false, Live;
    ResourceNotFound       => "resource_not_found",      404, "NotFoundError",            false, false, Live;
    ModelNotFound          => "model_not_found",         404, "NotFoundError",            false, false, Live;
    IdempotencyMismatch    => "idempotency.mismatch",    409, "ConflictError",            false, false, Live;
}

impl Code {
    pub fn as_str(self) -> &'static str {
        self.row().code
    }

    pub fn status(self) -> StatusCode {
        StatusCode::from_u16(self.row().status).expect("table statuses are valid")
    }

    pub fn class(self) -> &'static str {
        self.row().class
    }

    pub fn retryable(self) -> bool {
        self.row().retry
    }

    pub fn is_denial(self) -> bool {
        self.row().denial
    }

    pub fn availability(self) -> Availability {
        self.row().availability
    }

    pub fn parse(code: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == code)
    }

    /// The `type` of the nested `/v1` error object.
    fn v1_type(self) -> &'static str {
        match self.row().status {
            404 => "not_found_error",
            500..=599 => "server_error",
            _ => "invalid_request_error",
        }
    }
}

/// An error answer. Built from a [`Code`] plus the details the row needs.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// The offending field (nested `/v1` body), also shown on the flat body when set.
    pub param: Option<String>,
    pub endpoint: Option<&'static str>,
    pub rule: Option<String>,
    pub retry_after_secs: Option<u64>,
    /// Extra members merged into the body (e.g. `x_svc.runtimes`).
    pub extra: Option<Box<Map<String, Value>>>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            param: None,
            endpoint: None,
            rule: None,
            retry_after_secs: None,
            extra: None,
        }
    }

    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::new(Code::InvalidRequest, message).with_param(param)
    }

    pub fn not_found(path: &str) -> Self {
        ApiError::new(Code::NotFound, format!("Not found: {path}"))
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    pub fn with_endpoint(mut self, endpoint: &'static str) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    pub fn with_rule(mut self, rule: impl Into<String>) -> Self {
        self.rule = Some(rule.into());
        self
    }

    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs.max(1));
        self
    }

    pub fn with_extra(mut self, key: &str, value: Value) -> Self {
        self.extra
            .get_or_insert_with(Default::default)
            .insert(key.to_owned(), value);
        self
    }

    /// The flat server body of spec 2.2 (outside `/v1`).
    pub fn flat_body(&self) -> Value {
        let mut body = json!({
            "error": self.message,
            "type": self.code.class(),
            "code": self.code.as_str(),
        });
        let obj = body.as_object_mut().expect("object literal");
        if let Some(endpoint) = self.endpoint {
            obj.insert("endpoint".into(), endpoint.into());
        }
        if let Some(rule) = &self.rule {
            obj.insert("rule".into(), rule.clone().into());
        }
        if let Some(param) = &self.param {
            obj.insert("param".into(), param.clone().into());
        }
        self.merge_extra(obj);
        body
    }

    /// The nested OpenAI-style body of the agents document (under `/v1`).
    pub fn v1_body(&self) -> Value {
        let mut error = json!({
            "message": self.message,
            "type": self.code.v1_type(),
            "param": self.param,
            "code": self.code.as_str(),
        });
        let obj = error.as_object_mut().expect("object literal");
        if let Some(endpoint) = self.endpoint {
            obj.insert("endpoint".into(), endpoint.into());
        }
        if let Some(rule) = &self.rule {
            obj.insert("rule".into(), rule.clone().into());
        }
        let mut body = json!({ "error": error });
        self.merge_extra(body.as_object_mut().expect("object literal"));
        body
    }

    fn merge_extra(&self, obj: &mut Map<String, Value>) {
        if let Some(extra) = &self.extra {
            for (k, v) in extra.iter() {
                obj.insert(k.clone(), v.clone());
            }
        }
    }

    /// Renders the final response for a request path: the shape depends on `/v1`.
    pub fn render(&self, path: &str) -> Response {
        let v1 = is_v1_path(path);
        let body = if v1 { self.v1_body() } else { self.flat_body() };
        let mut response = (self.code.status(), axum::Json(body)).into_response();
        let headers = response.headers_mut();
        if let Some(secs) = self.retry_after_secs {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if v1 && !self.code.retryable() {
            headers.insert("x-should-retry", HeaderValue::from_static("false"));
        }
        response.extensions_mut().insert(ErrorMeta::from(self));
        response
    }
}

pub fn is_v1_path(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

/// What the audit log needs to know of an error answer.
#[derive(Debug, Clone)]
pub struct ErrorMeta {
    pub code: Code,
    pub rule: Option<String>,
}

impl From<&ApiError> for ErrorMeta {
    fn from(e: &ApiError) -> Self {
        ErrorMeta {
            code: e.code,
            rule: e.rule.clone(),
        }
    }
}

/// Handlers return `ApiError`; the body is rendered later by the outer layer, which is the
/// only place that knows the request path and therefore the body shape.
#[derive(Debug, Clone)]
pub struct PendingError(pub ApiError);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = self.code.status().into_response();
        response.extensions_mut().insert(PendingError(self));
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let names: HashSet<_> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), Code::ALL.len());
        for code in Code::ALL {
            assert_eq!(Code::parse(code.as_str()), Some(*code));
        }
    }

    #[test]
    fn v1_body_is_nested_and_404_is_not_found_error() {
        let e = ApiError::new(Code::ResourceNotFound, "no such session").with_param("id");
        let body = e.v1_body();
        assert_eq!(body["error"]["type"], "not_found_error");
        assert_eq!(body["error"]["param"], "id");
        assert_eq!(body["error"]["code"], "resource_not_found");
        let flat = ApiError::new(Code::Unauthorized, "token missing").flat_body();
        assert_eq!(flat["error"], "token missing");
        assert_eq!(flat["type"], "AuthenticationError");
    }

    #[test]
    fn refusals_under_v1_say_do_not_retry() {
        let r = ApiError::new(Code::NotImplementedLocally, "x").render("/v1/models/m");
        assert_eq!(r.headers()["x-should-retry"], "false");
        let r = ApiError::new(Code::RateLimited, "x")
            .with_retry_after(3)
            .render("/v1/models");
        assert!(r.headers().get("x-should-retry").is_none());
        assert_eq!(r.headers()["retry-after"], "3");
    }
}
