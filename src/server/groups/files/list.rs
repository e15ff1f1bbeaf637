//! `files_list`: GET /files/list?path=[&depth=1] answers `{entries: [entry...]}`, depth
//! first in name order, links described and never followed, denied entries left out
//! (`truncated: true` is added only past the service's entry cap).

use super::entry::FileEntry;
use super::{Route, blocking, required, service};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, PATH_READ, json_schema};
use crate::server::route::on;
use crate::wire::EntryInfo;
use axum::extract::State;
use serde::{Deserialize, Serialize};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, list),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/files/list?path=/workspace&depth=2",
    body: ExampleBody::None,
    files: &[
        ("notes.txt", "hello, files\n"),
        ("src/main.rs", "fn main() {}\n"),
    ],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"entries":[{"name":"notes.txt","path":"/workspace/notes.txt","type":"file","size":13,"mode":"0644","modified_at":"2025-06-01T12:00:00Z"},{"name":"src","path":"/workspace/src","type":"dir","size":4096,"mode":"0755","modified_at":"2025-06-01T12:00:00Z"},{"name":"main.rs","path":"/workspace/src/main.rs","type":"file","size":13,"mode":"0644","modified_at":"2025-06-01T12:00:00Z"}]}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesList, "List a directory")
    .describe("Depth first in name order; links described and never followed; denied entries left out. `truncated: true` only past the service's entry cap.")
    .query(ListQuery::json_schema)
    .answers(&[Answer::json("The entries.", |g| {
        let entry = g.subschema_for::<FileEntry>();
        json_schema!({
            "type": "object",
            "required": ["entries"],
            "properties": {
                "entries": {"type": "array", "items": entry},
                "truncated": {"const": true, "description": "Only past the service's entry cap."},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[PATH_READ, &[Code::NotFound, Code::NotADirectory]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    /// Absolute, or relative to the server's working directory.
    #[schemars(required, with = "String", length(min = 1))]
    path: Option<String>,
    /// Levels below the directory, 1..=10.
    #[schemars(range(min = 1, max = 10))]
    depth: Option<u32>,
}

/// The answer: the engine's entry list, with the server's cap flag.
#[derive(Serialize)]
struct Listed {
    entries: Vec<EntryInfo>,
    /// Only past the service's entry cap.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

async fn list(
    State(app): State<SharedState>,
    Query(query): Query<ListQuery>,
) -> Result<axum::Json<Listed>, ApiError> {
    let path = required(query.path, "path")?;
    let depth = query.depth.unwrap_or(1);
    let files = service(&app);
    let listing = blocking(move || files.list(&path, depth)).await?;
    Ok(axum::Json(Listed {
        entries: listing.entries.iter().map(EntryInfo::from).collect(),
        truncated: listing.truncated,
    }))
}
