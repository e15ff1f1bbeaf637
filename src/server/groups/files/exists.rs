//! `files_exists`: GET /files/exists?path= answers `{exists: bool}`; a guard refusal is the
//! refusal, never `false`.

use super::read::PathQuery;
use super::{Route, blocking, required, service};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Doc, JsonSchema, PATH_READ, json_schema};
use crate::server::route::on;
use axum::extract::State;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, exists),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/files/exists?path=/workspace/missing.txt",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"exists":false}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesExists, "Whether a path exists")
    .describe("A guard refusal is the refusal, never `false`.")
    .query(PathQuery::json_schema)
    .answers(&[Answer::json("Whether it exists.", |_| {
        json_schema!({
            "type": "object",
            "required": ["exists"],
            "properties": {"exists": {"type": "boolean"}},
            "additionalProperties": false,
        })
    })])
    .errors(&[PATH_READ]);

async fn exists(
    State(app): State<SharedState>,
    Query(query): Query<PathQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let path = required(query.path, "path")?;
    let files = service(&app);
    let exists = blocking(move || files.exists(&path)).await?;
    Ok(axum::Json(json!({ "exists": exists })))
}
