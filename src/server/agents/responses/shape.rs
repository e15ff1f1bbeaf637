//! How a response looks on the wire (the OpenAI SDK's `Response` and its stream events),
//! and the task that turns a conversation's session events into `response.*` events.

use super::wire::{
    IncompleteDetails, ResponseLocal, ResponseObject, ResponseReasoning, ResponseToolShown,
};
use super::{ResponseHandle, Responses};
use crate::server::agents::model::{TurnStatus, usage_json};
use crate::server::agents::wire::{ErrorObject, TextFormat, to_json};
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

/// Follows the conversation's session log from `position` and writes this response's
/// events, ending with its terminal event.
pub async fn translate(responses: Arc<Responses>, handle: Arc<ResponseHandle>, mut position: u64) {
    let mut newest = handle.session.log.subscribe();
    let mut announced = false;
    loop {
        let slice = handle.session.log.after(position);
        for event in &slice.events {
            position = event.seq;
            let Ok(data) = serde_json::from_str::<Value>(event.data()) else {
                continue;
            };
            if data["turn_id"] != handle.turn_id.as_str() {
                continue;
            }
            if !announced && event.kind == "agent.session.turn.in_progress" {
                announced = true;
                let snapshot = opening(&handle, TurnStatus::InProgress);
                handle
                    .log
                    .push("response.created", json!({"response": snapshot}));
                handle
                    .log
                    .push("response.in_progress", json!({"response": snapshot}));
            }
            if let Some(terminal) = step(&handle, &event.kind, &data) {
                if !announced {
                    // Cancelled while still queued: the stream still opens with `created`.
                    let snapshot = opening(&handle, TurnStatus::Queued);
                    handle
                        .log
                        .push("response.created", json!({"response": snapshot}));
                }
                handle
                    .log
                    .push(terminal, json!({"response": response(&handle)}));
                handle.done.send_replace(true);
                if !handle.request.store {
                    responses.lock().remove(&handle.id);
                }
                return;
            }
        }
        if newest.changed().await.is_err() {
            return;
        }
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
