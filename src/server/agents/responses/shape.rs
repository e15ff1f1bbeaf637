//! How a response looks on the wire (the OpenAI SDK's `Response` and its stream events),
//! and the translation that turns a conversation's session events into `response.*` events.

use super::wire::{
    IncompleteDetails, ResponseLocal, ResponseObject, ResponseReasoning, ResponseToolShown,
};
use super::{ResponseHandle, Responses};
use crate::server::agents::model::{TurnStatus, usage_json};
use crate::server::agents::wire::{ErrorObject, TextFormat, to_json};
use crate::services::event_log::Follower;
use serde_json::{Value, json};
use std::sync::Arc;

pub fn status(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Queued => "queued",
        TurnStatus::InProgress => "in_progress",
        TurnStatus::Completed => "completed",
        TurnStatus::Failed => "failed",
        TurnStatus::Cancelled => "cancelled",
    }
}

/// A session item as a response output item (spec 2.8: message, reasoning,
/// command_execution, mcp_call, and tool_call with tool_name for other tools).
pub fn output_item(item: &Value) -> Value {
    let mut out = item.clone();
    if let Some(obj) = out.as_object_mut() {
        obj.remove("turn_id");
        obj.remove("created_at");
    }
    match item["type"].as_str().unwrap_or_default() {
        "message" => {
            let content: Vec<Value> = item["content"]
                .as_array()
                .map(|parts| {
                    parts
                        .iter()
                        .map(|p| json!({"type": "output_text", "text": p["text"], "annotations": [], "logprobs": []}))
                        .collect()
                })
                .unwrap_or_default();
            json!({"id": item["id"], "type": "message", "role": "assistant", "status": item["status"], "content": content})
        }
        "mcp_call" => json!({
            "id": item["id"], "type": "mcp_call", "server_label": item["server_label"], "name": item["name"],
            "arguments": item["arguments"].to_string(),
            "output": item["output"].as_str().map(str::to_owned).or_else(|| (!item["output"].is_null()).then(|| item["output"].to_string())),
            // The SDK's mcp_call error is an object.
            "error": if item["error"].is_null() { Value::Null } else {
                json!({"type": "mcp_tool_execution_error", "content": item["error"]})
            },
            "status": item["status"],
        }),
        "create_subagent_call" => json!({
            "id": item["id"], "type": "tool_call", "tool_name": "spawn_agent",
            "arguments": {"agent_id": item["agent_id"], "content": item["content"]}, "output": item["output"], "status": item["status"],
        }),
        "wait_for_subagents_call" => json!({
            "id": item["id"], "type": "tool_call", "tool_name": "wait_for_subagents",
            "arguments": {"agent_ids": item["recipient_agent_ids"]}, "output": null, "status": item["status"],
        }),
        _ => out,
    }
}

/// The response as it stands now: its turn's status, output and usage.
pub fn response(handle: &ResponseHandle) -> Value {
    shaped(handle, None)
}

/// The response as it opened (`response.created`, `response.in_progress`): `status`, no
/// output, no usage. The session's state cannot say this: the runtime may have printed
/// items, or finished, before the translation writes the opening events, and the OpenAI
/// SDKs' stream helpers refuse an `output_item.added` whose index `created` already showed.
fn opening(handle: &ResponseHandle, status: TurnStatus) -> Value {
    shaped(handle, Some(status))
}

fn shaped(handle: &ResponseHandle, opening: Option<TurnStatus>) -> Value {
    let state = handle.session.lock();
    let turn = state.turn(&handle.turn_id).filter(|_| opening.is_none());
    let turn_status = opening.unwrap_or(turn.map_or(TurnStatus::Failed, |t| t.status));
    let truncated =
        turn.is_some_and(|t| t.output_truncated) && turn_status == TurnStatus::Completed;
    let output: Vec<Value> = match opening {
        Some(_) => Vec::new(),
        None => state
            .items
            .iter()
            .filter(|i| i["turn_id"] == handle.turn_id.as_str() && i["role"] != "user")
            .map(output_item)
            .collect(),
    };
    let agent = &state.agent;
    let request = &handle.request;
    to_json(&ResponseObject {
        id: handle.id.clone(),
        object: "response",
        created_at: handle.created_at,
        status: if truncated {
            "incomplete"
        } else {
            status(turn_status)
        },
        background: request.background,
        error: turn
            .and_then(|t| t.error.as_deref())
            .map(ErrorObject::server),
        incomplete_details: truncated.then_some(IncompleteDetails {
            reason: "max_output_tokens",
        }),
        instructions: request.instructions.clone(),
        max_output_tokens: None,
        metadata: request.metadata.clone(),
        model: request.model.clone(),
        model_resolved: agent.model_for_cli.is_some(),
        output,
        parallel_tool_calls: false,
        previous_response_id: request.previous_response_id.clone(),
        reasoning: ResponseReasoning {
            effort: agent.reasoning_effort.clone(),
            summary: None,
        },
        service_tier: "auto",
        store: request.store,
        temperature: None,
        text: TextFormat::PLAIN,
        tool_choice: "auto",
        tools: request
            .tools
            .iter()
            .map(|t| ResponseToolShown {
                kind: "mcp",
                server_label: t.server_label.clone(),
                server_url: t.server_url.clone(),
            })
            .collect(),
        top_p: None,
        truncation: "disabled",
        usage: turn.and_then(|t| t.usage.as_ref()).map(usage_json),
        x_svc: ResponseLocal {
            compute: "local_process",
            runtime: agent.runtime.id,
            model_resolved: agent.model_for_cli.is_some(),
            session_id: handle.session.id.clone(),
            turn_id: handle.turn_id.clone(),
        },
    })
}

/// A response's translation: follows its conversation's session log
/// ([`EventLog::follow`](crate::services::event_log::EventLog::follow)) and writes the
/// response's events as the session's are appended, in the task that appends them (the
/// turn's, for what the runtime prints), with no task of its own between the two. It never
/// takes the session's lock, which is held while the session's events are pushed: the
/// opening snapshot is made before it follows, and the terminal one, which needs the
/// session's final state, is written by a task of its own once the turn has ended.
pub struct Translation {
    responses: Arc<Responses>,
    handle: Arc<ResponseHandle>,
    /// The response as it opened (see [`opening`]).
    opening: Value,
    announced: bool,
    /// Where the terminal event's task runs (a session event may be pushed from a thread
    /// outside the runtime).
    runtime: tokio::runtime::Handle,
}

impl Translation {
    /// Must be made in the runtime, outside the session's lock.
    pub fn new(responses: Arc<Responses>, handle: Arc<ResponseHandle>) -> Translation {
        Translation {
            opening: opening(&handle, TurnStatus::InProgress),
            responses,
            handle,
            announced: false,
            runtime: tokio::runtime::Handle::current(),
        }
    }
}

impl Follower for Translation {
    fn event(&mut self, kind: &str, data: &Value) -> bool {
        let handle = &self.handle;
        if data["turn_id"] != handle.turn_id.as_str() {
            return true;
        }
        if !self.announced && kind == "agent.session.turn.in_progress" {
            self.announced = true;
            let snapshot = json!({"response": self.opening});
            handle.log.push("response.created", snapshot.clone());
            handle.log.push("response.in_progress", snapshot);
        }
        let Some(terminal) = step(handle, kind, data) else {
            return true;
        };
        let (responses, handle, announced) =
            (self.responses.clone(), handle.clone(), self.announced);
        self.runtime.spawn(async move {
            if !announced {
                // Cancelled while still queued: the stream still opens with `created`.
                let queued = opening(&handle, TurnStatus::Queued);
                handle
                    .log
                    .push("response.created", json!({"response": queued}));
            }
            handle
                .log
                .push(terminal, json!({"response": response(&handle)}));
            handle.done.send_replace(true);
            if !handle.request.store {
                responses.lock().remove(&handle.id);
            }
        });
        false
    }
}

/// One session event of the turn as response events; `Some(kind)` when the turn ended.
fn step(handle: &ResponseHandle, kind: &str, data: &Value) -> Option<&'static str> {
    let index = |d: &Value| d["output_index"].as_u64().unwrap_or(1).saturating_sub(1);
    match kind {
        "agent.session.turn.item.added" if data["item"]["role"] != "user" => {
            let item = output_item(&data["item"]);
            let output_index = index(data);
            let is_message = item["type"] == "message";
            handle.log.push(
                "response.output_item.added",
                json!({"output_index": output_index, "item": in_progress(item.clone())}),
            );
            if is_message {
                handle.log.push(
                    "response.content_part.added",
                    json!({"item_id": item["id"], "output_index": output_index, "content_index": 0,
                           "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
                );
            }
        }
        "agent.session.turn.output_text.delta" => {
            handle.log.push(
                "response.output_text.delta",
                json!({"item_id": data["item_id"], "output_index": index(data), "content_index": 0,
                       "delta": data["delta"], "logprobs": []}),
            );
        }
        "agent.session.turn.output_text.done" => {
            let (item_id, output_index, text) = (&data["item_id"], index(data), &data["text"]);
            handle.log.push(
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "text": text, "logprobs": []}),
            );
            handle.log.push(
                "response.content_part.done",
                json!({"item_id": item_id, "output_index": output_index, "content_index": 0,
                       "part": {"type": "output_text", "text": text, "annotations": [], "logprobs": []}}),
            );
        }
        "agent.session.turn.item.done" => {
            handle.log.push(
                "response.output_item.done",
                json!({"output_index": index(data), "item": output_item(&data["item"])}),
            );
        }
        // Output cut at the cap: the SDK's `incomplete` response, as when a model stops at
        // `max_output_tokens`.
        "agent.session.turn.completed" if data["turn"]["x_svc"]["output_truncated"] == true => {
            return Some("response.incomplete");
        }
        "agent.session.turn.completed" => return Some("response.completed"),
        "agent.session.turn.failed" => return Some("response.failed"),
        // The SDK knows no `response.cancelled`: a cancelled response ends with
        // `response.failed` whose response says `status: cancelled`.
        "agent.session.turn.cancelled" => return Some("response.failed"),
        _ => {}
    }
    None
}

/// An item as first announced: running, and a message with no text yet.
fn in_progress(mut item: Value) -> Value {
    item["status"] = json!("in_progress");
    if item["type"] == "message" {
        item["content"] = json!([]);
    }
    item
}
