//! `system_disk`: GET /system/disk?path= answers how full the filesystem holding `path`
//! is: `{path, total_bytes, used_bytes, free_bytes}` (`free_bytes` is what an unprivileged
//! program may still write). The path passes the path guard as a read (`paths:`), and is
//! the server's working directory when absent.

use super::{Route, blocking};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, PATH_READ, json_schema};
use crate::server::route::on;
use crate::services::paths::Op;
use crate::services::system;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, disk),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/system/disk?path=/workspace",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"path":"/workspace","total_bytes":107374182400,"used_bytes":42949672960,"free_bytes":59055800320}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::SystemDisk, "How full a disk is")
    .describe("The filesystem holding `path` (judged by the path guard as a read; the server's working directory when absent). `free_bytes` is what an unprivileged program may still write.")
    .query(DiskQuery::json_schema)
    .answers(&[Answer::json("The filesystem's sizes.", |_| {
        json_schema!({
            "type": "object",
            "required": ["path", "total_bytes", "used_bytes", "free_bytes"],
            "properties": {
                "path": {"type": "string"},
                "total_bytes": {"type": "integer", "minimum": 0},
                "used_bytes": {"type": "integer", "minimum": 0},
                "free_bytes": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[PATH_READ, &[Code::NotFound]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiskQuery {
    /// A path on the filesystem (default: the server's working directory).
    #[schemars(length(min = 1))]
    path: Option<String>,
}

async fn disk(
    State(app): State<SharedState>,
    Query(query): Query<DiskQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let raw = query.path.unwrap_or_else(|| ".".into());
    let path = app
        .settings
        .paths
        .check(&raw, Op::Read, &app.base_dir)
        .map_err(|refusal| ApiError::from(refusal).with_param("path"))?;
    let shown = path.display().to_string();
    let d = blocking(move || system::disk(&path)).await?;
    Ok(axum::Json(json!({
        "path": shown,
        "total_bytes": d.total_bytes,
        "used_bytes": d.used_bytes,
        "free_bytes": d.free_bytes,
    })))
}
