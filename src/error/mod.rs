//! The error tables, as meilisearch does them (`meilisearch-types/src/error.rs`): every
//! error the server and the local engine can answer with is one row of a table (one table
//! per body shape),
//! and a domain error says which row it is through [`ErrorCode`]; bodies are rendered from
//! the row, never by hand. Each row has an anchor in `docs/errors.md`, generated from the
//! tables (`svc errors --format markdown`).
//!
//! - [`server`]: the in-sandbox server's table ([`Code`]) and its error answer
//!   ([`ApiError`]), rendered in the [`Shape`] its router was built with.
//! - [`engine`]: the local engine's table (spec 7.2), `{error: {type, code, message,
//!   suggestion, docs_url}}`.

pub mod engine;
pub mod server;

use serde::Serialize;
use std::fmt;

pub use server::{ApiError, ApiResult, Code, ErrorMeta, EventForm, PendingError};

/// Which roadmap item makes a code live. The coverage gate demands a conformance case for
/// every `Live` code and lists the rest as pending or dormant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "by")]
pub enum Availability {
    Live,
    Pending(&'static str),
    /// Built and answerable, but no request reaches it while the table is as it is (the
    /// 501 of a pending row, when no row is pending); the named unit test proves it instead
    /// of a conformance case, which could not provoke it.
    Dormant(&'static str),
}

/// The body shape of an error answer. Decided when a router is built (by the endpoint row
/// for a matched route, by the router that answers for anything else), never by looking at
/// a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// The server body of spec 2.2: `{error: message, type, code, endpoint, rule}`.
    Flat,
    /// The agents group's OpenAI-style object: `{error: {message, type, param, code}}`,
    /// with `x-should-retry: false` on refusals.
    OpenAi,
    /// The local engine's body of spec 7.2: `{error: {type, code, message, suggestion,
    /// docs_url}}`.
    Engine,
}

/// A domain error names its row of the server table; its message is its `Display`. Services
/// define their own errors, and the server layer implements this for them, so a `?` in a
/// handler turns any of them into an [`ApiError`] built from the row.
pub trait ErrorCode: fmt::Display {
    fn error_code(&self) -> Code;

    /// The offending field, for the bodies that name one (`param`).
    fn param(&self) -> Option<String> {
        None
    }
}

impl<E: ErrorCode> From<E> for ApiError {
    fn from(e: E) -> ApiError {
        ApiError::from_domain(&e)
    }
}

/// Where `docs/errors.md` is published; every row's docs link is this plus its anchor.
pub const DOCS_URL: &str = "docs/errors.md";

/// The anchor of a code in `docs/errors.md`: lower case, `.` as `-` (`agents-path_refused`,
/// `e2009`).
pub fn anchor(code: &str) -> String {
    code.to_ascii_lowercase().replace('.', "-")
}

/// The docs link of a code.
pub fn docs_url(code: &str) -> String {
    format!("{DOCS_URL}#{}", anchor(code))
}

/// What `docs/errors.md` shows of a row, whichever table it is in.
#[derive(Debug, Clone, Serialize)]
pub struct RowDoc {
    pub code: &'static str,
    pub status: u16,
    /// The exception name (`type` of the flat server body and of the engine body).
    #[serde(rename = "type")]
    pub class: &'static str,
    /// When the server answers it (the row's doc comment).
    pub meaning: &'static str,
    pub availability: Availability,
    /// Only ever sent inside an event stream, never as an HTTP answer.
    pub stream_only: bool,
    /// What the caller can do (the engine body's `suggestion`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<&'static str>,
    /// Its anchor in `docs/errors.md`.
    pub docs_url: String,
}

/// Collects the `///` lines of a row into one sentence.
macro_rules! doc_text {
    () => {
        ""
    };
    ($first:literal $(, $rest:literal)*) => {
        concat!($first $(, " ", $rest)*)
    };
}
pub(crate) use doc_text;
