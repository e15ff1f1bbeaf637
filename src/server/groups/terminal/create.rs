//! `pty_create`: POST /pty `{cols?, rows?, shell?, cwd?, env?}` starts a shell on a new
//! terminal for the caller and answers its record. Defaults: 80 × 24, `/bin/bash` (or
//! `/bin/sh` where bash is absent), the server's working directory. The working directory
//! passes the path guard, the variables the variable rules, the shell the command and
//! process guards (`server::launch`, shared with the process routes); the shell's
//! environment is the operator's child base with the caller's variables over it, plus
//! `TERM=xterm-256color` unless one of them sets `TERM`.

use super::Route;
use super::render::record_json;
use super::schemas::TerminalRecord;
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::launch;
use crate::server::openapi::op::{Answer, Code, Doc, LAUNCH};
use crate::server::route::on;
use crate::services::pty::{Size, Spec};
use axum::Extension;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, create),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/pty",
    body: ExampleBody::Json(r#"{"cols": 120, "rows": 40, "cwd": "/workspace"}"#),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"id":"pty_5f2c0e8b9a1d4c7e6b3a2f10","pid":4242,"cols":120,"rows":40,"shell":"/bin/bash","cwd":"/workspace","created_at":"2025-06-01T12:00:00Z","clients":0}"#,
};

/// The shell when the caller names none, and the one used where it is absent.
const DEFAULT_SHELL: &str = "/bin/bash";
const FALLBACK_SHELL: &str = "/bin/sh";

pub(super) const DOC: Doc = Doc::new(EndpointId::PtyCreate, "Start a terminal")
    .describe("A shell on a new terminal for the caller (defaults: 80 x 24, `/bin/bash` or `/bin/sh` where bash is absent, the server's working directory). The working directory passes the path guard, the variables the variable rules, the shell the command and process guards; `TERM=xterm-256color` unless the variables set `TERM`.")
    .json(|g| g.subschema_for::<CreateBody>())
    .answers(&[Answer::json("The terminal's record.", |g| g.subschema_for::<TerminalRecord>())])
    .errors(&[LAUNCH, &[Code::NotFound]]);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "PtyCreateBody")]
#[serde(deny_unknown_fields)]
struct CreateBody {
    #[schemars(range(min = 1, max = 1000))]
    cols: Option<u32>,
    #[schemars(range(min = 1, max = 1000))]
    rows: Option<u32>,
    /// The shell's program.
    #[schemars(length(min = 1))]
    shell: Option<String>,
    /// The working directory.
    #[schemars(length(min = 1))]
    cwd: Option<String>,
    /// Variables over the shell's environment.
    #[serde(default)]
    env: BTreeMap<String, String>,
}

async fn create(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Json(body): Json<CreateBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let size = Size::new(body.cols.unwrap_or(80), body.rows.unwrap_or(24))?;
    let shell = match body.shell {
        Some(shell) if shell.trim().is_empty() => {
            return Err(ApiError::invalid("shell", "`shell` must name a program"));
        }
        Some(shell) => shell,
        None => default_shell().to_owned(),
    };
    let cwd = launch::working_dir(&app, body.cwd.as_deref())?;
    let mut env = launch::child_env(&app, &body.env)?;
    if !env.iter().any(|(k, _)| k == "TERM") {
        env.push(("TERM".into(), "xterm-256color".into()));
    }
    launch::admit_program(&app, &identity, &shell, &env, &cwd)?;
    let spec = Spec {
        shell,
        args: Vec::new(),
        through: None,
        enter: None,
        join_cgroup: Vec::new(),
        ptmx_in: None,
        cwd: Some(cwd),
        env,
        size,
    };
    let record = app.ptys.create(&identity.id, &spec)?;
    Ok(axum::Json(record_json(&record)))
}

fn default_shell() -> &'static str {
    if std::path::Path::new(DEFAULT_SHELL).is_file() {
        DEFAULT_SHELL
    } else {
        FALLBACK_SHELL
    }
}
