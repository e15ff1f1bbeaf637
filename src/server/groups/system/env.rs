//! The environment view both `env` routes answer: what a child started now gets (the
//! operator's child base with the changes made through `POST /system/env`), never the
//! server's own variables; values of secret-like names (the variable rule's
//! `env_rules::secret_like`) and values holding a URL's password (`secret_value`) shown
//! as `***`.

use crate::server::AppState;
use crate::server::openapi::op::{Schema, SchemaGenerator, json_schema};
use crate::services::env_rules::{secret_like, secret_value};
use serde_json::{Map, Value, json};

/// The view both routes answer, for the OpenAPI document.
pub fn view_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "required": ["env"],
        "properties": {"env": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "By name; secret-like values are `***`.",
        }},
        "additionalProperties": false,
    })
}

/// What a masked value reads as.
pub const MASK: &str = "***";

pub fn view(app: &AppState) -> Value {
    let env: Map<String, Value> = app
        .env_overlay
        .view(&app.settings.child_env)
        .into_iter()
        .map(|(name, value)| {
            let shown = if secret_like(&name) || secret_value(&value) {
                MASK.to_owned()
            } else {
                value
            };
            (name, Value::String(shown))
        })
        .collect();
    json!({ "env": env })
}
