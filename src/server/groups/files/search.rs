//! `files_search`: POST /files/search `{path, glob?, pattern?, max_results?}` answers
//! `{matches: [{path, line?, text?}], truncated}`: `glob` matches names, `pattern` is a
//! regular expression over the lines of text files (binary files skipped); denied paths
//! are never searched and links are never followed. Bounded by `max_results` (1..=10000,
//! default 1000) and the service's work budget (then `truncated: true`).

use super::{Route, blocking, required, service};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, PATH_READ, json_schema};
use crate::server::route::on;
use crate::services::files::{SearchQuery, SearchResult};
use axum::extract::State;
use serde::Deserialize;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, search),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/files/search",
    body: ExampleBody::Json(r#"{"path": "/workspace", "glob": "*.rs", "pattern": "TODO"}"#),
    files: &[
        (
            "src/main.rs",
            "fn main() {\n    // TODO: parse arguments\n}\n",
        ),
        ("notes.txt", "TODO: not a .rs file\n"),
    ],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"matches":[{"path":"/workspace/src/main.rs","line":2,"text":"    // TODO: parse arguments"}],"truncated":false}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesSearch, "Search names and text")
    .describe("`glob` matches names, `pattern` is a regular expression over the lines of text files (binary files skipped); denied paths are never searched and links never followed. Bounded by `max_results` and the service's work budget (then `truncated: true`).")
    .json(|g| g.subschema_for::<SearchBody>())
    .answers(&[Answer::json("The matches.", |_| {
        json_schema!({
            "type": "object",
            "required": ["matches", "truncated"],
            "properties": {
                "matches": {"type": "array", "items": {
                    "type": "object",
                    "required": ["path"],
                    "properties": {
                        "path": {"type": "string"},
                        "line": {"type": "integer", "minimum": 1, "description": "For a text match: the line number."},
                        "text": {"type": "string", "description": "For a text match: the line."},
                    },
                    "additionalProperties": false,
                }},
                "truncated": {"type": "boolean"},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[PATH_READ, &[Code::NotFound, Code::NotADirectory]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("anyOf" = [
    {"required": ["glob"], "properties": {"glob": {"type": "string"}}},
    {"required": ["pattern"], "properties": {"pattern": {"type": "string"}}},
]))]
struct SearchBody {
    /// Absolute, or relative to the server's working directory.
    #[schemars(required, with = "String", length(min = 1))]
    path: Option<String>,
    /// A glob over names (`*.rs`).
    glob: Option<String>,
    /// A regular expression over the lines of text files.
    pattern: Option<String>,
    /// 1..=10000, default 1000.
    #[schemars(range(min = 1, max = 10000))]
    max_results: Option<usize>,
}

async fn search(
    State(app): State<SharedState>,
    Json(body): Json<SearchBody>,
) -> Result<axum::Json<SearchResult>, ApiError> {
    let path = required(body.path, "path")?;
    let query = SearchQuery::new(body.glob, body.pattern, body.max_results);
    let files = service(&app);
    let found = blocking(move || files.search(&path, &query)).await?;
    Ok(axum::Json(found))
}
