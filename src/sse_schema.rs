//! The OpenAPI description of one server-sent-events answer, shared by the server's document
//! (`svc openapi`) and the engine's (`docs/engine-openapi.json`) so both describe streams the
//! same way. A leaf: it imports nothing of the crate.

use serde_json::{Value, json};

/// The `text/event-stream` media object of a streamed answer: `events` are the stream's
/// events, each `{event, description, data}` (`data` the schema of its JSON).
///
/// Before OpenAPI 3.2's `itemSchema`, a stream's `schema` is read as the schema of one event:
/// its `event` name, its `data` text (JSON, whose schema by event name `x-events` gives), its
/// `id` and `retry`.
pub fn event_stream(events: Vec<Value>) -> Value {
    let names: Vec<Value> = events.iter().map(|e| e["event"].clone()).collect();
    json!({
        "schema": {
            "type": "object",
            "description": "One server-sent event: `event: <name>` and `data: <JSON>` (`x-events` gives each event's data schema).",
            "required": ["event", "data"],
            "properties": {
                "event": {"type": "string", "enum": names},
                "data": {"type": "string", "contentMediaType": "application/json"},
                "id": {"type": "string"},
                "retry": {"type": "integer"},
            },
        },
        "x-events": events,
    })
}
