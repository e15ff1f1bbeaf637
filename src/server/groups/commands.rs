//! The commands group: the named commands of `template.yaml`, listed and run. The service
//! (`services::commands`) checks and runs; this layer shapes the answer and maps the
//! service's errors to the table.

use crate::error::{ApiError, ApiResult, Code, ErrorCode};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path};
use crate::services::commands::{CommandError, Ran};
use axum::Extension;
use axum::extract::State;
use axum::routing::{MethodFilter, MethodRouter, on};
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
pub fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    use EndpointId::*;
    Some(match id {
        CommandsList => on(f, list),
        CommandsRun => on(f, run),
        _ => return None,
    })
}
