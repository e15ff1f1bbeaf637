//! `process_signal`: POST /processes/{pid}/signal `{signal}` sends 15 (TERM) or 9 (KILL)
//! to the process's whole group and answers its record (still `running` until the group
//! has ended: GET it again, or DELETE it to wait). Any other number is 400.

use super::render::record_json;
use super::schemas::{ProcessRecord, pid_path};
use super::{Route, about, pid_of};
use crate::error::{ApiError, ApiResult};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::{Json, Path};
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema};
use crate::server::route::on;
use crate::services::supervisor::Signal;
use axum::Extension;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, signal),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/processes/4242/signal",
    body: ExampleBody::Json(r#"{"signal": 2}"#),
    files: &[],
    status: 400,
    headers: &[("content-type", "application/json")],
    answer: r#"{"error":"signal 2 is not supported (only 15 and 9 are)","type":"BadRequestError","code":"invalid_request","param":"signal"}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::ProcessSignal, "Signal a process")
    .describe("Sends 15 (TERM) or 9 (KILL) to the process's whole group; the record stays `running` until the group has ended.")
    .path(pid_path)
    .json(|g| g.subschema_for::<SignalBody>())
    .answers(&[Answer::json("The record.", |g| g.subschema_for::<ProcessRecord>())])
    .errors(&[&[Code::NotFound, Code::ProcessExited]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SignalBody {
    /// 15 (TERM) or 9 (KILL).
    #[schemars(required, with = "i64", extend("enum" = [15, 9]))]
    signal: Option<i64>,
}

async fn signal(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(pid): Path<String>,
    Json(body): Json<SignalBody>,
) -> ApiResult<axum::Json<Value>> {
    let pid = pid_of(&pid)?;
    let number = body.signal.ok_or_else(|| {
        ApiError::invalid("signal", "`signal` is required: 15 (TERM) or 9 (KILL)")
    })?;
    let signal = i32::try_from(number)
        .map_err(|_| crate::services::supervisor::Error::UnsupportedSignal(-1))
        .and_then(Signal::try_from)
        .map_err(|_| {
            ApiError::invalid(
                "signal",
                format!("signal {number} is not supported (only 15 and 9 are)"),
            )
        })?;
    app.processes
        .signal(&identity.id, pid, signal)
        .map_err(about(pid))?;
    let record = app.processes.get(&identity.id, pid).map_err(about(pid))?;
    Ok(axum::Json(Value::Object(record_json(&record))))
}
