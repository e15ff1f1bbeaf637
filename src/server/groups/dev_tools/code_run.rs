//! `code_run`: POST /code/run `{code, language, timeout?, context_id?, env?}` runs a
//! snippet and answers `{stdout, stderr, exit_code, duration_ms, timed_out, truncated}`
//! (`stdout_b64` / `stderr_b64` beside output that is not UTF-8).
//!
//! Without `context_id` the interpreter reads the snippet on its stdin and ends. With one,
//! the snippet goes to the caller's long-lived interpreter of that id and language, so a
//! variable set in one run is readable in the next (`services::code_run::contexts`: its
//! driver, bounds and idle closing); `env` is fixed when a context starts.
//!
//! Guards: `language_not_allowed` when `dev_tools.languages` does not list the language;
//! the interpreter runs in the server's working directory (path guard), with the child
//! environment and the caller's `env` (variable guards), and is judged by the command and
//! process guards like any program (an interpreter not on the child's `PATH` is
//! `process_invalid`, as a missing program of `/shell` is); a `bash` or `sh` snippet is judged as a shell line too.
//! `timeout` is in seconds (default 60, at most 3600); output past `process.output_bytes`
//! per stream is dropped and `truncated` set (a context keeps the newest bytes).

use super::Route;
use crate::error::{ApiError, Code};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::launch;
use crate::server::openapi::op::{Answer, Doc, LAUNCH, json_schema};
use crate::server::route::on;
use crate::services::code_run::{self, Launch, contexts};
use crate::services::exec_rules::CommandLine;
use crate::services::output_json::put_bytes;
use axum::Extension;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, run),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/code/run",
    body: ExampleBody::Json(
        r#"{"code": "import sys\nx = 6 * 7\nprint(x)\nprint('note', file=sys.stderr)", "language": "python3", "context_id": "notebook-1"}"#,
    ),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"stdout":"42\n","stderr":"note\n","exit_code":0,"duration_ms":25,"timed_out":false,"truncated":false}"#,
};

/// A run's time limit unless the body gives one, and the most it may ask for.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_TIMEOUT_S: f64 = 3600.0;

pub(super) const DOC: Doc = Doc::new(EndpointId::CodeRun, "Run a snippet")
    .describe("Without `context_id` the interpreter reads the snippet on its stdin and ends; with one, the snippet goes to the caller's long-lived interpreter of that id and language, so state carries over (`env` is fixed when a context starts). The interpreter runs in the server's working directory under the path, variable, command and process guards; a `bash` or `sh` snippet is judged as a shell line too.")
    .json(|g| g.subschema_for::<RunBody>())
    .answers(&[Answer::json("How it ran.", |_| {
        json_schema!({
            "type": "object",
            "required": ["stdout", "stderr", "exit_code", "duration_ms", "timed_out", "truncated"],
            "properties": {
                "stdout": {"type": "string"},
                "stdout_b64": {"type": "string", "contentEncoding": "base64"},
                "stderr": {"type": "string"},
                "stderr_b64": {"type": "string", "contentEncoding": "base64"},
                "exit_code": {"type": ["integer", "null"]},
                "duration_ms": {"type": "integer", "minimum": 0},
                "timed_out": {"type": "boolean"},
                "truncated": {"type": "boolean"},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[LAUNCH, &[Code::LanguageNotAllowed]]);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "CodeRunBody")]
#[serde(deny_unknown_fields)]
struct RunBody {
    #[schemars(required, with = "String", length(min = 1))]
    code: Option<String>,
    /// One `GET /code/languages` lists (and `dev_tools.languages` allows).
    #[schemars(required, with = "String", extend("enum" = ["python3", "bash", "sh", "node"]))]
    language: Option<String>,
    /// Seconds (default 60).
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 3600))]
    timeout: Option<f64>,
    /// The caller's interpreter that keeps state between runs.
    #[schemars(length(min = 1, max = 64))]
    context_id: Option<String>,
    /// Variables over the interpreter's environment.
    #[serde(default)]
    env: BTreeMap<String, String>,
}

fn invalid(param: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidRequest, message).with_param(param)
}

async fn run(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Json(body): Json<RunBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let name = body.language.ok_or_else(|| {
        invalid(
            "language",
            "`language` is required (GET /code/languages lists them)",
        )
    })?;
    let lang = code_run::language(&name)
        .filter(|l| app.settings.dev_tools.allows(l.name))
        .ok_or_else(|| {
            ApiError::new(
                Code::LanguageNotAllowed,
                format!(
                    "language `{name}` is not allowed here (allowed: {})",
                    super::offered(&app).join(", ")
                ),
            )
            .with_param("language")
        })?;
    let code = body
        .code
        .ok_or_else(|| invalid("code", "`code` is required"))?;
    let timeout = match body.timeout {
        None => DEFAULT_TIMEOUT,
        Some(t) if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_S => Duration::from_secs_f64(t),
        Some(t) => {
            return Err(invalid(
                "timeout",
                format!("`timeout` {t} is out of range: seconds, more than 0 and at most 3600"),
            ));
        }
    };
    let cwd = launch::working_dir(&app, None)?;
    let env = launch::child_env(&app, &body.env)?;
    let program = launch::program_path(lang.program, &env, &cwd).ok_or_else(|| {
        ApiError::new(
            Code::ProcessInvalid,
            format!(
                "`{}` is not installed: no `{}` on the child's PATH",
                lang.name, lang.program
            ),
        )
        .with_param("language")
    })?;
    launch::admit_program(&app, &identity, lang.program, &env, &cwd)?;
    if matches!(lang.name, "bash" | "sh") {
        // A shell snippet is a shell line: the command guard sees the programs it runs.
        launch::admit_command(
            &app,
            &identity,
            &CommandLine::Shell(code.clone()),
            &env,
            &cwd,
        )
        .map_err(|e| e.with_param("code"))?;
    }
    let launch = Launch {
        program,
        cwd,
        env,
        timeout,
        output_bytes: app.settings.exec.output_bytes(),
        confine: None,
    };
    let outcome = match &body.context_id {
        None => code_run::run_once(lang, &launch, &code).await.map_err(|e| {
            ApiError::new(Code::ProcessInvalid, format!("cannot start `{}`: {e}", lang.program))
        })?,
        Some(id) => app
            .code_contexts
            .run(&identity.id, id, lang, &launch, &code)
            .await
            .map_err(|e| match e {
                contexts::Error::BadId(why) => invalid("context_id", why),
                contexts::Error::EnvMismatch => invalid(
                    "env",
                    format!("context `{id}` was started with other variables: `env` is fixed when a context starts"),
                ),
                contexts::Error::Io(e) => ApiError::new(
                    Code::ProcessInvalid,
                    format!("context `{id}`: cannot drive `{}`: {e}", lang.program),
                ),
            })?,
    };
    let mut map = Map::new();
    put_bytes(&mut map, "stdout", &outcome.stdout);
    put_bytes(&mut map, "stderr", &outcome.stderr);
    map.insert("exit_code".into(), Value::from(outcome.exit_code));
    map.insert(
        "duration_ms".into(),
        Value::from(outcome.duration.as_millis() as u64),
    );
    map.insert("timed_out".into(), Value::from(outcome.timed_out));
    map.insert("truncated".into(), Value::from(outcome.truncated));
    Ok(axum::Json(Value::Object(map)))
}
