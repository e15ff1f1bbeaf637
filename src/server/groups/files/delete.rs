//! `files_delete`: DELETE /files?path=[&recursive=true] answers `{path, deleted: true}`; a
//! non-empty directory needs `recursive` (else 409 `directory_not_empty`), and then nothing
//! under it may be denied or read-only. A link is removed as the link.

use super::{Route, blocking, required, service};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, PATH_WRITE, json_schema};
use crate::server::route::on;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, delete),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "DELETE",
    target: "/files?path=/workspace/build&recursive=true",
    body: ExampleBody::None,
    files: &[("build/out/app", "binary\n")],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"path":"/workspace/build","deleted":true}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesDelete, "Delete a file or directory")
    .describe("A non-empty directory needs `recursive` (else 409 `directory_not_empty`), and then nothing under it may be denied or read-only. A link is removed as the link.")
    .query(DeleteQuery::json_schema)
    .answers(&[Answer::json("What was deleted.", |_| {
        json_schema!({
            "type": "object",
            "required": ["path", "deleted"],
            "properties": {"path": {"type": "string"}, "deleted": {"const": true}},
            "additionalProperties": false,
        })
    })])
    .errors(&[PATH_WRITE, &[Code::NotFound, Code::NotADirectory, Code::DirectoryNotEmpty]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteQuery {
    /// Absolute, or relative to the server's working directory.
    #[schemars(required, with = "String", length(min = 1))]
    path: Option<String>,
    #[serde(default)]
    recursive: bool,
}

async fn delete(
    State(app): State<SharedState>,
    Query(query): Query<DeleteQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let path = required(query.path, "path")?;
    let files = service(&app);
    let deleted = blocking(move || files.delete(&path, query.recursive)).await?;
    Ok(axum::Json(
        json!({ "path": deleted.to_string_lossy(), "deleted": true }),
    ))
}
