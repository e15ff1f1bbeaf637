//! The agents group's objects and request bodies as the OpenAPI document names them, for
//! the resources still read by hand in the agents domain (`agents::input`, each resource's
//! file), which refuses any key it does not know; these schemas say what those readers
//! accept, and the objects what their `to_json` write. Typed resources (vaults, webhook
//! endpoints) derive theirs from their `wire.rs` instead.
use crate::server::openapi::op::{Schema, SchemaGenerator, component, json_schema};
use crate::server::openapi::shared::list_of;
// Metadata and the deleted object are the domain's typed pieces, shared by every resource.
use crate::server::agents::definitions::wire as fields;
pub(super) use crate::server::agents::wire::{Deleted, McpToolParam, Metadata};

/// The agent fields a session's inline `agent` and a definition share, closed; the
/// object-valued ones are the definition body's own schemas.
fn agent_fields(g: &mut SchemaGenerator) -> Schema {
    let tool = g.subschema_for::<McpToolParam>();
    json_schema!({
        "type": "object",
        "properties": {
            "model": {"type": ["string", "null"], "description": "A runtime (`rt-one`, `rt-two`, an alias) or a model the runtime resolves."},
            "name": {"type": ["string", "null"]},
            "instructions": {"type": ["string", "null"]},
            "adapter": {"type": ["string", "null"], "description": "The runtime, when `model` does not say it (also `X-Svc-Adapter`)."},
            "runtime": {"type": ["string", "null"]},
            "tools": {"type": ["array", "null"], "items": tool},
            "multi_agent": fields::multi_agent(g),
            "reasoning": fields::reasoning(g),
            "service_tier": {"type": ["string", "null"], "enum": ["auto", "default", null]},
            "text": fields::text(g),
        },
        "additionalProperties": false,
    })
}

// A message input: a string, a message, or a list of messages (text only).
component!(pub(super) InputText, {
    "description": "A string, a message `{role, content}` or a list of them; `content` a string or `input_text` parts.",
    "anyOf": [
        {"type": "string", "minLength": 1, "pattern": "\\S"},
        {"$ref": "#/components/schemas/InputMessage"},
        {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/InputMessage"}},
    ],
});

// One input message: text only (images and files are refused).
component!(pub(super) InputMessage, {
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
});

/// `POST /v1/agents/sessions`.
pub(super) fn session_create(g: &mut SchemaGenerator) -> Schema {
    let agent = agent_fields(g);
    let environment = g.subschema_for::<EnvironmentParam>();
    let metadata = g.subschema_for::<Metadata>();
    let input = g.subschema_for::<InputText>();
    let _ = g.subschema_for::<InputMessage>();
    json_schema!({
        "type": "object",
        "if": {"required": ["stream_options"], "properties": {"stream_options": {"type": "object"}}},
        "then": {"required": ["stream"], "properties": {"stream": {"const": true}}},
        "properties": {
            "agent": agent,
            "agent_id": {"type": ["string", "null"], "description": "A saved definition (instead of `agent`)."},
            "adapter": {"type": ["string", "null"]},
            "runtime": {"type": ["string", "null"]},
            "input": input,
            "metadata": metadata,
            "environment": environment,
            "environment_template_id": {"type": ["string", "null"]},
            "vault_ids": {"type": ["array", "null"], "items": {"type": "string"}},
            "stream": {"type": ["boolean", "null"], "description": "Answer the session's events as SSE through its first turn."},
            "stream_options": {"type": ["object", "null"], "properties": {"include_obfuscation": {"type": ["boolean", "null"]}}, "additionalProperties": false},
        },
        "additionalProperties": false,
    })
}

// An environment as a session or `POST /v1/agents/environments` gives it.
component!(pub(super) EnvironmentParam, {
    "type": ["object", "null"],
    "properties": {
        "type": {"type": "string", "description": "`self_hosted` (a hosted type without configuration is converted)."},
        "id": {"type": "string", "description": "Sessions only: an existing environment."},
        "environment_id": {"type": "string", "description": "Sessions only: an existing environment."},
        "workspace_directory": {"type": "string"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "files": {"type": "array", "items": {"$ref": "#/components/schemas/FileParam"}},
        "environment_template_id": {"type": "string"},
    },
});

// A file placed in a workspace: inline base64 `data`, or an uploaded `file_id` (`type` says
// which, or the key does).
component!(pub(super) FileParam, {
    "anyOf": [
        {
            "type": "object",
            "required": ["path", "data"],
            "properties": {
                "type": {"const": "inline"},
                "path": {"type": "string", "minLength": 1, "description": "Relative to the workspace (or under `/workspace/`)."},
                "data": {"type": "string", "contentEncoding": "base64"},
            },
            "additionalProperties": false,
        },
        {
            "type": "object",
            "required": ["path", "file_id"],
            "properties": {
                "type": {"const": "file_id"},
                "path": {"type": "string", "minLength": 1},
                "file_id": {"type": "string", "minLength": 1},
            },
            "additionalProperties": false,
        },
    ],
});

/// `POST /v1/agents/environments`: the SDK's `{environment: {...}}` or the flat form.
pub(super) fn environment_create(g: &mut SchemaGenerator) -> Schema {
    let environment = g.subschema_for::<EnvironmentParam>();
    let _ = g.subschema_for::<FileParam>();
    json_schema!({
        "anyOf": [
            {
                "type": "object",
                "required": ["environment"],
                "properties": {
                    "environment": environment,
                    "vault_ids": {"type": "array", "maxItems": 0, "description": "Vaults attach to sessions."},
                },
                "additionalProperties": false,
            },
            {"type": "object", "properties": {
                "type": {"type": "string"},
                "workspace_directory": {"type": "string"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "files": {"type": "array", "items": {"$ref": "#/components/schemas/FileParam"}},
                "environment_template_id": {"type": "string"},
            }, "additionalProperties": false},
        ],
    })
}

/// A template's body (create and update).
pub(super) fn template_body(g: &mut SchemaGenerator) -> Schema {
    let _ = g.subschema_for::<FileParam>();
    json_schema!({
        "type": "object",
        "properties": {
            "name": {"type": ["string", "null"]},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "files": {"type": "array", "items": {"$ref": "#/components/schemas/FileParam"}},
        },
        "description": "The hosted platform's keys (packages, network, plugins, ...) are refused unless empty.",
    })
}

/// `POST .../events`: one input, or a list of events.
pub(super) fn events_create(g: &mut SchemaGenerator) -> Schema {
    let input = g.subschema_for::<InputText>();
    json_schema!({
        "anyOf": [
            {"type": "object", "required": ["input"], "properties": {"input": input}, "additionalProperties": false},
            {"type": "object", "required": ["events"], "properties": {"events": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["type"],
                    "properties": {
                        "type": {"type": "string", "enum": [
                            "agent.session.input.message", "input.message",
                            "agent.session.input.cancel", "input.cancel",
                        ]},
                        "input": {},
                        "content": {},
                        "text": {},
                    },
                },
            }}, "additionalProperties": false},
        ],
    })
}

/// `POST /v1/responses` (the OpenAI Responses request, what runs locally).
pub(super) fn response_create(g: &mut SchemaGenerator) -> Schema {
    let input = g.subschema_for::<InputText>();
    let metadata = g.subschema_for::<Metadata>();
    json_schema!({
        "type": "object",
        "required": ["model"],
        "properties": {
            "model": {"type": "string", "pattern": "\\S", "description": "A definition id, a model id or a runtime name."},
            "input": input,
            "instructions": {"type": ["string", "null"]},
            "metadata": metadata,
            "store": {"type": ["boolean", "null"]},
            "background": {"type": ["boolean", "null"]},
            "stream": {"type": ["boolean", "null"]},
            "stream_options": {"type": ["object", "null"]},
            "previous_response_id": {"type": ["string", "null"]},
            "tools": {"type": ["array", "null"], "items": {
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
            }},
            "reasoning": {"type": ["object", "null"]},
            "text": {"type": ["object", "null"]},
            "service_tier": {"type": ["string", "null"], "enum": ["auto", "default", null]},
            "tool_choice": {"enum": ["auto", null]},
            "include": {"type": ["array", "null"], "maxItems": 0},
            "conversation": {"type": "null", "description": "Needs the hosted platform."},
            "prompt": {"type": "null", "description": "Needs the hosted platform."},
            "parallel_tool_calls": {},
            "temperature": {"description": "Ignored (named in `x-svc-ignored-params`)."},
            "top_p": {"description": "Ignored."},
            "max_output_tokens": {"description": "Ignored."},
        },
        "additionalProperties": false,
    })
}

/// `POST /v1/responses/compact`.
pub(super) fn compact_body(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "required": ["previous_response_id"],
        "properties": {
            "previous_response_id": {"type": "string"},
            "model": {"type": ["string", "null"]},
            "instructions": {"type": ["string", "null"]},
            "service_tier": {"type": ["string", "null"]},
            "prompt_cache_key": {},
            "prompt_cache_options": {},
            "prompt_cache_retention": {},
        },
        "additionalProperties": false,
    })
}

/// `POST /v1/files`.
pub(super) fn file_create(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "required": ["purpose", "filename", "data"],
        "properties": {
            "purpose": {"const": "user_data"},
            "filename": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^/]+$"},
            "data": {"type": "string", "contentEncoding": "base64", "description": "The bytes, within `SVC_AGENTS_MAX_FILE_BYTES`."},
        },
        "additionalProperties": false,
    })
}

// The objects.

component!(pub(super) AgentSession, {
    "type": "object",
    "required": ["id", "object", "created_at", "status", "agent", "environment", "metadata"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "agent.session"},
        "created_at": {"type": "integer", "description": "Unix seconds."},
        "last_active_at": {"type": "integer", "description": "Unix seconds."},
        "status": {"type": "string"},
        "agent": {"type": "object"},
        "environment": {"type": "object"},
        "metadata": {"type": "object"},
        "usage": {"type": ["object", "null"]},
        "vault_ids": {"type": "array", "items": {"type": "string"}},
        "error": {},
        "required_actions": {"type": "array"},
        "x_svc": {"type": "object"},
    },
});

component!(pub(super) AgentTurn, {
    "type": "object",
    "required": ["id", "object", "session_id", "status"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "agent.session.turn"},
        "session_id": {"type": "string"},
        "agent_id": {"type": "string"},
        "status": {"type": "string"},
        "usage": {"type": ["object", "null"]},
        "error": {"type": ["object", "null"]},
    },
});

component!(pub(super) AgentArtifact, {
    "type": "object",
    "required": ["id", "object", "session_id", "path", "size_bytes"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "agent.session.artifact"},
        "session_id": {"type": "string"},
        "turn_id": {"type": ["string", "null"]},
        "environment_id": {"type": "string"},
        "path": {"type": "string"},
        "size_bytes": {"type": "integer", "minimum": 0},
        "created_at": {"type": "integer", "description": "Unix seconds."},
    },
});

component!(pub(super) AgentEnvironment, {
    "type": "object",
    "required": ["id", "object", "type"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "agent.environment"},
        "type": {"const": "self_hosted"},
        "status": {"type": "string"},
        "workspace_directory": {"type": "string"},
        "environment_template_id": {"type": ["string", "null"]},
        "files": {"type": "array"},
    },
});

component!(pub(super) EnvironmentTemplate, {
    "type": "object",
    "required": ["id", "object"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "agent.environment.template"},
        "name": {"type": ["string", "null"]},
        "files": {"type": "array"},
    },
});

component!(pub(super) EnvironmentFile, {
    "type": "object",
    "required": ["object", "path", "size_bytes"],
    "properties": {
        "environment_id": {"type": "string"},
        "object": {"const": "agent.environment.file"},
        "path": {"type": "string"},
        "size_bytes": {"type": "integer", "minimum": 0},
    },
});

component!(pub(super) ResponseObject, {
    "type": "object",
    "required": ["id", "object", "status"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "response"},
        "created_at": {"type": "integer", "description": "Unix seconds."},
        "status": {"type": "string", "enum": ["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]},
        "model": {"type": "string"},
        "output": {"type": "array"},
        "usage": {"type": ["object", "null"]},
        "error": {"type": ["object", "null"]},
    },
});

component!(pub(super) Model, {
    "type": "object",
    "required": ["id", "object", "created", "owned_by"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "model"},
        "created": {"type": "integer", "description": "Unix seconds."},
        "owned_by": {"type": "string"},
        "x_svc": {"type": "object"},
    },
});

component!(pub(super) AgentRuntime, {
    "type": "object",
    "required": ["id", "object", "implemented", "installed", "default"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "object": {"const": "agent.runtime"},
        "implemented": {"type": "boolean"},
        "installed": {"type": "boolean"},
        "default": {"type": "boolean"},
        "aliases": {"type": "array", "items": {"type": "string"}},
        "binary": {"type": "string"},
        "path": {"type": ["string", "null"]},
    },
});

component!(pub(super) FileObject, {
    "type": "object",
    "required": ["id", "object", "bytes", "created_at", "filename", "purpose"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "file"},
        "bytes": {"type": "integer", "minimum": 0},
        "created_at": {"type": "integer", "description": "Unix seconds."},
        "filename": {"type": "string"},
        "purpose": {"const": "user_data"},
        "status": {"type": "string"},
    },
});

/// A paged list of `T`.
pub(super) fn list<T: crate::server::openapi::op::JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    let item = g.subschema_for::<T>();
    list_of(item)
}
