//! `code_languages`: GET /code/languages answers `{languages: [{name, version, installed,
//! allowed}]}` for every language `code_run` knows (python3, bash, sh, node): `installed`
//! when its interpreter is on the child's `PATH`, `version` its version line (null when
//! not installed or it has none, as `sh`), `allowed` when `dev_tools.languages` admits it.

use super::Route;
use super::languages::interpreter;
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::launch;
use crate::server::openapi::op::{Answer, Doc, json_schema};
use crate::server::route::on;
use crate::services::code_run::{self, LANGUAGES, Launch};
use axum::extract::State;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, list),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/code/languages",
    body: ExampleBody::None,
    files: &[],
    status: 200,
    headers: &[("content-type", "application/json")],
    answer: r#"{"languages":[{"name":"python3","version":"Python 3.11.7","installed":true,"allowed":true},{"name":"bash","version":"GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)","installed":true,"allowed":true},{"name":"sh","version":null,"installed":true,"allowed":true},{"name":"node","version":"v20.20.2","installed":true,"allowed":true}]}"#,
};

pub(super) const DOC: Doc = Doc::new(EndpointId::CodeLanguages, "The languages code runs in")
    .describe("Every language `code_run` knows: `installed` when its interpreter is on the child's `PATH`, `version` its version line (null when not installed or it has none), `allowed` when `dev_tools.languages` admits it.")
    .answers(&[Answer::json("The languages.", |_| {
        json_schema!({
            "type": "object",
            "required": ["languages"],
            "properties": {"languages": {"type": "array", "items": {
                "type": "object",
                "required": ["name", "version", "installed", "allowed"],
                "properties": {
                    "name": {"type": "string", "enum": ["python3", "bash", "sh", "node"]},
                    "version": {"type": ["string", "null"]},
                    "installed": {"type": "boolean"},
                    "allowed": {"type": "boolean"},
                },
                "additionalProperties": false,
            }}},
            "additionalProperties": false,
        })
    })]);

async fn list(State(app): State<SharedState>) -> Result<axum::Json<Value>, ApiError> {
    let env = launch::child_env(&app, &BTreeMap::new())?;
    let found = LANGUAGES
        .iter()
        .map(|lang| Ok((lang, interpreter(&app, lang)?)))
        .collect::<Result<Vec<_>, ApiError>>()?;
    // The version probes run side by side: the answer waits for the slowest only.
    let versions = futures::future::join_all(found.iter().map(|(lang, program)| {
        let launch = program.as_ref().map(|program| Launch {
            program: program.clone(),
            cwd: app.base_dir.clone(),
            env: env.clone(),
            timeout: Duration::from_secs(5),
            output_bytes: 4096,
            confine: None,
        });
        async move {
            match launch {
                Some(launch) => code_run::version(lang, &launch).await,
                None => None,
            }
        }
    }))
    .await;
    let languages: Vec<Value> = found
        .iter()
        .zip(versions)
        .map(|((lang, program), version)| {
            json!({
                "name": lang.name,
                "version": version,
                "installed": program.is_some(),
                "allowed": app.settings.dev_tools.allows(lang.name),
            })
        })
        .collect();
    Ok(axum::Json(json!({ "languages": languages })))
}
