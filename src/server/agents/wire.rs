//! Pieces every typed agents body shares: metadata as it is given, "given, even as null",
//! and the deleted object. A leaf: each resource's own request and answer types sit beside
//! its code (`vaults/wire.rs`, ...), and the group's OpenAPI document is derived from them.

use crate::error::ApiError;
use crate::server::agents::input;
use crate::server::extract::json_refusal;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::DeserializeOwned;
use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::error::Category;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A JSON object read as `T`, and nothing else. A derived struct also reads an array of
/// its fields in order (`["team"]` as a vault named "team"), which no agents body ever
/// accepted: every body, and every object inside one, is read through this.
#[derive(Debug)]
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Object<T>, D::Error> {
        struct Only<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
            type Value = T;

            // serde's "a map": the body extractor words it "`x` must be an object".
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Only(PhantomData)).map(Object)
    }
}

// Written back as the object it was (the digest of an input body reads it so).
impl<T: Serialize> Serialize for Object<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// `metadata` as given (`null` included): its rules and their messages are
/// `input::metadata`'s, read by [`Metadata::read`], so they stay one copy for the typed and
/// the hand-read bodies alike.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Metadata(pub Value);

impl Metadata {
    /// The stored form: string values, `null` as no metadata.
    pub fn read(&self, param: &str) -> Result<Map<String, Value>, ApiError> {
        input::metadata(Some(&self.0).filter(|v| !v.is_null()), param)
    }
}

impl JsonSchema for Metadata {
    fn schema_name() -> Cow<'static, str> {
        "Metadata".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "maxProperties": 16,
            "propertyNames": {"minLength": 1, "maxLength": 64},
            "additionalProperties": {"anyOf": [{"type": "string", "maxLength": 512}, {"type": ["number", "boolean"]}]},
            "description": "Up to 16 keys of 1 to 64 characters, values up to 512 (numbers and booleans are kept as their text).",
        })
    }
}

/// An MCP tool over http, as a session, a definition or a response takes it (read by
/// `agent_spec::tools`, which names the failing tool and key).
pub struct McpToolParam;

impl JsonSchema for McpToolParam {
    fn schema_name() -> Cow<'static, str> {
        "McpToolParam".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "required": ["type", "server_label", "transport"],
            "properties": {
                "type": {"const": "mcp"},
                "server_label": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                "transport": {
                    "type": "object",
                    "required": ["type", "server_url"],
                    "properties": {
                        "type": {"const": "http", "description": "stdio servers are refused."},
                        "server_url": {"type": "string", "pattern": "^https?://"},
                        "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Secret values: shown as `***`."},
                    },
                    "additionalProperties": false,
                },
                "required": {"type": "boolean"},
                "connection_origin": {},
                "request_metadata": {"type": ["object", "null"]},
                "credential_id": {"type": ["string", "null"], "description": "The attached vault credential that serves this server."},
                "allowed_tools": {"type": "null", "description": "Not supported: every tool of the server is offered."},
            },
            "additionalProperties": false,
        })
    }
}

/// A message input: a string, a message, or a list of messages (text only); read by
/// `input::input_text`, which names the failing part.
pub struct InputText;

impl JsonSchema for InputText {
    fn schema_name() -> Cow<'static, str> {
        "InputText".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let message = g.subschema_for::<InputMessage>();
        json_schema!({
            "description": "A string, a message `{role, content}` or a list of them; `content` a string or `input_text` parts.",
            "anyOf": [
                {"type": "string", "minLength": 1, "pattern": "\\S"},
                message,
                {"type": "array", "minItems": 1, "items": message},
            ],
        })
    }
}

/// One input message: text only (images and files are refused).
pub struct InputMessage;

impl JsonSchema for InputMessage {
    fn schema_name() -> Cow<'static, str> {
        "InputMessage".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "role": {"enum": ["user", "system", "developer"]},
                "type": {"const": "message"},
                "content": {"anyOf": [
                    {"type": "string", "minLength": 1, "pattern": "\\S"},
                    {"type": "array", "minItems": 1, "items": {
                        "type": "object",
                        "required": ["type", "text"],
                        "properties": {"type": {"enum": ["input_text", "text"]}, "text": {"type": "string", "minLength": 1, "pattern": "\\S"}},
                    }},
                ]},
                "text": {"type": "string", "minLength": 1, "pattern": "\\S"},
            },
            "anyOf": [{"required": ["content"]}, {"required": ["text"]}],
            "additionalProperties": false,
        })
    }
}

/// For `#[serde(default, deserialize_with = "given")]`: `Some` whenever the key is there,
/// `null` included, so an update can tell "clear it" (`null`) from "leave it" (absent).
pub fn given<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// What a delete answers: `{id, object: "<kind>.deleted", deleted: true}`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    pub id: String,
    #[schemars(regex(pattern = r"\.deleted$"))]
    pub object: &'static str,
    #[schemars(extend("const" = true))]
    pub deleted: bool,
}

impl Deleted {
    pub fn new(id: &str, object: &'static str) -> Deleted {
        Deleted {
            id: id.to_owned(),
            object,
            deleted: true,
        }
    }
}

/// A part of a body still read by hand (`prefix` is where it stands, `environment` in a
/// session) read as its type, refused in the same words as a typed body.
pub fn read<T: DeserializeOwned>(value: &Value, prefix: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize::<_, Object<T>>(value)
        .map(|Object(typed)| typed)
        .map_err(|e| refusal(&e, prefix))
}

/// A JSON value that is not the type (`prefix` names where it stands, empty for a whole
/// body): the domain's words where serde's data errors have
/// them, the types' own words (custom errors) as they are, and the server's wording for
/// what is not JSON at all.
pub fn refusal(e: &serde_path_to_error::Error<serde_json::Error>, prefix: &str) -> ApiError {
    let inner = e.inner();
    if inner.classify() != Category::Data {
        return json_refusal(e);
    }
    let text = inner.to_string();
    let location = format!(" at line {} column {}", inner.line(), inner.column());
    let detail = text.strip_suffix(&location).unwrap_or(&text);
    let param = match (e.path().to_string(), prefix) {
        (root, "") if root == "." || root.is_empty() => {
            return match detail.starts_with("invalid type: ") {
                true => ApiError::invalid("body", "`body` must be an object"),
                false => json_refusal(e),
            };
        }
        (root, _) if root == "." || root.is_empty() => prefix.to_owned(),
        (path, "") => path,
        (path, _) => format!("{prefix}.{path}"),
    };
    if detail.starts_with("unknown field `") {
        return ApiError::invalid(
            param.clone(),
            format!("unknown or unsupported parameter `{param}`"),
        );
    }
    let Some(expected) = detail
        .strip_prefix("invalid type: ")
        .and_then(|d| d.split_once(", expected ").map(|(_, x)| x))
    else {
        return ApiError::invalid(param, detail.to_owned());
    };
    let kind = match expected {
        "a string" => "a string",
        "a boolean" => "a boolean",
        "a sequence" => "an array",
        x if x.starts_with("struct ") || x == "a map" => "an object",
        _ => return json_refusal(e),
    };
    ApiError::invalid(param.clone(), format!("`{param}` must be {kind}"))
}

/// Tokens a turn, a session or a response used, as the OpenAI Responses API counts them.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentUsage")]
pub struct UsageObject {
    pub input_tokens: u64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct InputTokensDetails {
    pub cached_tokens: u64,
    /// Not reported by local runtimes: 0.
    pub cache_write_tokens: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OutputTokensDetails {
    /// Not reported by local runtimes: 0.
    pub reasoning_tokens: u64,
}

/// A turn's or a response's failure: always `server_error` with the runtime's words.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorObject {
    #[schemars(extend("const" = "server_error"))]
    pub code: &'static str,
    pub message: String,
}

impl ErrorObject {
    pub fn server(message: &str) -> ErrorObject {
        ErrorObject {
            code: "server_error",
            message: message.to_owned(),
        }
    }
}

/// The one text format local runtimes answer in.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TextFormat {
    pub format: TextType,
    #[schemars(extend("const" = "medium"))]
    pub verbosity: &'static str,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TextType {
    #[serde(rename = "type")]
    #[schemars(extend("const" = "text"))]
    pub kind: &'static str,
}

impl TextFormat {
    pub const PLAIN: TextFormat = TextFormat {
        format: TextType { kind: "text" },
        verbosity: "medium",
    };
}

/// An answer as the JSON its callers keep working on (lists filter and page it).
pub fn to_json<T: Serialize>(answer: &T) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}
