//! The Responses routes' bodies (agents spec 4.9): `POST /v1/responses` (also the socket's
//! `response.create`) and `POST /v1/responses/compact`. The keys are typed here; `input`
//! and `tools` stay as given and are judged by `request`, which names the failing part
//! (`input[1].role`, `tools[0].type`: a function tool is refused for its type, before its
//! other keys).

use crate::server::agents::wire::{
    ErrorObject, InputText, Metadata, Object, TextFormat, UsageObject, given,
};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// `POST /v1/responses`: the OpenAI Responses request, what runs locally.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ResponseCreate")]
pub struct ResponseCreate {
    /// A definition id, a model id or a runtime name.
    #[schemars(required, with = "String", regex(pattern = r"\S"))]
    pub model: Option<String>,
    /// Required (refused typed when absent), as the OpenAI SDK always sends it.
    #[serde(default)]
    #[schemars(with = "InputText")]
    pub input: Option<Value>,
    pub instructions: Option<String>,
    #[serde(default)]
    #[schemars(with = "Metadata")]
    pub metadata: Option<Metadata>,
    pub store: Option<bool>,
    pub background: Option<bool>,
    pub stream: Option<bool>,
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub stream_options: Option<Value>,
    pub previous_response_id: Option<String>,
    #[schemars(with = "Option<Vec<ResponseMcpTool>>")]
    pub tools: Option<Value>,
    #[schemars(with = "Option<Reasoning>")]
    pub reasoning: Option<Object<Reasoning>>,
    #[schemars(with = "Option<TextParam>")]
    pub text: Option<Object<TextParam>>,
    #[schemars(extend("enum" = ["auto", "default", null]))]
    pub service_tier: Option<String>,
    #[schemars(with = "Option<String>", extend("enum" = ["auto", null]))]
    pub tool_choice: Option<Value>,
    #[schemars(length(max = 0))]
    pub include: Option<Vec<Value>>,
    /// Needs the hosted platform.
    #[serde(default)]
    #[schemars(with = "()")]
    pub conversation: Option<Value>,
    /// Needs the hosted platform.
    #[serde(default)]
    #[schemars(with = "()")]
    pub prompt: Option<Value>,
    pub parallel_tool_calls: Option<Value>,
    /// Ignored (named in `x-svc-ignored-params`).
    pub temperature: Option<Value>,
    /// Ignored.
    pub top_p: Option<Value>,
    /// Ignored.
    pub max_output_tokens: Option<Value>,
}

/// `reasoning`: its `effort` reaches the runtime; `summary` is refused. Other keys are let
/// through, as the hand reader always did.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct Reasoning {
    pub effort: Option<String>,
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "()")]
    pub summary: Option<Value>,
}

/// `text`: only the `text` format at `medium` verbosity runs locally.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[schemars(rename = "ResponseTextParam")]
pub struct TextParam {
    /// Only `{type: text}`.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub format: Option<Value>,
    #[schemars(extend("enum" = ["medium", null]))]
    pub verbosity: Option<Value>,
}

/// An MCP tool as the Responses API gives it (read by `request::tools`).
pub struct ResponseMcpTool;

impl JsonSchema for ResponseMcpTool {
    fn schema_name() -> Cow<'static, str> {
        "ResponseMcpTool".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "required": ["type", "server_label", "server_url"],
            "properties": {
                "type": {"const": "mcp"},
                "server_label": {"type": "string"},
                "server_url": {"type": "string"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "authorization": {"type": "string"},
                "require_approval": {},
                "server_description": {"type": "string"},
            },
            "additionalProperties": false,
        })
    }
}

/// `POST /v1/responses/compact`: the conversation to compact (rt-two only).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ResponseCompact")]
pub struct CompactBody {
    #[schemars(required, with = "String")]
    pub previous_response_id: Option<String>,
    pub model: Option<String>,
    pub instructions: Option<String>,
    pub service_tier: Option<String>,
    pub prompt_cache_key: Option<Value>,
    pub prompt_cache_options: Option<Value>,
    pub prompt_cache_retention: Option<Value>,
}

/// A response as the OpenAI SDK's `Response` reads it (`shape::response` builds it).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "ResponseObject")]
pub struct ResponseObject {
    pub id: String,
    #[schemars(extend("const" = "response"))]
    pub object: &'static str,
    /// Unix seconds.
    pub created_at: i64,
    #[schemars(extend("enum" = ["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]))]
    pub status: &'static str,
    pub background: bool,
    pub error: Option<ErrorObject>,
    pub incomplete_details: Option<IncompleteDetails>,
    pub instructions: Option<String>,
    /// Not applied locally.
    #[schemars(with = "()")]
    pub max_output_tokens: Option<u64>,
    pub metadata: serde_json::Map<String, Value>,
    pub model: String,
    pub model_resolved: bool,
    /// Messages, reasoning, command executions, MCP calls and other tool calls.
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    pub output: Vec<Value>,
    pub parallel_tool_calls: bool,
    pub previous_response_id: Option<String>,
    pub reasoning: ResponseReasoning,
    #[schemars(extend("const" = "auto"))]
    pub service_tier: &'static str,
    pub store: bool,
    /// Not applied locally.
    #[schemars(with = "()")]
    pub temperature: Option<f64>,
    pub text: TextFormat,
    #[schemars(extend("const" = "auto"))]
    pub tool_choice: &'static str,
    pub tools: Vec<ResponseToolShown>,
    /// Not applied locally.
    #[schemars(with = "()")]
    pub top_p: Option<f64>,
    #[schemars(extend("const" = "disabled"))]
    pub truncation: &'static str,
    pub usage: Option<UsageObject>,
    pub x_svc: ResponseLocal,
}

/// Why a response stopped short: its output was cut at `SVC_AGENTS_MAX_OUTPUT_BYTES`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IncompleteDetails {
    #[schemars(extend("const" = "max_output_tokens"))]
    pub reason: &'static str,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "ResponseReasoningShown")]
pub struct ResponseReasoning {
    pub effort: Option<String>,
    /// Not offered locally.
    #[schemars(with = "()")]
    pub summary: Option<String>,
}

/// A tool as answered: its secrets (`headers`, `authorization`) are never shown.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResponseToolShown {
    #[serde(rename = "type")]
    #[schemars(extend("const" = "mcp"))]
    pub kind: &'static str,
    pub server_label: String,
    pub server_url: String,
}

/// How the response ran here: a turn of a local session.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResponseLocal {
    #[schemars(extend("const" = "local_process"))]
    pub compute: &'static str,
    pub runtime: &'static str,
    pub model_resolved: bool,
    pub session_id: String,
    pub turn_id: String,
}
