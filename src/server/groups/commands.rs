use crate::error::{ApiError, ApiResult, Code};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Json, Path};
use axum::Extension;
use axum::extract::State;
use axum::routing::{MethodFilter, MethodRouter, on};
use serde_json::{Map, Value, json};

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
    command
        .run(argv, &app.settings.child_env)
        .await
        .map(axum::Json)
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
