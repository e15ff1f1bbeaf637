//! The local engine's error table (spec 7.2). The body is `{error: {type, code, message,
//! suggestion, docs_url}}`: `type` is the client's exception class name (the client rebuilds
//! the same exception), `docs_url` the row's anchor in `docs/errors.md`. Inside an SSE
//! stream the same object arrives as an `error` event. Every row is live (the engine's
//! conformance cases provoke it) but those no request can reach with the builtin
//! provider, which are dormant and say why.

use super::{Availability, RowDoc, doc_text};
use http::StatusCode;
use serde_json::{Value, json};
use std::fmt;

macro_rules! engine_table {
    ($( $(#[doc = $doc:literal])* $variant:ident => $code:literal, $status:literal, $class:literal, $suggestion:literal, $avail:expr; )*) => {
        /// A machine code of the engine's error table.
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
                        suggestion: $suggestion,
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
    class: &'static str,
    /// What the caller can do about it, unless the error says something more precise.
    suggestion: &'static str,
    availability: Availability,
    meaning: &'static str,
}

use Availability::Live;
/// Only an engine fault (an I/O failure of the host) answers it: no request provokes it.
const NO_FAULT: Availability =
    Availability::Dormant("only a fault of the engine's host answers it; no request provokes it");

// Status mapping of spec 7.2: 404 not found; 401 bad token or provider authentication; 501
// capability missing; 400 bad value or configuration; 500 anything else.
engine_table! {
    /// The engine token is missing or wrong (after an engine restart the client re-reads
    /// the descriptor and starts a new engine).
    Unauthorized        => "E1001", 401, "AuthenticationError",         "re-read the engine descriptor, or start the engine again", Live;
    /// The provider refused the connection's credentials.
    ProviderAuth        => "E1002", 401, "ProviderAuthenticationError", "check the connection's api_key or access key", Live;
    /// A request that is not from a local client: a `Host` that is not loopback (DNS
    /// rebinding), or an `Origin` header (a browser page).
    Forbidden           => "E1003", 403, "ForbiddenError",              "call the engine from a local program, at http://127.0.0.1:PORT, without an Origin header", Live;
    /// No route or resource of that name.
    NotFound            => "E2000", 404, "NotFoundError",               "check the path and the id", Live;
    /// No file or directory at that path in the sandbox.
    FileNotFound        => "E2004", 404, "FileNotFoundError",           "list the directory (`files/list`) to see what is there", Live;
    /// No process with that pid in the sandbox.
    ProcessNotFound     => "E2005", 404, "ProcessNotFoundError",        "list the sandbox's processes (`GET .../processes`)", Live;
    /// No code context with that id in the sandbox.
    ContextNotFound     => "E2006", 404, "ContextNotFoundError",        "list the contexts (`GET .../code/contexts`), or create one", Live;
    /// No sandbox with that id for this connection.
    SandboxNotFound     => "E2009", 404, "SandboxNotFoundError",        "list the sandboxes, or create one", Live;
    /// The provider has no template of that name.
    TemplateNotFound    => "E2010", 404, "TemplateNotFoundError",       "create the sandbox from template `base`", Live;
    /// A bad value in the request.
    InvalidArgument     => "E4001", 400, "InvalidArgumentError",        "fix the named value and retry", Live;
    /// A bad or incomplete connection or configuration.
    Configuration       => "E4002", 400, "ConfigurationError",          "check the connection (X-Svc-Connection) and the provider options", Live;
    /// The sandbox is paused or stopping: resume it first.
    SandboxNotRunning   => "E4003", 400, "SandboxStateError",           "resume the sandbox (`POST .../resume`), or create a new one", Live;
    /// The target exists and `overwrite` is false, or `mkdir` of an existing path.
    FileExists          => "E4004", 400, "FileExistsError",             "pass `overwrite=true`, or choose another path", Live;
    /// The path leaves the sandbox's folder, or a link on the way would take it out.
    PathNotAllowed      => "E4005", 400, "PathNotAllowedError",         "use a path inside the sandbox (relative paths start at its folder)", Live;
    /// A directory where a file is needed, a file where a directory is needed, or a
    /// non-empty directory removed without `recursive`.
    WrongFileType       => "E4006", 400, "FileTypeError",               "check the path's type with `files/info`", Live;
    /// The process has exited or its stdin is closed.
    ProcessExited       => "E4007", 400, "ProcessExitedError",          "start the process again", Live;
    /// The provider did not declare the feature the route needs.
    FeatureNotSupported => "E8004", 501, "FeatureNotSupportedError",    "GET /v1/providers lists what each provider declares", Live;
    /// The machine cannot make a sandbox's namespaces (no bubblewrap, or user namespaces
    /// are off) and the create asked for isolation, as it does by default.
    IsolationUnavailable => "E8005", 501, "IsolationUnavailableError",  "install bubblewrap and allow user namespaces (`svc provider engine status` says what is missing), or create with `isolation: \"none\"` for trusted code only", Live;
    /// The provider failed (it crashed, answered garbage, or timed out).
    ProviderFailed      => "E9001", 500, "ProviderError",               "GET /v1/providers shows the provider's error; see the engine log", Live;
    /// The provider did not answer in time (a plugin that hangs, a remote engine that does
    /// not answer): the call is abandoned, the engine goes on.
    ProviderTimeout     => "E9002", 500, "ProviderTimeoutError",        "retry; GET /v1/providers shows the provider's state; see the engine log", Live;
    /// More connections are open than the engine allows: this one is answered and closed
    /// before its request is read.
    Busy                => "E9003", 503, "BusyError",                   "retry after `Retry-After` seconds; close the connections you do not use", Live;
    /// Anything else; the engine log has the details.
    Internal            => "E9000", 500, "EngineError",                 "see the engine log, `<state_dir>/engine.log`", NO_FAULT;
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

    pub fn suggestion(self) -> &'static str {
        self.row().suggestion
    }

    pub fn availability(self) -> Availability {
        self.row().availability
    }

    pub fn docs_url(self) -> String {
        super::docs_url(self.as_str())
    }

    pub fn parse(code: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == code)
    }

    /// The row of an error that has none of its own, by its status (spec 7.2).
    pub fn for_status(status: u16) -> Code {
        match status {
            401 => Code::Unauthorized,
            404 => Code::NotFound,
            501 => Code::FeatureNotSupported,
            400..=499 => Code::InvalidArgument,
            _ => Code::Internal,
        }
    }

    /// The engine body; `suggestion` replaces the row's own when the error knows better.
    pub fn body(self, message: &str, suggestion: Option<&str>) -> Value {
        json!({
            "error": {
                "type": self.class(),
                "code": self.as_str(),
                "message": message,
                "suggestion": suggestion.unwrap_or(self.suggestion()),
                "docs_url": self.docs_url(),
            }
        })
    }

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
                    stream_only: false,
                    suggestion: Some(row.suggestion),
                    docs_url: c.docs_url(),
                }
            })
            .collect()
    }
}

/// The engine's counterpart of [`super::ErrorCode`]: an engine domain error names its row.
pub trait EngineErrorCode: fmt::Display {
    fn engine_code(&self) -> Code;

    fn suggestion(&self) -> Option<String> {
        None
    }
}

/// An engine error answer (and the payload of a stream's `error` event).
#[derive(Debug, Clone)]
pub struct EngineError {
    pub code: Code,
    pub message: String,
    pub suggestion: Option<String>,
}

impl EngineError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        EngineError {
            code,
            message: message.into(),
            suggestion: None,
        }
    }

    pub fn from_domain<E: EngineErrorCode + ?Sized>(e: &E) -> Self {
        EngineError {
            code: e.engine_code(),
            message: e.to_string(),
            suggestion: e.suggestion(),
        }
    }

    pub fn body(&self) -> Value {
        self.code.body(&self.message, self.suggestion.as_deref())
    }
}

impl axum::response::IntoResponse for EngineError {
    fn into_response(self) -> axum::response::Response {
        (self.code.status(), axum::Json(self.body())).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_spec_pairs_and_statuses() {
        assert_eq!(Code::SandboxNotFound.as_str(), "E2009");
        assert_eq!(Code::SandboxNotFound.class(), "SandboxNotFoundError");
        assert_eq!(Code::SandboxNotFound.status(), 404);
        assert_eq!(Code::FeatureNotSupported.as_str(), "E8004");
        assert_eq!(Code::FeatureNotSupported.status(), 501);
        let names: HashSet<_> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), Code::ALL.len());
        for code in Code::ALL {
            assert_eq!(Code::parse(code.as_str()), Some(*code));
            assert!(matches!(
                code.status().as_u16(),
                400 | 401 | 403 | 404 | 500 | 501 | 503
            ));
            // Every row answers; the ones no request can provoke say why.
            let dormant = matches!(code, Code::Internal);
            match code.availability() {
                Availability::Live => assert!(!dormant, "{code:?}"),
                Availability::Dormant(_) => assert!(dormant, "{code:?}"),
                Availability::Pending(by) => panic!("{code:?} is pending ({by})"),
            }
        }
    }

    #[test]
    fn the_body_links_its_row() {
        let body = EngineError::new(Code::SandboxNotFound, "no sandbox `sb_1`").body();
        assert_eq!(
            body,
            json!({"error": {
                "type": "SandboxNotFoundError",
                "code": "E2009",
                "message": "no sandbox `sb_1`",
                "suggestion": "list the sandboxes, or create one",
                "docs_url": "docs/errors.md#e2009",
            }})
        );
    }
}
