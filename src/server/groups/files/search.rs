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
use crate::services::files::{SearchQuery, SearchResult};
use axum::extract::State;
use axum::routing::on;
use serde::Deserialize;

pub(super) const ROUTE: Route = Route {
    id: EndpointId::FilesSearch,
    bind: |f| on(f, search),
    example: &EXAMPLE,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchBody {
    path: Option<String>,
    glob: Option<String>,
    pattern: Option<String>,
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
