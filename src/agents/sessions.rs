//! The session service: create, read, update, delete, and input. Each session's turns run
//! one at a time on a worker task (see `turn`); input that arrives meanwhile is queued,
//! never written into the running process.

use crate::agents::input::{self, SessionInput, invalid, only_keys, opt_str};
use crate::agents::log::EventLog;
use crate::agents::model::{AgentSpec, SessionState, SessionStatus, Turn, TurnStatus};
use crate::agents::runtimes;
use crate::agents::settings::AgentsSettings;
use crate::agents::{agent_spec, ids, turn};
use crate::error::{ApiError, Code};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

pub struct Agents {
    pub settings: AgentsSettings,
    pub definitions: crate::agents::definitions::Definitions,
    pub files: crate::agents::files::Files,
    pub vaults: crate::agents::vaults::Vaults,
    pub webhooks: crate::agents::webhooks::Webhooks,
    sessions: Mutex<HashMap<String, Arc<SessionHandle>>>,
    next_serial: std::sync::atomic::AtomicU64,
}

pub struct SessionHandle {
    pub id: String,
    /// Creation order, which timestamps in whole seconds cannot give.
    pub serial: u64,
    pub owner: String,
    pub state: Mutex<SessionState>,
    pub log: EventLog,
}

impl SessionHandle {
    pub fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn snapshot(&self) -> Value {
        self.lock().to_json(&self.id)
    }
}

const CREATE_KEYS: &[&str] = &[
    "agent",
    "agent_id",
    "adapter",
    "runtime",
    "input",
    "metadata",
    "environment",
    "environment_template_id",
    "vault_ids",
];
const AGENT_KEYS: &[&str] = &[
    "model",
    "instructions",
    "name",
    "adapter",
    "runtime",
    "tools",
    "multi_agent",
    "reasoning",
    "service_tier",
    "text",
];

pub fn not_found(what: &str, param: &str, id: &str) -> ApiError {
    ApiError::new(Code::ResourceNotFound, format!("no {what} with id `{id}`")).with_param(param)
}

impl Agents {
    pub fn new(settings: AgentsSettings) -> Agents {
        Agents {
            vaults: crate::agents::vaults::Vaults::new(
                settings.max_vaults,
                settings.allow_private_urls,
            ),
            webhooks: crate::agents::webhooks::Webhooks::new(&settings),
            settings,
            definitions: Default::default(),
            files: Default::default(),
            sessions: Mutex::new(HashMap::new()),
            next_serial: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<SessionHandle>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Another owner's session answers exactly like a missing one.
    pub fn get(&self, owner: &str, id: &str) -> Result<Arc<SessionHandle>, ApiError> {
        self.map()
            .get(id)
            .filter(|h| h.owner == owner)
            .cloned()
            .ok_or_else(|| not_found("session", "id", id))
    }

    pub fn create(
        &self,
        owner: &str,
        header: Option<&str>,
        body: &Value,
    ) -> Result<Value, ApiError> {
        let map = input::object(body, "body")?;
        only_keys(map, CREATE_KEYS, "")?;
        let empty = Map::new();
        let agent = match map.get("agent") {
            None | Some(Value::Null) => &empty,
            Some(v) => input::object(v, "agent")?,
        };
        only_keys(agent, AGENT_KEYS, "agent")?;
        let definition = match opt_str(map, "agent_id", "agent_id")? {
            Some(id) => Some(self.definitions.get(owner, id)?),
            None => None,
        };
        check_environment(map.get("environment"))?;
        if map
            .get("environment_template_id")
            .is_some_and(|v| !v.is_null())
        {
            return Err(invalid(
                "environment_template_id",
                "no environment template with that id (templates arrive with the environments routes)",
            ));
        }
        match map.get("vault_ids") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) if list.is_empty() => {}
            Some(Value::Array(_)) => {
                return Err(invalid(
                    "vault_ids",
                    "no vault with that id (vaults arrive with the vaults routes)",
                ));
            }
            Some(_) => {
                return Err(invalid(
                    "vault_ids",
                    "`vault_ids` must be an array of strings",
                ));
            }
        }
        let spec = match definition {
            // The session keeps this copy: later updates of the definition do not reach it.
            Some(definition) => {
                if !agent.is_empty() {
                    return Err(invalid("agent", "give `agent` or `agent_id`, not both"));
                }
                runtimes::require_installed(definition.spec.runtime)?;
                definition.spec
            }
            None => {
                let explicit = opt_str(map, "adapter", "adapter")?
                    .or(opt_str(map, "runtime", "runtime")?)
                    .or(opt_str(agent, "adapter", "agent.adapter")?)
                    .or(opt_str(agent, "runtime", "agent.runtime")?);
                let model = opt_str(agent, "model", "agent.model")?;
                let selection =
                    runtimes::select(header, explicit, model, self.settings.default_runtime)?;
                runtimes::require_installed(selection.runtime)?;
                agent_spec::build(agent, "agent", selection, model, None)?
            }
        };
        let metadata = input::metadata(map.get("metadata").filter(|v| !v.is_null()), "metadata")?;
        let first_input = match map.get("input") {
            None | Some(Value::Null) => None,
            Some(v) => Some(input::input_text(v, "input")?),
        };

        let handle = self.open(owner, spec, metadata);
        handle.log.attach(self.webhooks.sink(owner));
        let id = handle.id.clone();
        self.map().insert(id, handle.clone());
        if let Some(text) = first_input {
            self.enqueue(&handle, text);
        }
        Ok(handle.snapshot())
    }

    pub fn list(&self, owner: &str, agent_id: Option<&str>) -> Vec<Value> {
        let handles: Vec<Arc<SessionHandle>> = self
            .map()
            .values()
            .filter(|h| h.owner == owner)
            .cloned()
            .collect();
        let mut sessions: Vec<(u64, Value)> = handles
            .iter()
            .map(|h| (h.serial, h.snapshot()))
            .filter(|(_, v)| agent_id.is_none_or(|a| v["agent"]["id"] == a))
            .collect();
        sessions.sort_by_key(|(serial, _)| *serial);
        sessions.into_iter().map(|(_, v)| v).collect()
    }

    pub fn update(&self, owner: &str, id: &str, body: &Value) -> Result<Value, ApiError> {
        let handle = self.get(owner, id)?;
        let map = input::object(body, "body")?;
        if let Some(key) = map.keys().find(|k| k.as_str() != "metadata") {
            return Err(invalid(
                key.clone(),
                format!("only `metadata` can be updated on a session, not `{key}`"),
            ));
        }
        let metadata = input::metadata(map.get("metadata").filter(|v| !v.is_null()), "metadata")?;
        let mut state = handle.lock();
        if map.contains_key("metadata") {
            state.metadata = metadata;
        }
        state.last_active_at = ids::now();
        Ok(state.to_json(&handle.id))
    }

    pub async fn delete(&self, owner: &str, id: &str) -> Result<Value, ApiError> {
        let handle = self.get(owner, id)?;
        self.map().remove(id);
        let running = {
            let mut state = handle.lock();
            state.deleted = true;
            state.artifacts.clear();
            cancel_queued(&handle, &mut state);
            state.running.as_ref().map(|(_, stop)| stop.clone())
        };
        if let Some(stop) = running {
            let _ = stop.send(true);
            // Wait until the runtime's process group is gone before answering: the channel
            // closes when the runner drops its sender, so ours must go first.
            let mut rx = stop.subscribe();
            drop(stop);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
                while handle.lock().running.is_some() {
                    if rx.changed().await.is_err() {
                        break;
                    }
                }
            })
            .await;
        }
        Ok(json!({"id": id, "object": "agent.session.deleted", "deleted": true, "x_svc": {}}))
    }

    /// POST .../events. The digest of the body makes an `Idempotency-Key` replay safe.
    pub fn post_events(
        &self,
        owner: &str,
        id: &str,
        idempotency_key: Option<&str>,
        body: &Value,
    ) -> Result<(), ApiError> {
        let handle = self.get(owner, id)?;
        let events = input::events(body)?;
        if let Some(key) = idempotency_key {
            let digest = hex(&Sha256::digest(body.to_string().as_bytes()));
            let mut state = handle.lock();
            match state.idempotency.get(key) {
                Some(seen) if *seen == digest => return Ok(()),
                Some(_) => {
                    return Err(ApiError::new(
                        Code::IdempotencyMismatch,
                        format!("the Idempotency-Key `{key}` was used with a different body"),
                    )
                    .with_param("Idempotency-Key"));
                }
                None => {
                    state.idempotency.insert(key.to_owned(), digest);
                }
            }
        }
        for event in events {
            match event {
                SessionInput::Message(text) => {
                    self.enqueue(&handle, text);
                }
                SessionInput::Cancel => cancel_all(&handle),
            }
        }
        Ok(())
    }

    /// A new session that no list shows until the caller registers it (responses keep their
    /// conversations this way).
    pub fn open(
        &self,
        owner: &str,
        spec: AgentSpec,
        metadata: Map<String, Value>,
    ) -> Arc<SessionHandle> {
        let id = ids::new("agsess");
        let now = ids::now();
        let state = SessionState {
            created_at: now,
            last_active_at: now,
            status: SessionStatus::Idle,
            metadata,
            agent: spec,
            workspace: self.settings.workspace.clone(),
            thread_id: None,
            usage: None,
            runtime_total: None,
            error: None,
            turns: Vec::new(),
            items: Vec::new(),
            artifacts: Vec::new(),
            traces: Vec::new(),
            subagents: Vec::new(),
            queue: VecDeque::new(),
            running: None,
            worker_active: false,
            deleted: false,
            traces_enabled: self.settings.traces,
            idempotency: HashMap::new(),
        };
        let handle = Arc::new(SessionHandle {
            serial: self
                .next_serial
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            log: EventLog::new(&id, self.settings.event_history),
            id,
            owner: owner.to_owned(),
            state: Mutex::new(state),
        });
        let created = handle.snapshot();
        handle
            .log
            .push("agent.session.created", json!({"session": created}));
        handle
    }

    /// Queues a turn; returns its id.
    pub fn enqueue(&self, handle: &Arc<SessionHandle>, prompt: String) -> String {
        let mut state = handle.lock();
        let busy = state.running.is_some() || !state.queue.is_empty();
        let now = ids::now();
        let turn = Turn {
            id: ids::new("turn"),
            prompt,
            created_at: now,
            started_at: None,
            completed_at: None,
            status: TurnStatus::Queued,
            usage: None,
            error: None,
            queued_not_steered: busy,
            exit_code: None,
        };
        let json = turn.to_json(&handle.id, &state.agent);
        state.queue.push_back(turn.id.clone());
        state.last_active_at = now;
        let turn_id = turn.id.clone();
        state.turns.push(turn);
        handle.log.push(
            "agent.session.turn.created",
            json!({"turn_id": turn_id, "turn": json}),
        );
        if !state.worker_active {
            state.worker_active = true;
            tokio::spawn(turn::work(handle.clone()));
        }
        turn_id
    }
}

fn check_environment(env: Option<&Value>) -> Result<(), ApiError> {
    let Some(env) = env.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let map = input::object(env, "environment")?;
    match map.get("type").and_then(Value::as_str) {
        Some("none") | None => only_keys(map, &["type"], "environment"),
        Some("self_hosted") => {
            if map.contains_key("id") {
                return Err(invalid(
                    "environment.id",
                    "no environment with that id (environments arrive with the environments routes)",
                ));
            }
            only_keys(map, &["type"], "environment")
        }
        Some(other) => Err(invalid(
            "environment.type",
            format!("environment type `{other}` is not available locally; use `self_hosted`"),
        )),
    }
}

fn cancel_queued(handle: &SessionHandle, state: &mut SessionState) {
    let queued: Vec<String> = state.queue.drain(..).collect();
    for id in queued {
        let now = ids::now();
        if let Some(turn) = state.turn_mut(&id) {
            turn.status = TurnStatus::Cancelled;
            turn.completed_at = Some(now);
        }
        if let Some(turn) = state.turn(&id) {
            let json = turn.to_json(&handle.id, &state.agent);
            handle.log.push(
                "agent.session.turn.cancelled",
                json!({"turn_id": id, "turn": json}),
            );
        }
    }
}

/// Cancels every queued turn and asks the running one to stop.
pub fn cancel_all(handle: &SessionHandle) {
    let mut state = handle.lock();
    cancel_queued(handle, &mut state);
    if let Some((_, stop)) = &state.running {
        let _ = stop.send(true);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
