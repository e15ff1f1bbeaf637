//! `files_info`: GET /files/info?path= answers the entry of the path itself (a link is
//! described, not followed).

use super::entry::FileEntry;
use super::read::PathQuery;
use super::{Route, blocking, required, service};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, PATH_READ};
use crate::server::route::on;
use crate::wire::EntryInfo;
use axum::extract::State;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, info),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/files/info?path=/workspace/notes.txt",
    body: ExampleBody::None,
    files: &[("notes.txt", "hello, files\n")],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"name":"notes.txt","path":"/workspace/notes.txt","type":"file","size":13,"mode":"0644","modified_at":"2025-06-01T12:00:00Z"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesInfo, "Describe a path")
    .describe("The entry of the path itself: a link is described, not followed.")
    .query(PathQuery::json_schema)
    .answers(&[Answer::json("The entry.", |g| {
        g.subschema_for::<FileEntry>()
    })])
    .errors(&[PATH_READ, &[Code::NotFound, Code::NotADirectory]]);

async fn info(
    State(app): State<SharedState>,
    Query(query): Query<PathQuery>,
) -> Result<axum::Json<EntryInfo>, ApiError> {
    let path = required(query.path, "path")?;
    let files = service(&app);
    let entry = blocking(move || files.info(&path)).await?;
    Ok(axum::Json(EntryInfo::from(&entry)))
}
