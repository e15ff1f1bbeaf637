//! The commands group: the named commands of `template.yaml`, listed and run. The service
//! (`services::commands`) checks and runs; this layer shapes the answer and maps the
//! service's errors to the table.

use crate::error::{ApiError, ApiResult, Code, ErrorCode};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path};
use crate::server::openapi::op::{Answer, Doc, json_schema};
use crate::server::route::{Bound, on};
use crate::services::commands::{CommandError, Ran};
use axum::Extension;
use axum::extract::State;
use axum::routing::MethodFilter;
use serde_json::{Map, Value, json};

impl ErrorCode for CommandError {
    fn error_code(&self) -> Code {
        match self {
            CommandError::UnknownArgument { .. }
            | CommandError::MissingArgument { .. }
            | CommandError::BadArgument { .. } => Code::InvalidRequest,
            CommandError::Unavailable { .. } => Code::CommandUnavailable,
        }
    }

    fn param(&self) -> Option<String> {
        self.arg().map(str::to_owned)
    }
}

/// The answer of `POST /commands/{name}`.
fn ran_json(ran: Ran) -> Value {
    let Ran {
        name,
        argv,
        outcome,
    } = ran;
    json!({
        "name": name,
        "argv": argv,
        "exit_code": outcome.exit_code,
        "signal": outcome.signal,
        "timed_out": outcome.timed_out,
        "stdout": outcome.stdout.text(),
        "stderr": outcome.stderr.text(),
        "truncated": outcome.stdout.truncated || outcome.stderr.truncated,
        "duration_ms": outcome.duration.as_millis() as u64,
    })
}

pub async fn list(State(app): State<SharedState>) -> axum::Json<Value> {
    axum::Json(json!({ "commands": app.settings.commands.list() }))
}

pub async fn run(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(name): Path<String>,
    Json(args): Json<Map<String, Value>>,
) -> ApiResult<axum::Json<Value>> {
    let command = app.settings.commands.get(&name).ok_or_else(|| {
        ApiError::new(
            Code::CommandNotFound,
            format!("no command named `{name}`; GET /commands lists them"),
        )
        .with_param("name")
    })?;
    let needed: Vec<&str> = command.scopes.iter().map(String::as_str).collect();
    if let Some(scope) = identity.missing_scope(&needed) {
        return Err(ApiError::new(
            Code::MissingScope,
            format!(
                "the identity `{}` lacks the scope `{scope}` that command `{name}` needs",
                identity.id
            ),
        )
        .with_endpoint("commands_run"));
    }
    let argv = command.render(&args)?;
    let ran = command.run(argv, &app.settings.child_env).await?;
    Ok(axum::Json(ran_json(ran)))
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    use EndpointId::*;
    Some(match id {
        CommandsList => on(f, list),
        CommandsRun => on(f, run),
        _ => return None,
    })
}

/// The OpenAPI declarations of the commands rows (this file's handlers).
pub fn doc(id: EndpointId) -> Option<&'static Doc> {
    [&LIST, &RUN].into_iter().find(|d| d.id == id)
}

const LIST: Doc = Doc::new(EndpointId::CommandsList, "List the named commands")
    .describe("The commands of `template.yaml`, with their arguments.")
    .answers(&[Answer::json("The commands.", |_| {
        json_schema!({
            "type": "object",
            "required": ["commands"],
            "properties": {"commands": {"type": "array", "items": {
                "type": "object",
                "required": ["name", "description", "args"],
                "properties": {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "args": {"type": "array", "items": {
                        "type": "object",
                        "required": ["name", "type", "required", "description", "default"],
                        "properties": {
                            "name": {"type": "string"},
                            "type": {"type": "string", "enum": ["string", "integer", "number", "boolean"]},
                            "required": {"type": "boolean"},
                            "description": {"type": "string"},
                            "default": {"description": "The value used when the argument is left out (null: none)."},
                            "enum": {"type": "array", "items": {"type": "string"}},
                            "min": {"type": "number"},
                            "max": {"type": "number"},
                            "max_length": {"type": "integer", "minimum": 0},
                        },
                        "additionalProperties": false,
                    }},
                },
                "additionalProperties": false,
            }}},
            "additionalProperties": false,
        })
    })]);

const RUN: Doc = Doc::new(EndpointId::CommandsRun, "Run a named command")
    .describe("The body holds the command's arguments by name, checked against its declaration (`GET /commands`); the command may need scopes of its own.")
    .json(|_| {
        json_schema!({
            "type": "object",
            "description": "The arguments by name: strings, numbers and booleans as declared.",
            "additionalProperties": {"type": ["string", "number", "boolean"]},
        })
    })
    .answers(&[Answer::json("How the command ran.", |_| {
        json_schema!({
            "type": "object",
            "required": ["name", "argv", "exit_code", "signal", "timed_out", "stdout", "stderr", "truncated", "duration_ms"],
            "properties": {
                "name": {"type": "string"},
                "argv": {"type": "array", "items": {"type": "string"}},
                "exit_code": {"type": ["integer", "null"]},
                "signal": {"type": ["integer", "null"]},
                "timed_out": {"type": "boolean"},
                "stdout": {"type": "string"},
                "stderr": {"type": "string"},
                "truncated": {"type": "boolean"},
                "duration_ms": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[&[
        Code::CommandNotFound,
        Code::MissingScope,
        Code::CommandUnavailable,
    ]]);
