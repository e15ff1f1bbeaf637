//! `system_env_set`: POST /system/env `{set: {NAME: value}, unset: [NAME]}` changes the
//! environment of every child started later (shells, processes, terminals, code runs;
//! running ones keep theirs) and answers the new view like `GET /system/env`. The names
//! pass the variable guards of every route that takes `env` (`env_var_denied`,
//! `env_var_not_allowed`, `env_invalid`), unset ones too: a name a caller may not set, it
//! may not remove either (`PATH`, `HOME`, ...). Nothing changes unless all pass.

use super::Route;
use super::env::view;
use crate::error::{ApiError, Code};
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Doc, JsonSchema};
use crate::server::route::on;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, set),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/system/env",
    body: ExampleBody::Json(r#"{"set": {"APP_MODE": "staging"}, "unset": ["LANG"]}"#),
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"env":{"APP_MODE":"staging","HOME":"/home/agent","PATH":"/usr/local/bin:/usr/bin:/bin"}}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::SystemEnvSet, "Change the children's environment")
    .describe("Changes the environment of every child started later (running ones keep theirs). The names pass the variable guards, unset ones too; nothing changes unless all pass.")
    .json(|g| g.subschema_for::<EnvChange>())
    .answers(&[Answer::json("The new environment.", super::env::view_schema)])
    .errors(&[&[Code::EnvInvalid, Code::EnvVarDenied, Code::EnvVarNotAllowed]]);

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "SystemEnvSetBody")]
#[serde(deny_unknown_fields)]
struct EnvChange {
    /// Variables to set, by name.
    #[schemars(extend("propertyNames" = {"minLength": 1}))]
    #[serde(default)]
    set: BTreeMap<String, String>,
    #[serde(default)]
    /// Names to remove.
    #[schemars(extend("items" = {"type": "string", "minLength": 1}))]
    unset: Vec<String>,
}

async fn set(
    State(app): State<SharedState>,
    Json(body): Json<EnvChange>,
) -> Result<axum::Json<Value>, ApiError> {
    if let Some(both) = body.unset.iter().find(|n| body.set.contains_key(*n)) {
        return Err(
            ApiError::new(Code::EnvInvalid, format!("`{both}` is both set and unset"))
                .with_param("unset"),
        );
    }
    app.settings
        .exec
        .judge_env(&body.set)
        .map_err(|e| ApiError::from(e).with_param("set"))?;
    let empty = String::new();
    app.settings
        .exec
        .judge_env(body.unset.iter().map(|name| (name, &empty)))
        .map_err(|e| ApiError::from(e).with_param("unset"))?;
    app.env_overlay.change(&body.set, &body.unset);
    Ok(axum::Json(view(&app)))
}
