//! `files_mkdir`: POST /files/mkdir `{path, parents?}` makes the directory and answers its
//! entry; with `parents` the missing parents too, and an existing directory is fine.

use super::entry::FileEntry;
use super::{Route, blocking, required, service};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, PATH_WRITE};
use crate::server::route::on;
use crate::wire::EntryInfo;
use axum::extract::State;
use serde::Deserialize;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, mkdir),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/files/mkdir",
    body: ExampleBody::Json(r#"{"path": "/workspace/build/out", "parents": true}"#),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"name":"out","path":"/workspace/build/out","type":"dir","size":4096,"mode":"0755","modified_at":"2025-06-01T12:00:00Z"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesMkdir, "Make a directory")
    .describe("With `parents` the missing parents too, and an existing directory is fine.")
    .json(|g| g.subschema_for::<MkdirBody>())
    .answers(&[Answer::json("The directory's entry.", |g| {
        g.subschema_for::<FileEntry>()
    })])
    .errors(&[
        PATH_WRITE,
        &[Code::NotFound, Code::NotADirectory, Code::FileExists],
    ]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MkdirBody {
    /// Absolute, or relative to the server's working directory.
    #[schemars(required, with = "String", length(min = 1))]
    path: Option<String>,
    #[serde(default)]
    parents: bool,
}

async fn mkdir(
    State(app): State<SharedState>,
    Json(body): Json<MkdirBody>,
) -> Result<axum::Json<EntryInfo>, ApiError> {
    let path = required(body.path, "path")?;
    let files = service(&app);
    let entry = blocking(move || files.mkdir(&path, body.parents)).await?;
    Ok(axum::Json(EntryInfo::from(&entry)))
}
