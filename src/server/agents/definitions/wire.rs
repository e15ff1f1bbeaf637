//! The definition routes' body and answer. The body's keys are typed here; the agent
//! fields' values are judged by `agent_spec::build`, which sessions share and which names
//! the failing key (`tools[0].transport.server_url`, `reasoning.effort`): the body is kept
//! as given (`to_map`) so an update merges the given keys over the saved ones.

use crate::server::agents::wire::{McpToolParam, Metadata, given};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `POST /v1/agents` (`model` required) and its update (the given fields over the saved
/// ones; the runtime stays, so `adapter` and `runtime` are refused there).
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionBody {
    /// A runtime (`rt-one`, `rt-two`, an alias) or a model the runtime resolves.
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub model: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub name: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub instructions: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Metadata")]
    pub metadata: Option<Metadata>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<Vec<McpToolParam>>")]
    pub tools: Option<Value>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "reasoning")]
    pub reasoning: Option<Value>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "multi_agent")]
    pub multi_agent: Option<Value>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("enum" = ["auto", "default", null]), with = "Option<String>")]
    pub service_tier: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "text")]
    pub text: Option<Value>,
    /// The runtime, when `model` does not say it (also `X-Svc-Adapter`); create only.
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub adapter: Option<Option<String>>,
    /// Create only.
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub runtime: Option<Option<String>>,
}

impl DefinitionBody {
    /// The given keys as JSON (`null` included), what `agent_spec::build` reads and an
    /// update merges into.
    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }
}

/// Shared with a session's inline `agent` (`groups::agents::schemas`).
pub fn reasoning(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["object", "null"], "properties": {
        "effort": {"type": ["string", "null"], "enum": ["minimal", "low", "medium", "high", null], "description": "rt-one only."},
        "summary": {"type": "null"},
    }, "additionalProperties": false})
}

/// Shared with a session's inline `agent` (`groups::agents::schemas`).
pub fn multi_agent(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["object", "null"], "properties": {"enabled": {"const": false}}})
}

/// Shared with a session's inline `agent` (`groups::agents::schemas`).
pub fn text(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["object", "null"], "properties": {
        "verbosity": {"const": "medium"},
        "format": {"type": "object", "properties": {"type": {"const": "text"}}},
    }, "additionalProperties": false})
}

/// A saved definition.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentDefinition {
    pub id: String,
    #[schemars(extend("const" = "agent"))]
    pub object: &'static str,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub updated_at: i64,
    pub name: Option<String>,
    pub model: String,
    pub instructions: Option<String>,
    pub metadata: Map<String, Value>,
    /// Header values shown as `***`.
    pub tools: Vec<Value>,
    pub reasoning: Reasoning,
    pub multi_agent: MultiAgent,
    pub service_tier: String,
    pub text: Text,
    pub x_svc: DefinitionXSvc,
}

/// `{}`, or the effort rt-one runs with.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentDefinitionReasoning")]
pub struct Reasoning {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// Always off: local runtimes manage their own sub-agents.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentDefinitionMultiAgent")]
pub struct MultiAgent {
    #[schemars(extend("const" = false))]
    pub enabled: bool,
}

/// Always plain text at medium verbosity.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentDefinitionText")]
pub struct Text {
    pub format: TextFormat,
    #[schemars(extend("const" = "medium"))]
    pub verbosity: &'static str,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentDefinitionTextFormat")]
pub struct TextFormat {
    #[serde(rename = "type")]
    #[schemars(extend("const" = "text"))]
    pub kind: &'static str,
}

/// Where a definition lives and what it runs.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentDefinitionXSvc")]
pub struct DefinitionXSvc {
    pub compute: &'static str,
    pub runtime: &'static str,
    /// Whether `model` is a model the runtime's CLI is given (else it named the runtime).
    pub model_resolved: bool,
}

/// A model as `GET /v1/models` lists it: a runtime, or one of the caller's definitions.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "Model")]
pub struct ModelObject {
    pub id: String,
    #[schemars(extend("const" = "model"))]
    pub object: &'static str,
    /// Unix seconds.
    pub created: i64,
    #[schemars(extend("const" = "svc-local"))]
    pub owned_by: &'static str,
    pub x_svc: ModelLocal,
}

/// What the model is here.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ModelLocal {
    /// `runtime` or `agent_definition`.
    #[schemars(extend("enum" = ["runtime", "agent_definition"]))]
    pub kind: &'static str,
    pub runtime: String,
    /// A definition's own `model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl ModelObject {
    pub fn runtime(id: &str, runtime: &str, created: i64) -> ModelObject {
        ModelObject {
            id: id.to_owned(),
            object: "model",
            created,
            owned_by: "svc-local",
            x_svc: ModelLocal {
                kind: "runtime",
                runtime: runtime.to_owned(),
                model: None,
            },
        }
    }

    pub fn definition(definition: &AgentDefinition) -> ModelObject {
        ModelObject {
            id: definition.id.clone(),
            object: "model",
            created: definition.created_at,
            owned_by: "svc-local",
            x_svc: ModelLocal {
                kind: "agent_definition",
                runtime: definition.x_svc.runtime.to_string(),
                model: Some(definition.model.clone()),
            },
        }
    }
}
