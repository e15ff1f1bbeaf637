//! Responses (POST /v1/responses): one runtime turn is one response. A conversation is a
//! session no list shows; each response is one turn of it, and its `response.*` events are
//! translated from the session's events and kept for replay.

pub mod request;
mod shape;
#[cfg(test)]
mod translate_tests;
pub mod wire;

use crate::error::{ApiError, Code};
use crate::server::agents::agent_spec::AgentSpec;
use crate::server::agents::input::not_found;
use crate::server::agents::model::TurnStatus;
use crate::server::agents::runtimes;
use crate::server::agents::session_handle::{SessionHandle, cancel_all};
use crate::server::agents::sessions::Agents;
use crate::services::event_log::EventLog;
use crate::services::ids;
use request::ResponseRequest;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use wire::CompactBody;

/// The latest response of a conversation: only it can be continued.
type Conversation = Arc<Mutex<String>>;

pub struct ResponseHandle {
    pub id: String,
    pub owner: String,
    pub created_at: i64,
    pub session: Arc<SessionHandle>,
    pub turn_id: String,
    pub request: ResponseRequest,
    pub log: EventLog,
    done: watch::Sender<bool>,
    conversation: Conversation,
}

#[derive(Default)]
pub struct Responses {
    map: Mutex<HashMap<String, Arc<ResponseHandle>>>,
    /// (owner, Idempotency-Key) to the body's digest and the response it created.
    idempotency: Mutex<HashMap<(String, String), (String, String)>>,
}

/// What an `Idempotency-Key` says about a request.
pub enum Replay {
    /// The key is new (or absent): create.
    Fresh,
    /// The same key and body made this response before.
    Same(Arc<ResponseHandle>),
}

impl Responses {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<ResponseHandle>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, owner: &str, id: &str) -> Result<Arc<ResponseHandle>, ApiError> {
        self.lock()
            .get(id)
            .filter(|r| r.owner == owner)
            .cloned()
            .ok_or_else(|| not_found("response", "response_id", id))
    }

    pub fn delete(&self, owner: &str, id: &str) -> Result<Value, ApiError> {
        let handle = self.get(owner, id)?;
        cancel_all(&handle.session);
        self.lock().remove(id);
        Ok(json!({"id": id, "object": "response.deleted", "deleted": true}))
    }

    /// Checks an `Idempotency-Key`: the same body replays the first response, another body
    /// is a conflict.
    pub fn replay(&self, owner: &str, key: &str, body: &Value) -> Result<Replay, ApiError> {
        let digest = body.to_string();
        let seen = self
            .idempotency
            .lock()
            .ok()
            .and_then(|m| m.get(&(owner.to_owned(), key.to_owned())).cloned());
        match seen {
            None => Ok(Replay::Fresh),
            Some((first, id)) if first == digest => {
                Ok(self.get(owner, &id).map_or(Replay::Fresh, Replay::Same))
            }
            Some(_) => Err(ApiError::new(
                Code::IdempotencyMismatch,
                format!("the Idempotency-Key `{key}` was used with a different body"),
            )
            .with_param("Idempotency-Key")),
        }
    }

    pub fn remember(&self, owner: &str, key: &str, body: &Value, id: &str) {
        if let Ok(mut m) = self.idempotency.lock() {
            m.insert(
                (owner.to_owned(), key.to_owned()),
                (body.to_string(), id.to_owned()),
            );
        }
    }

    /// Starts the response's turn; the caller waits, streams or returns at once.
    pub fn create(
        self: &Arc<Self>,
        agents: &Agents,
        owner: &str,
        header: Option<&str>,
        request: ResponseRequest,
    ) -> Result<Arc<ResponseHandle>, ApiError> {
        let (session, conversation) = match &request.previous_response_id {
            Some(previous) => {
                let prev = self
                    .get(owner, previous)
                    .map_err(|e| e.with_param("previous_response_id"))?;
                let latest = prev
                    .conversation
                    .lock()
                    .map(|l| l.clone())
                    .unwrap_or_default();
                if latest != *previous {
                    return Err(ApiError::new(
                        Code::PreviousResponseNotLatest,
                        format!("`{previous}` is not the latest response of its conversation (`{latest}` is)"),
                    )
                    .with_param("previous_response_id"));
                }
                {
                    let mut state = prev.session.lock();
                    if request.instructions.is_some() || !request.system.is_empty() {
                        state.agent.instructions = instructions(&request);
                    }
                }
                (prev.session.clone(), prev.conversation.clone())
            }
            None => {
                let spec = agent_for(agents, owner, header, &request)?;
                let session =
                    agents.open(owner, spec, request.metadata.clone(), Default::default());
                (session, Arc::new(Mutex::new(String::new())))
            }
        };
        runtimes::require_installed(session.lock().agent.runtime)?;
        let id = ids::new("resp");
        let from = session.log.newest();
        let turn_id = agents.enqueue(&session, request.prompt.clone());
        if let Ok(mut latest) = conversation.lock() {
            *latest = id.clone();
        }
        let (done, _) = watch::channel(false);
        let handle = Arc::new(ResponseHandle {
            log: EventLog::plain(agents.settings.event_history),
            id: id.clone(),
            owner: owner.to_owned(),
            created_at: ids::now(),
            session,
            turn_id,
            request,
            done,
            conversation,
        });
        self.lock().insert(id, handle.clone());
        let translation = shape::Translation::new(self.clone(), handle.clone());
        handle.session.log.follow(from, Box::new(translation));
        Ok(handle)
    }

    /// Compacts a conversation in the runtime's own thread (rt-two's `/compact`); the
    /// conversation then goes on from the same latest response.
    pub async fn compact(
        &self,
        agents: &Agents,
        owner: &str,
        body: CompactBody,
    ) -> Result<Value, ApiError> {
        let previous = body.previous_response_id.as_deref().ok_or_else(|| {
            ApiError::invalid(
                "previous_response_id",
                "compact works on a conversation: send `previous_response_id`",
            )
        })?;
        let prev = self
            .get(owner, previous)
            .map_err(|e| e.with_param("previous_response_id"))?;
        let runtime = prev.session.lock().agent.runtime;
        if runtime.id != "rt-two" {
            return Err(ApiError::new(
                Code::CompactUnsupported,
                format!(
                    "{} has no local compaction; only rt-two compacts its conversation",
                    runtime.id
                ),
            )
            .with_param("previous_response_id"));
        }
        runtimes::require_installed(runtime)?;
        let mut newest = prev.session.log.subscribe();
        let turn_id = agents.enqueue(&prev.session, "/compact".to_owned());
        loop {
            let done = prev
                .session
                .lock()
                .turn(&turn_id)
                .is_none_or(|t| t.status.is_final());
            if done || newest.changed().await.is_err() {
                break;
            }
        }
        let state = prev.session.lock();
        let turn = state.turn(&turn_id);
        // The runtime said no (too short a conversation, an API error): no compaction
        // happened, so none is answered.
        if let Some(t) = turn.filter(|t| t.status == TurnStatus::Failed) {
            return Err(ApiError::invalid(
                "previous_response_id",
                format!(
                    "{} did not compact the conversation: {}",
                    runtime.id,
                    t.error.clone().unwrap_or_default()
                ),
            ));
        }
        let usage = turn.and_then(|t| t.usage).unwrap_or_default();
        // The summary the runtime goes on from (rt-two's `compact` item), in plain text: it
        // lives in the runtime's thread, not in an encrypted blob for the client to resend.
        let output: Vec<Value> = state
            .items
            .iter()
            .filter(|i| i["turn_id"] == turn_id.as_str() && i["tool_name"] == "compact")
            .map(|i| json!({"id": i["id"], "type": "compaction", "encrypted_content": i["output"]}))
            .collect();
        Ok(json!({
            "id": ids::new("cmp"),
            "object": "response.compaction",
            "created_at": ids::now(),
            "output": output,
            "usage": crate::server::agents::model::usage_json(&usage),
            "x_svc": {"compute": "local_process", "runtime": runtime.id, "session_id": prev.session.id,
                      "turn_id": turn_id, "status": turn.map(|t| shape::status(t.status)),
                      "error": turn.and_then(|t| t.error.clone()), "continue_from": previous},
        }))
    }

    /// Stops a running response; a finished one cannot be cancelled.
    pub async fn cancel(&self, owner: &str, id: &str) -> Result<Value, ApiError> {
        let handle = self.get(owner, id)?;
        if handle.is_finished() {
            return Err(ApiError::new(
                Code::NotCancellable,
                format!(
                    "the response `{id}` has already finished ({})",
                    handle.status()
                ),
            ));
        }
        cancel_all(&handle.session);
        handle.finished().await;
        Ok(handle.to_json())
    }
}

fn instructions(request: &ResponseRequest) -> Option<String> {
    let mut parts: Vec<String> = request.instructions.iter().cloned().collect();
    parts.extend(request.system.iter().cloned());
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// `model` is a saved definition's id, a runtime's name (its default model), or a model id
/// for the selected CLI.
fn agent_for(
    agents: &Agents,
    owner: &str,
    header: Option<&str>,
    request: &ResponseRequest,
) -> Result<AgentSpec, ApiError> {
    let mut spec = match agents.definitions.get(owner, &request.model) {
        Ok(definition) => definition.spec,
        Err(_) => {
            let selection = runtimes::select(
                header,
                None,
                Some(&request.model),
                agents.settings.default_runtime,
            )?;
            let empty = serde_json::Map::new();
            crate::server::agents::agent_spec::build(
                &empty,
                "",
                selection,
                Some(&request.model),
                None,
            )?
        }
    };
    if let Some(effort) = &request.reasoning_effort {
        if spec.runtime.id != "rt-one" {
            return Err(ApiError::invalid(
                "reasoning.effort",
                format!(
                    "`reasoning.effort` is only supported by rt-one, not {}",
                    spec.runtime.id
                ),
            ));
        }
        if !["minimal", "low", "medium", "high"].contains(&effort.as_str()) {
            return Err(ApiError::invalid(
                "reasoning.effort",
                "`reasoning.effort` is one of minimal, low, medium, high",
            ));
        }
        spec.reasoning_effort = Some(effort.clone());
    }
    if let Some(text) = instructions(request) {
        spec.instructions = Some(text);
    }
    spec.tools.extend(request.tools.iter().cloned());
    Ok(spec)
}

impl ResponseHandle {
    fn turn_status(&self) -> TurnStatus {
        self.session
            .lock()
            .turn(&self.turn_id)
            .map_or(TurnStatus::Failed, |t| t.status)
    }

    pub fn is_finished(&self) -> bool {
        self.turn_status().is_final() && *self.done.borrow()
    }

    pub fn status(&self) -> &'static str {
        shape::status(self.turn_status())
    }

    /// The final event is in the log: nothing more will come.
    pub fn ended(&self) -> bool {
        *self.done.borrow()
    }

    /// Resolves once the response's final event is in its log.
    pub async fn finished(&self) {
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    pub fn to_json(&self) -> Value {
        shape::response(self)
    }
}
