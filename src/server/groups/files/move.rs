//! `files_move`: POST /files/move `{from, to, overwrite?}` renames on one filesystem (both
//! paths guarded: `from` as a delete, `to` as a write) and answers the entry of `to`. An
//! existing `to` is 409 `file_exists` unless `overwrite: true`.

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
    bind: |f| on(f, move_),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/files/move",
    body: ExampleBody::Json(r#"{"from": "/workspace/draft.txt", "to": "/workspace/final.txt"}"#),
    files: &[("draft.txt", "done\n")],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"name":"final.txt","path":"/workspace/final.txt","type":"file","size":5,"mode":"0644","modified_at":"2025-06-01T12:00:00Z"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesMove, "Move or rename")
    .describe("Renames on one filesystem (`from` guarded as a delete, `to` as a write); an existing `to` is 409 `file_exists` unless `overwrite: true`.")
    .json(|g| g.subschema_for::<MoveBody>())
    .answers(&[Answer::json("The entry of `to`.", |g| g.subschema_for::<FileEntry>())])
    .errors(&[
        PATH_WRITE,
        &[Code::NotFound, Code::NotADirectory, Code::IsADirectory, Code::FileExists, Code::DirectoryNotEmpty],
    ]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MoveBody {
    #[schemars(required, with = "String", length(min = 1))]
    from: Option<String>,
    #[schemars(required, with = "String", length(min = 1))]
    to: Option<String>,
    #[serde(default)]
    overwrite: bool,
}

async fn move_(
    State(app): State<SharedState>,
    Json(body): Json<MoveBody>,
) -> Result<axum::Json<EntryInfo>, ApiError> {
    let from = required(body.from, "from")?;
    let to = required(body.to, "to")?;
    let files = service(&app);
    let entry = blocking(move || files.rename(&from, &to, body.overwrite)).await?;
    Ok(axum::Json(EntryInfo::from(&entry)))
}
