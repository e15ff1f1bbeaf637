//! The session routes' bodies (agents spec 2.3, 4.2): create, update and input events. The
//! group reads them through its typed extractor and documents them from these types. The
//! inline `agent` is a definition's body without `metadata` (one list of agent fields,
//! judged by `agent_spec::build` for both); `input` is judged by `input::input_text`, which
//! names the failing part.

use crate::error::ApiError;
use crate::error::Code;
use crate::server::agents::definitions::wire::DefinitionBody;
use crate::server::agents::environments::wire::{EnvironmentConfig, unknown};
use crate::server::agents::input::{SessionInput, content_text, input_text, invalid};
use crate::server::agents::wire::{
    ErrorObject, InputText, Metadata, Object, TextFormat, UsageObject,
};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/agents/sessions`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "SessionCreate",
    extend(
        "if" = {"required": ["stream_options"], "properties": {"stream_options": {"type": "object"}}},
        "then" = {"required": ["stream"], "properties": {"stream": {"const": true}}}
    )
)]
pub struct SessionCreate {
    #[serde(default)]
    #[schemars(schema_with = "session_agent")]
    pub agent: Option<Object<DefinitionBody>>,
    /// A saved definition (instead of `agent`).
    pub agent_id: Option<String>,
    pub adapter: Option<String>,
    pub runtime: Option<String>,
    /// The first turn's input. Documented as never `null` (which reads as absent): a
    /// streamed create without input follows the session until input comes later.
    #[serde(default)]
    #[schemars(with = "InputText")]
    pub input: Option<Value>,
    #[serde(default)]
    #[schemars(with = "Metadata")]
    pub metadata: Option<Metadata>,
    #[schemars(with = "Option<EnvironmentConfig>")]
    pub environment: Option<Object<EnvironmentConfig>>,
    pub environment_template_id: Option<String>,
    pub vault_ids: Option<Vec<String>>,
    /// Answer the session's events as SSE through its first turn.
    pub stream: Option<bool>,
    #[schemars(with = "Option<StreamOptions>")]
    pub stream_options: Option<Object<StreamOptions>>,
}

impl SessionCreate {
    /// Whether the events are asked for as a stream; `stream_options` only with it.
    pub fn wants_stream(&self) -> Result<bool, ApiError> {
        let stream = self.stream.unwrap_or(false);
        if self.stream_options.is_some() && !stream {
            return Err(invalid(
                "stream_options",
                "`stream_options` is only allowed when `stream` is true",
            ));
        }
        Ok(stream)
    }

    /// The inline agent's given keys (`null` included), what `agent_spec::build` reads;
    /// `metadata` belongs to the session, never to its inline agent.
    pub fn agent_fields(&self) -> Result<serde_json::Map<String, Value>, ApiError> {
        let Some(Object(agent)) = &self.agent else {
            return Ok(serde_json::Map::new());
        };
        if agent.metadata.is_some() {
            return Err(unknown("agent.metadata"));
        }
        Ok(agent.to_map())
    }
}

/// A definition's fields as a session's inline agent takes them: all but `metadata`.
fn session_agent(g: &mut SchemaGenerator) -> Schema {
    let mut schema = DefinitionBody::json_schema(g);
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.remove("metadata");
    }
    schema
}

/// `stream_options`: `include_obfuscation` is accepted and has nothing to pad locally.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamOptions {
    pub include_obfuscation: Option<bool>,
}

/// The update of a session: only its `metadata`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SessionUpdate")]
pub struct SessionUpdate {
    #[serde(default, deserialize_with = "crate::server::agents::wire::given")]
    #[schemars(with = "Metadata")]
    pub metadata: Option<Metadata>,
}

/// `POST .../events`: one `input`, or a list of `events`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SessionEvents")]
pub struct EventsBody {
    /// One message (instead of `events`).
    #[schemars(with = "Option<InputText>")]
    pub input: Option<Value>,
    #[schemars(with = "Option<Vec<EventParam>>", length(min = 1))]
    pub events: Option<Vec<Object<EventParam>>>,
}

/// One input event: a message (`input`, `content` or `text`) or a cancel. Other kinds are
/// refused for their `type` whatever else they hold (a tool result names `tool_use_id`), so
/// the keys beside a message's are kept and judged once the kind is known.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[schemars(rename = "SessionEventParam")]
pub struct EventParam {
    #[serde(rename = "type")]
    #[schemars(required, with = "String", extend("enum" = [
        "agent.session.input.message", "input.message",
        "agent.session.input.cancel", "input.cancel",
    ]))]
    pub kind: Option<Value>,
    #[schemars(with = "Option<InputText>")]
    pub input: Option<Value>,
    pub content: Option<Value>,
    #[schemars(with = "Option<InputText>")]
    pub text: Option<Value>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: serde_json::Map<String, Value>,
}

impl EventsBody {
    /// The inputs in order: messages with their text, and cancels.
    pub fn read(&self) -> Result<Vec<SessionInput>, ApiError> {
        let body = self;
        let list = match (&body.input, &body.events) {
            (Some(input), None) => {
                return Ok(vec![SessionInput::Message(input_text(input, "input")?)]);
            }
            (Some(_), Some(_)) => {
                return Err(invalid("input", "unknown or unsupported parameter `input`"));
            }
            (None, Some(list)) if !list.is_empty() => list,
            (None, _) => {
                return Err(invalid(
                    "events",
                    "`events` must be a non-empty array of events",
                ));
            }
        };
        let mut out = Vec::new();
        for (i, Object(event)) in list.iter().enumerate() {
            let param = format!("events[{i}]");
            let kind = event
                .kind
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or_default();
            match kind {
                "agent.session.input.message" | "input.message" => {
                    if let Some(key) = event.other.keys().next() {
                        return Err(unknown(&format!("{param}.{key}")));
                    }
                    let text = if let Some(v) = &event.input {
                        input_text(v, &format!("{param}.input"))?
                    } else if let Some(v) = &event.content {
                        content_text(v, &format!("{param}.content"))?
                    } else if let Some(v) = &event.text {
                        input_text(v, &format!("{param}.text"))?
                    } else {
                        return Err(invalid(
                            param,
                            "a message event needs `input`, `content` or `text`",
                        ));
                    };
                    if text.trim().is_empty() {
                        return Err(invalid(param, "the message has no text"));
                    }
                    out.push(SessionInput::Message(text));
                }
                "agent.session.input.cancel" | "input.cancel" => out.push(SessionInput::Cancel),
                "agent.session.input.tool_result"
                | "tool_result"
                | "agent.session.input.computer_use_approval_request_result"
                | "computer_use_approval_request_result" => {
                    return Err(ApiError::new(
                        Code::ToolResultUnsupported,
                        format!("`{kind}`: local runtimes run their own tools; no tool result can be sent to them"),
                    )
                    .with_param(format!("{param}.type")));
                }
                _ => {
                    return Err(invalid(
                        format!("{param}.type"),
                        format!(
                            "unknown event type `{kind}` (send agent.session.input.message or agent.session.input.cancel)"
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::agents::wire::read;
    use serde_json::json;

    fn events(body: &Value) -> Result<Vec<SessionInput>, ApiError> {
        read::<EventsBody>(body, "")?.read()
    }

    #[test]
    fn sdk_message_events_and_shortcuts() {
        let sdk = json!({"events":[{"type":"agent.session.input.message","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}]},{"type":"agent.session.input.cancel"}]});
        assert_eq!(
            events(&sdk).unwrap(),
            [SessionInput::Message("hi".into()), SessionInput::Cancel]
        );
        assert_eq!(
            events(&json!({"input": "yo"})).unwrap(),
            [SessionInput::Message("yo".into())]
        );
        assert_eq!(
            events(&json!({"events":[{"type":"input.message","text":"t"}]})).unwrap(),
            [SessionInput::Message("t".into())]
        );
    }

    #[test]
    fn refusals_name_their_param() {
        let e = events(&json!({"events":[{"type":"tool_result"}]})).unwrap_err();
        assert_eq!(e.code, Code::ToolResultUnsupported);
        let e = events(&json!({"events":[{"type":"input.message","content":[{"type":"input_image","image_url":"x"}]}]})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("events[0].content[0].type"));
        let e = events(&json!({"events":[]})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("events"));
        let e = events(&json!({"events":[{"type":"dance"}]})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("events[0].type"));
    }

    /// The inline agent is a definition's body without `metadata`; `stream_options` needs
    /// `stream: true`.
    #[test]
    fn a_session_body_refuses_in_the_domains_words() {
        let body: SessionCreate =
            read(&json!({"agent": {"model": "rt-one", "metadata": {}}}), "").unwrap();
        assert_eq!(
            body.agent_fields().unwrap_err().param.as_deref(),
            Some("agent.metadata")
        );
        let e = read::<SessionCreate>(&json!({"agent": {"modle": "x"}}), "").unwrap_err();
        assert_eq!(e.param.as_deref(), Some("agent.modle"));
        let body: SessionCreate = read(&json!({"stream_options": {}}), "").unwrap();
        assert_eq!(
            body.wants_stream().unwrap_err().param.as_deref(),
            Some("stream_options")
        );
        let e = read::<SessionCreate>(&json!({"vault_ids": [1]}), "").unwrap_err();
        assert_eq!(e.param.as_deref(), Some("vault_ids[0]"));
    }

    #[test]
    fn an_unknown_key_in_an_event_is_named() {
        let e = events(&json!({"events":[{"type":"input.message","text":"t","x":1}]})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("events[0].x"));
        let e = events(&json!({"input": "a", "events": []})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("input"));
    }
}

/// A session as every session route answers it (`SessionState::to_json` builds it).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentSession")]
pub struct SessionObject {
    pub id: String,
    #[schemars(extend("const" = "agent.session"))]
    pub object: &'static str,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub last_active_at: i64,
    #[schemars(extend("enum" = ["idle", "in_progress", "failed"]))]
    pub status: &'static str,
    pub agent: SessionAgent,
    pub environment: SessionEnvironment,
    pub metadata: serde_json::Map<String, Value>,
    pub usage: Option<UsageObject>,
    pub vault_ids: Vec<String>,
    /// Why the session failed, in the runtime's words.
    pub error: Option<String>,
    pub required_actions: [Value; 0],
    pub x_svc: SessionLocal,
}

/// The agent a session runs: its own copy, whatever happens to a definition later.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionAgent {
    /// The definition's id, or the session's own agent's.
    pub id: String,
    pub name: Option<String>,
    pub model: String,
    pub instructions: Option<String>,
    /// Header values are shown as `***`.
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    pub tools: Vec<Value>,
    pub multi_agent: MultiAgent,
    pub reasoning: ReasoningShown,
    pub service_tier: String,
    pub text: TextFormat,
}

/// Multi-agent runs are not offered locally.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MultiAgent {
    #[schemars(extend("const" = false))]
    pub enabled: bool,
}

/// `effort` when one was asked for (rt-one), else an empty object.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReasoningShown {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// Where the session's runtime works.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionEnvironment {
    #[serde(rename = "type")]
    #[schemars(extend("const" = "self_hosted"))]
    pub kind: &'static str,
    /// The environment's id; `env_local` for the default workspace.
    pub id: String,
    pub workspace_directory: std::path::PathBuf,
    pub capability_directories: [Value; 0],
    pub remote_url: &'static str,
}

/// How the session runs here: a local process of its runtime.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionLocal {
    #[schemars(extend("const" = "local_process"))]
    pub compute: &'static str,
    pub runtime: &'static str,
    pub model_resolved: bool,
    /// The runtime's own conversation id, once it said it.
    pub thread_id: Option<String>,
    pub differences: Vec<String>,
}

/// A turn: one input run to its end.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentTurn")]
pub struct TurnObject {
    pub id: String,
    #[schemars(extend("const" = "agent.session.turn"))]
    pub object: &'static str,
    pub session_id: String,
    pub agent_id: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub started_at: Option<i64>,
    /// Unix seconds.
    pub completed_at: Option<i64>,
    #[schemars(extend("enum" = ["queued", "in_progress", "completed", "failed", "cancelled"]))]
    pub status: &'static str,
    pub usage: Option<UsageObject>,
    pub error: Option<ErrorObject>,
    /// No sub-agents run locally.
    #[schemars(with = "()")]
    pub subagent_id: Option<String>,
    pub x_svc: TurnLocal,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TurnLocal {
    pub runtime: &'static str,
    /// The input waited for the turn before it instead of steering it.
    pub queued_not_steered: bool,
    pub exit_code: Option<i32>,
    /// The runtime wrote more than `SVC_AGENTS_MAX_OUTPUT_BYTES` in one event.
    /// Only when true (`default` tells the document the key may be absent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_truncated: bool,
}

/// A file a turn wrote in the workspace.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentArtifact")]
pub struct ArtifactObject {
    pub id: String,
    #[schemars(extend("const" = "agent.session.artifact"))]
    pub object: &'static str,
    pub session_id: String,
    pub turn_id: String,
    pub environment_id: String,
    /// `/workspace/<relative>`, whatever the real directory.
    pub path: String,
    pub size_bytes: usize,
    /// Unix seconds.
    pub created_at: i64,
}
