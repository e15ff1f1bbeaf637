//! The server's error table: every error the in-sandbox server can answer with, on a route
//! or inside a stream, is one row here. Bodies are rendered from the row in the [`Shape`]
//! the router was built with: the flat server body of spec 2.2, or the nested OpenAI-style
//! object of the agents group; events of a stream in that stream's form ([`EventForm`]).

use super::{Availability, RowDoc, Shape, doc_text, engine};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use serde_json::{Map, Value, json};

macro_rules! error_table {
    ($( $(#[doc = $doc:literal])* $variant:ident => $code:literal, $status:literal, $class:literal, $retry:literal, $denial:literal, $avail:expr; )*) => {
        /// A machine code of the server's error table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code { $($(#[doc = $doc])* $variant,)* }

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
                        meaning: doc_text!($($doc),*),
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
    meaning: &'static str,
}

use Availability::Live;
/// No endpoint is pending, so no request can be answered 501; the router's unit test
/// `a_pending_row_answers_not_implemented` proves the answer.
const NO_PENDING_ROW: Availability = Availability::Dormant(
    "no row is pending: router::tests::a_pending_row_answers_not_implemented",
);

error_table! {
    // Server pipeline (second document, 7.1).
    /// An unmatched route (the message is `Not found: <path>`), a file path that does not
    /// exist (the file routes name it), or a process or terminal the caller did not start.
    NotFound               => "not_found",               404, "NotFoundError",            false, false, Live;
    /// The token is missing or wrong.
    Unauthorized           => "unauthorized",            401, "AuthenticationError",      false, true,  Live;
    /// Two different credential values in one request.
    AmbiguousCredentials   => "ambiguous_credentials",   400, "AmbiguousCredentialsError", false, true, Live;
    /// The endpoint is switched off; `rule` names the layer that did it.
    EndpointDisabled       => "endpoint_disabled",       404, "EndpointDisabledError",    false, true,  Live;
    /// The caller lacks a scope the endpoint or the command needs.
    MissingScope           => "missing_scope",           403, "PermissionDeniedError",    false, true,  Live;
    /// A command guard has no allow-list entry that could admit the call.
    ScopeRequired          => "scope_required",          403, "PermissionDeniedError",    false, true,  Live;
    /// The path is outside the allowed directories (shell `cwd` included).
    PathNotAllowed         => "path_not_allowed",        403, "PathNotAllowedError",      false, true,  Live;
    /// The path matches a `paths.deny` pattern.
    PathDenied             => "path_denied",             403, "PathDeniedError",          false, true,  Live;
    /// `paths.read_only` refuses writes and deletes there.
    ReadOnly               => "read_only",               403, "ReadOnlyError",            false, true,  Live;
    /// `paths.symlinks` refuses a symbolic link on the path.
    SymlinkDenied          => "symlink_denied",          403, "SymlinkDeniedError",       false, true,  Live;
    /// The path is missing, has a NUL byte, or is too long.
    InvalidPath            => "invalid_path",            400, "InvalidPathError",         false, false, Live;
    /// `allow_commands` / `deny_commands` refuse the command.
    CommandNotAllowed      => "command_not_allowed",     403, "CommandNotAllowedError",   false, true,  Live;
    /// An empty or malformed command.
    CommandInvalid         => "command_invalid",         400, "CommandInvalidError",      false, false, Live;
    /// An empty or malformed executable.
    ProcessInvalid         => "process_invalid",         400, "ProcessInvalidError",      false, false, Live;
    /// A process guard refuses the program.
    ProcessDenied          => "process_denied",          403, "ProcessDeniedError",       false, true,  Live;
    /// An environment variable is refused by a deny rule.
    EnvVarDenied           => "env_var_denied",          403, "EnvVarDeniedError",        false, true,  Live;
    /// An environment variable is not on the allow list.
    EnvVarNotAllowed       => "env_var_not_allowed",     403, "EnvVarNotAllowedError",    false, true,  Live;
    /// A malformed environment map.
    EnvInvalid             => "env_invalid",             400, "EnvInvalidError",          false, false, Live;
    /// A malformed URL.
    UrlInvalid             => "url_invalid",             400, "UrlInvalidError",          false, false, Live;
    /// `url_allow` / `url_deny` / private-network rules refuse the URL.
    UrlDenied              => "url_denied",              403, "UrlDeniedError",           false, true,  Live;
    /// The code run language is not in `params.languages`.
    LanguageNotAllowed     => "language_not_allowed",    403, "LanguageNotAllowedError",  false, true,  Live;
    /// `http_fetch`: the exchange failed (nothing answers, TLS, too many redirects) or did
    /// not complete within `timeout` (the message says which).
    FetchFailed            => "fetch_failed",            502, "FetchFailedError",         false, false, Live;
    /// The upload's extension is refused.
    ExtensionNotAllowed    => "extension_not_allowed",   403, "ExtensionNotAllowedError", false, true,  Live;
    /// `overwrite: false` and the file exists.
    FileExists             => "file_exists",             409, "FileExistsError",          false, false, Live;
    /// The body is over the endpoint's limit (checked before it is read when declared).
    PayloadTooLarge        => "payload_too_large",       413, "PayloadTooLargeError",     false, true,  Live;
    /// The caller's rate limit is exhausted; `Retry-After` says when to come back.
    RateLimited            => "rate_limited",            429, "RateLimitError",           true,  true,  Live;
    /// The endpoint has as many calls in flight as it allows; `Retry-After` is set.
    ConcurrencyLimited     => "concurrency_limited",     429, "ConcurrencyLimitError",    true,  true,  Live;
    /// A query parameter was repeated.
    DuplicateParameter     => "duplicate_parameter",     400, "DuplicateParameterError",  false, true,  Live;
    // Ours: the HTTP layer's size limits, answered typed before routing.
    /// The request target (path and query) is over 8 KiB.
    UriTooLong             => "uri_too_long",            414, "UriTooLongError",          false, true,  Live;
    /// The request headers are over 32 KiB.
    HeadersTooLarge        => "headers_too_large",       431, "HeadersTooLargeError",     false, true,  Live;
    // Ours: what the file routes find at a path.
    /// A directory where a file is needed: reading, downloading or writing onto it.
    IsADirectory           => "is_a_directory",          400, "IsADirectoryError",        false, false, Live;
    /// A file where a directory is needed: listing it, uploading into it, a parent on the
    /// way.
    NotADirectory          => "not_a_directory",         400, "NotADirectoryError",       false, false, Live;
    /// Neither a regular file nor a directory (a device, FIFO or socket) where content is
    /// needed.
    NotAFile               => "not_a_file",              400, "NotAFileError",            false, false, Live;
    /// Deleting a non-empty directory without `recursive=true`, or moving onto one.
    DirectoryNotEmpty      => "directory_not_empty",     409, "DirectoryNotEmptyError",   false, false, Live;
    /// A `Range` that starts past the end of the file (or ends before it starts).
    RangeNotSatisfiable    => "range_not_satisfiable",   416, "RangeNotSatisfiableError", false, false, Live;
    // Ours: bad bodies and queries, named commands, roadmap placeholders, the safety net.
    /// A bad body, query or parameter; `param` names it.
    InvalidRequest         => "invalid_request",         400, "BadRequestError",          false, false, Live;
    /// No named command has that name.
    CommandNotFound        => "command_not_found",       404, "NotFoundError",            false, false, Live;
    /// The named command's program could not be started.
    CommandUnavailable     => "command_unavailable",     503, "CommandUnavailableError",  false, false, Live;
    /// The process has exited: it takes no signal and no more stdin.
    ProcessExited          => "process_exited",          409, "ProcessExitedError",       false, false, Live;
    /// The process's stdin is closed (on request, or by the process itself).
    StdinClosed            => "stdin_closed",            409, "StdinClosedError",         false, false, Live;
    /// A WebSocket handshake (the terminal attach, the responses socket) carrying an
    /// `Origin` header (a web page).
    OriginRefused          => "origin_refused",          403, "OriginRefusedError",       false, false, Live;
    /// More connections are open than `server.connections.max` allows: this one is answered
    /// and closed before its request is read; `Retry-After` says when to come back.
    TooManyConnections     => "too_many_connections",    503, "TooManyConnectionsError",  true,  false, Live;
    /// The server is stopping: it starts no more children.
    ShuttingDown           => "shutting_down",           503, "ShuttingDownError",        true,  false, Live;
    // Ours: the browser group.
    /// `POST /browser` while a browser runs (one per server); `DELETE /browser` stops it.
    BrowserRunning         => "browser_running",         409, "BrowserRunningError",      false, false, Live;
    /// A browser route while no browser runs (never started, stopped, or died: the message
    /// says how it ended); `POST /browser` starts one.
    BrowserNotRunning      => "browser_not_running",     409, "BrowserNotRunningError",   false, false, Live;
    /// No browser binary is installed (the message names the package), or it did not start.
    BrowserUnavailable     => "browser_unavailable",     503, "BrowserUnavailableError",  false, false, Live;
    /// No element matches the CSS selector (`param: selector`).
    SelectorNotFound       => "selector_not_found",      404, "SelectorNotFoundError",    false, false, Live;
    /// The page could not be loaded: the host does not resolve, nothing answers, TLS failed.
    NavigationFailed       => "navigation_failed",       502, "NavigationFailedError",    false, false, Live;
    /// The browser did not answer a call in time (a navigation 30 s, other calls 15 s).
    BrowserTimeout         => "browser_timeout",         504, "BrowserTimeoutError",      true,  false, Live;
    /// The endpoint is in the table but a later issue builds it.
    NotImplemented         => "not_implemented",         501, "NotImplementedError",      false, false, NO_PENDING_ROW;
    /// Anything unexpected (a caught panic included); the server log has the details.
    Internal               => "internal_error",          500, "InternalServerError",      true,  false, Live;
    // Agents group (first document, 7).
    /// A `tool_result` or `computer_use_approval_request_result` event.
    ToolResultUnsupported  => "agents.tool_result_unsupported", 400, "BadRequestError", false, false, Live;
    /// An environment file exists with different content.
    AgentsFileExists       => "agents.file_exists",      400, "BadRequestError",          false, false, Live;
    /// A write to a refused path (a link, a refused name, outside the workspace).
    PathRefused            => "agents.path_refused",     400, "BadRequestError",          false, true,  Live;
    /// The credential was deleted; raised on the next event.
    CredentialUnavailable  => "agents.credential_unavailable", 400, "BadRequestError",    false, false, Live;
    /// The credential is past its `expires_at`; raised on the next event.
    CredentialExpired      => "agents.credential_expired", 400, "BadRequestError",        false, false, Live;
    /// Continuing a response that is not the session's latest.
    PreviousResponseNotLatest => "agents.previous_response_not_latest", 400, "BadRequestError", false, false, Live;
    /// Compaction on a runtime that cannot compact (`rt-one`).
    CompactUnsupported     => "agents.compact_unsupported", 400, "BadRequestError",       false, false, Live;
    /// Cancelling a response that has finished.
    NotCancellable         => "agents.not_cancellable",  400, "BadRequestError",          false, false, Live;
    /// `GET /v1/responses` without a WebSocket upgrade.
    WebsocketUpgradeRequired => "agents.websocket_upgrade_required", 400, "BadRequestError", false, false, Live;
    /// A declared-only or unknown runtime, or a refusal route; the body carries `x_svc.runtimes`.
    NotImplementedLocally  => "agents.not_implemented_locally", 404, "NotFoundError",     false, false, Live;
    /// The runtime's program is not on `PATH`.
    RuntimeNotInstalled    => "agents.runtime_not_installed", 400, "BadRequestError",     false, false, Live;
    /// `after` names an id that is not in the list.
    CursorNotFound         => "agents.cursor_not_found", 404, "NotFoundError",            false, false, Live;
    /// Only as an `error` event of an event stream: a replay position is older than the
    /// kept history; the kept events follow.
    EventsDropped          => "agents.events_dropped",   410, "EventsDroppedError",       false, false, Live;
    /// No session, definition, environment, vault, response, ... with that id for the caller.
    ResourceNotFound       => "resource_not_found",      404, "NotFoundError",            false, false, Live;
    /// No model with that id.
    ModelNotFound          => "model_not_found",         404, "NotFoundError",            false, false, Live;
    /// The same `Idempotency-Key` with a different body.
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

    /// Sent only as an `error` event inside a stream, never as an HTTP answer (its status
    /// is what it would be).
    pub fn stream_only(self) -> bool {
        matches!(self, Code::EventsDropped)
    }

    /// Its row in `docs/errors.md`.
    pub fn docs_url(self) -> String {
        super::docs_url(self.as_str())
    }

    pub fn parse(code: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == code)
    }

    /// What `docs/errors.md` shows of every row.
    pub fn docs() -> Vec<RowDoc> {
        Code::ALL
            .iter()
            .map(|&c| {
                let row = c.row();
                RowDoc {
                    code: row.code,
                    status: row.status,
                    class: row.class,
                    meaning: row.meaning,
                    availability: row.availability,
                    stream_only: c.stream_only(),
                    suggestion: None,
                    docs_url: c.docs_url(),
                }
            })
            .collect()
    }

    /// The `type` of the nested OpenAI-style error object.
    fn v1_type(self) -> &'static str {
        match self.row().status {
            404 => "not_found_error",
            500..=599 => "server_error",
            _ => "invalid_request_error",
        }
    }

    /// The code's own name, without its group's prefix (`events_dropped`): the `type` of the
    /// error nested in a session stream's `error` event.
    fn event_type(self) -> &'static str {
        let code = self.as_str();
        code.rsplit_once('.').map_or(code, |(_, name)| name)
    }
}

/// The form of an `error` event inside a stream: each stream keeps its own, built from the
/// row like a body.
#[derive(Debug, Clone, Copy)]
pub enum EventForm<'a> {
    /// A session's event stream: an event like the session's own (`type`, `event_id`,
    /// `session_id`) with the error nested as `{type, code, message, param}`, its `type` the
    /// code's own name (`events_dropped`).
    Session {
        session_id: &'a str,
        event_id: &'a str,
    },
    /// A response's SSE stream and its WebSocket: the OpenAI Responses `error` event,
    /// `{type: "error", code, message, param, sequence_number}`.
    Response { sequence_number: u64 },
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

    /// The answer for a domain error: its row, its message, the field it names.
    pub fn from_domain<E: super::ErrorCode + ?Sized>(e: &E) -> Self {
        ApiError {
            param: e.param(),
            ..ApiError::new(e.error_code(), e.to_string())
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

    /// The flat server body of spec 2.2.
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

    /// The nested OpenAI-style body of the agents document.
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

    /// The payload of an `error` event (or WebSocket error frame) in a stream's form.
    pub fn event(&self, form: EventForm<'_>) -> Value {
        match form {
            EventForm::Session {
                session_id,
                event_id,
            } => json!({
                "type": "error",
                "event_id": event_id,
                "session_id": session_id,
                "error": {
                    "type": self.code.event_type(),
                    "code": self.code.as_str(),
                    "message": self.message,
                    "param": self.param,
                },
            }),
            EventForm::Response { sequence_number } => json!({
                "type": "error",
                "code": self.code.as_str(),
                "message": self.message,
                "param": self.param,
                "sequence_number": sequence_number,
            }),
        }
    }

    /// The whole SSE frame of [`ApiError::event`]: `event: error`, no id (it holds no
    /// position of the stream).
    pub fn sse_event(&self, form: EventForm<'_>) -> String {
        format!("event: error\ndata: {}\n\n", self.event(form))
    }

    /// The final response in the body shape its router was built with.
    pub fn render(&self, shape: Shape) -> Response {
        let (status, body) = match shape {
            Shape::Flat => (self.code.status(), self.flat_body()),
            Shape::OpenAi => (self.code.status(), self.v1_body()),
            Shape::Engine => {
                let row = engine::Code::for_status(self.code.status().as_u16());
                (row.status(), row.body(&self.message, None))
            }
        };
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        if let Some(secs) = self.retry_after_secs {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if shape == Shape::OpenAi && !self.code.retryable() {
            headers.insert("x-should-retry", HeaderValue::from_static("false"));
        }
        response.extensions_mut().insert(ErrorMeta::from(self));
        response
    }
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

/// Handlers return `ApiError`; the body is rendered later by the layer that knows the shape
/// (the route's admission pipeline, or the router's own layer for what no route answered).
#[derive(Debug, Clone)]
pub struct PendingError(pub ApiError);

impl PendingError {
    /// Renders the error a response is still waiting on, in `shape`; other responses pass.
    pub fn render_in(mut response: Response, shape: Shape) -> Response {
        match response.extensions_mut().remove::<PendingError>() {
            Some(PendingError(error)) => error.render(shape),
            None => response,
        }
    }
}

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
            assert!(!code.row().meaning.trim().is_empty(), "{code:?} has no doc");
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
    fn refusals_in_the_openai_shape_say_do_not_retry() {
        let r = ApiError::new(Code::NotImplementedLocally, "x").render(Shape::OpenAi);
        assert_eq!(r.headers()["x-should-retry"], "false");
        let r = ApiError::new(Code::NotImplementedLocally, "x").render(Shape::Flat);
        assert!(r.headers().get("x-should-retry").is_none());
        let r = ApiError::new(Code::RateLimited, "x")
            .with_retry_after(3)
            .render(Shape::OpenAi);
        assert!(r.headers().get("x-should-retry").is_none());
        assert_eq!(r.headers()["retry-after"], "3");
    }

    #[test]
    fn the_engine_shape_maps_by_status() {
        let r = ApiError::new(Code::ResourceNotFound, "gone").render(Shape::Engine);
        assert_eq!(r.status(), 404);
        let r = ApiError::new(Code::NotImplemented, "later").render(Shape::Engine);
        assert_eq!(r.status(), 501);
        let r = ApiError::new(Code::MissingScope, "no").render(Shape::Engine);
        assert_eq!(r.status(), 400);
    }

    #[test]
    fn stream_events_keep_each_streams_form() {
        let e = ApiError::new(Code::EventsDropped, "gone").with_param("after");
        assert_eq!(
            e.event(EventForm::Session {
                session_id: "agsess_1",
                event_id: "evt_gap_1_2",
            })
            .to_string(),
            r#"{"type":"error","event_id":"evt_gap_1_2","session_id":"agsess_1","error":{"type":"events_dropped","code":"agents.events_dropped","message":"gone","param":"after"}}"#
        );
        let e = e.with_param("starting_after");
        assert_eq!(
            e.event(EventForm::Response { sequence_number: 2 }),
            json!({"type": "error", "code": "agents.events_dropped", "message": "gone",
                   "param": "starting_after", "sequence_number": 2})
        );
        let bad = ApiError::new(Code::InvalidRequest, "send JSON text frames");
        assert_eq!(
            bad.event(EventForm::Response { sequence_number: 0 })["param"],
            Value::Null
        );
        assert!(
            e.sse_event(EventForm::Response { sequence_number: 2 })
                .starts_with("event: error\ndata: {")
        );
    }
}
