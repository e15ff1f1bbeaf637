//! The session service: create, read, update, delete, and input. Each session's turns run
//! one at a time on a worker task (see `turn`); input that arrives meanwhile is queued,
//! never written into the running process.

pub mod wire;

use crate::error::{ApiError, Code};
use crate::server::agents::agent_spec::AgentSpec;
use crate::server::agents::environments::config::FileSpec;
use crate::server::agents::environments::wire::EnvironmentConfig;
use crate::server::agents::input::not_found;
use crate::server::agents::input::{self, SessionInput, invalid, opt_str};
use crate::server::agents::model::{SessionSetup, SessionState, SessionStatus, Turn, TurnStatus};
use crate::server::agents::runtimes;
use crate::server::agents::session_handle::{SessionHandle, cancel_all, cancel_queued};
use crate::server::agents::settings::AgentsSettings;
use crate::server::agents::wire::Object;
use crate::server::agents::{agent_spec, injection, turn};
use crate::services::event_log::EventLog;
use crate::services::ids;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use wire::{EventsBody, SessionCreate, SessionUpdate};

pub struct Agents {
    pub settings: AgentsSettings,
    pub definitions: crate::server::agents::definitions::Definitions,
    pub files: crate::server::agents::files::Files,
    pub vaults: Arc<crate::server::agents::vaults::Vaults>,
    pub environments: crate::server::agents::environments::Environments,
    /// The operator's path policy (`paths` in template.yaml): workspaces and the files placed
    /// in them obey it like every other write.
    pub paths: crate::services::paths::PathGuard,
    pub webhooks: crate::server::agents::webhooks::Webhooks,
    sessions: Mutex<HashMap<String, Arc<SessionHandle>>>,
    next_serial: std::sync::atomic::AtomicU64,
}

impl Agents {
    pub fn new(mut settings: AgentsSettings) -> Agents {
        // The operator's own workspace may lie behind links (their choice); resolved once
        // here, every later walk through it can refuse links without refusing it.
        settings.workspace =
            crate::server::agents::environments::fs::without_links(&settings.workspace);
        Agents {
            vaults: Arc::new(crate::server::agents::vaults::Vaults::new(
                settings.max_vaults,
                settings.allow_private_urls,
            )),
            environments: Default::default(),
            paths: crate::services::paths::PathGuard::from_section(&Default::default())
                .expect("the default path policy is valid"),
            webhooks: crate::server::agents::webhooks::Webhooks::new(&settings),
            settings,
            definitions: Default::default(),
            files: Default::default(),
            sessions: Mutex::new(HashMap::new()),
            next_serial: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub fn with_paths(mut self, paths: crate::services::paths::PathGuard) -> Agents {
        self.paths = paths;
        self
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
        body: SessionCreate,
    ) -> Result<Value, ApiError> {
        Ok(self.create_handle(owner, header, body)?.snapshot())
    }

    /// Creates the session (and queues its first turn when `input` is given); the handle,
    /// for a caller that streams its events.
    pub fn create_handle(
        &self,
        owner: &str,
        header: Option<&str>,
        body: SessionCreate,
    ) -> Result<Arc<SessionHandle>, ApiError> {
        body.wants_stream()?;
        let agent = body.agent_fields()?;
        let definition = match body.agent_id.as_deref() {
            Some(id) => Some(self.definitions.get(owner, id)?),
            None => None,
        };
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
                let explicit = body
                    .adapter
                    .as_deref()
                    .or(body.runtime.as_deref())
                    .or(opt_str(&agent, "adapter", "agent.adapter")?)
                    .or(opt_str(&agent, "runtime", "agent.runtime")?);
                let model = opt_str(&agent, "model", "agent.model")?;
                let selection =
                    runtimes::select(header, explicit, model, self.settings.default_runtime)?;
                runtimes::require_installed(selection.runtime)?;
                agent_spec::build(&agent, "agent", selection, model, None)?
            }
        };
        let metadata = match &body.metadata {
            Some(metadata) => metadata.read("metadata")?,
            None => Map::new(),
        };
        let first_input = match &body.input {
            None | Some(Value::Null) => None,
            Some(v) => Some(input::input_text(v, "input")?),
        };
        let (mut setup, files) = self.session_environment(
            owner,
            body.environment.map(|Object(config)| config),
            body.environment_template_id.as_deref(),
        )?;
        setup.vault_ids = body.vault_ids.unwrap_or_default();
        if !setup.vault_ids.is_empty() {
            let tools_param = if body.agent_id.is_some() {
                "agent_id.tools"
            } else {
                "agent.tools"
            };
            setup.bindings = injection::bind(
                &self.vaults,
                owner,
                &setup.vault_ids,
                &spec.tools,
                tools_param,
            )?;
            setup.vaults = Some(self.vaults.clone());
            // A credential already deleted or expired refuses the session, not its first turn.
            injection::tokens(&self.vaults, owner, &setup.bindings)?;
        }
        // Written last, once everything else was accepted.
        crate::server::agents::environments::place_files(
            &setup_workspace(&setup, &self.settings),
            &files,
        )?;

        let handle = self.open(owner, spec, metadata, setup);
        let created = handle.snapshot();
        handle
            .log
            .push("agent.session.created", json!({"session": created}));
        handle.log.follow(0, self.webhooks.sink(owner));
        let id = handle.id.clone();
        self.map().insert(id, handle.clone());
        if let Some(text) = first_input {
            self.enqueue(&handle, text);
        }
        Ok(handle)
    }

    /// Lists a session opened without [`Agents::create`]'s checks: tests that drive a
    /// session's log without a runtime installed.
    #[cfg(test)]
    pub(crate) fn register(&self, handle: Arc<SessionHandle>) {
        self.map().insert(handle.id.clone(), handle);
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

    pub fn update(&self, owner: &str, id: &str, body: SessionUpdate) -> Result<Value, ApiError> {
        let handle = self.get(owner, id)?;
        let metadata = body.metadata.map(|m| m.read("metadata")).transpose()?;
        let mut state = handle.lock();
        if let Some(metadata) = metadata {
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
        body: &EventsBody,
    ) -> Result<(), ApiError> {
        let handle = self.get(owner, id)?;
        let events = body.read()?;
        // A deleted or expired credential fails the input that would use it, not a later turn.
        if events.iter().any(|e| matches!(e, SessionInput::Message(_))) {
            turn::credential_tokens(&handle)?;
        }
        if let Some(key) = idempotency_key {
            // The body as read: the same events in another spacing or key order replay.
            let read = serde_json::to_vec(body).unwrap_or_default();
            let digest = hex(&Sha256::digest(&read));
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

    /// A new session that no list shows until the caller registers it, with nothing in its
    /// log: [`Agents::create`] tells its `created` before anyone can follow it. Responses
    /// keep their conversations this way and never tell it: no list, route or webhook
    /// reaches a conversation's session, so the event (the whole session, rendered) would
    /// be made for no reader, in the request, before the runtime starts.
    pub fn open(
        &self,
        owner: &str,
        spec: AgentSpec,
        metadata: Map<String, Value>,
        mut setup: SessionSetup,
    ) -> Arc<SessionHandle> {
        if let Some(launch) = self.settings.launch.get(spec.runtime.id) {
            setup.launch = launch.clone();
        }
        setup.child_base = self.settings.child_env.clone();
        setup.turn_timeout = self.settings.turn_timeout;
        setup.max_output_bytes = self.settings.max_output_bytes;
        let id = ids::new("agsess");
        let now = ids::now();
        let state = SessionState {
            created_at: now,
            last_active_at: now,
            status: SessionStatus::Idle,
            metadata,
            agent: spec,
            workspace: setup_workspace(&setup, &self.settings),
            setup,
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
        Arc::new(SessionHandle {
            serial: self
                .next_serial
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            log: EventLog::new(&id, self.settings.event_history),
            id,
            owner: owner.to_owned(),
            state: Mutex::new(state),
        })
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
            output_truncated: false,
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
            drop(state);
            // An idle session's turn starts its runtime in this request, before it is answered.
            let first = if busy {
                None
            } else {
                turn::launch_now(handle, &turn_id)
            };
            tokio::spawn(turn::work(handle.clone(), first));
        }
        turn_id
    }
}

fn setup_workspace(setup: &SessionSetup, settings: &AgentsSettings) -> std::path::PathBuf {
    setup
        .workspace
        .clone()
        .unwrap_or_else(|| settings.workspace.clone())
}

impl Agents {
    /// The session's `environment` (inline, or `id` of a created environment) and
    /// `environment_template_id` (top level or inside `environment`): where the runtime runs,
    /// its variables, and the files to write before the session starts.
    fn session_environment(
        &self,
        owner: &str,
        config: Option<EnvironmentConfig>,
        top_template: Option<&str>,
    ) -> Result<(SessionSetup, Vec<FileSpec>), ApiError> {
        let mut setup = SessionSetup::default();
        let config = config.unwrap_or_default();
        config.refuse_wrapper("environment")?;
        let mut resolved = self.resolve_environment(owner, &config, "environment", true)?;
        if let Some(id) = top_template {
            if resolved.template_id.as_deref().is_some_and(|t| t != id) {
                return Err(invalid(
                    "environment_template_id",
                    "two different templates were named; give one",
                ));
            }
            let template = self.environments.templates.get(owner, id)?;
            resolved.template_env = template.env;
            // The template's files come first; an inline file with the same path replaces one.
            let mut files: Vec<FileSpec> = template
                .files
                .into_iter()
                .filter(|t| !resolved.files.iter().any(|f| f.path == t.path))
                .collect();
            files.append(&mut resolved.files);
            resolved.files = files;
        }
        let reference = config
            .id
            .as_deref()
            .map(|id| ("environment.id", id))
            .or(config
                .environment_id
                .as_deref()
                .map(|id| ("environment.environment_id", id)));
        let mut variables = resolved.template_env;
        if let Some((param, id)) = reference {
            let environment = self
                .environments
                .get(owner, id)
                .map_err(|e| e.with_param(param))?;
            if resolved
                .workspace
                .as_ref()
                .is_some_and(|w| *w != environment.workspace)
            {
                return Err(invalid(
                    "environment.workspace_directory",
                    format!(
                        "the environment `{id}` works in `{}`; leave `workspace_directory` out or give the same",
                        environment.workspace.display()
                    ),
                ));
            }
            setup.workspace = Some(environment.workspace.clone());
            setup.environment_id = Some(environment.id.clone());
            variables.extend(environment.env);
            setup.differences.extend(environment.differences);
        }
        variables.extend(resolved.env);
        if let Some(w) = resolved.workspace {
            setup.workspace = Some(w);
        }
        setup.env = variables;
        setup.differences.extend(resolved.differences);
        // Template files land only now that the workspace is known: the path policy again.
        let workspace = setup_workspace(&setup, &self.settings);
        for file in &resolved.files {
            self.may_write(&workspace.join(&file.path), "environment_template_id")?;
        }
        Ok((setup, resolved.files))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
