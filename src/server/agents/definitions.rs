//! Saved agent definitions (POST /v1/agents): a runtime, model, instructions and MCP tools
//! that sessions start from. A session copies the definition when it starts, so a later
//! update or delete never changes a running session.

use crate::error::ApiError;
use crate::server::agents::agent_spec;
use crate::server::agents::agent_spec::AgentSpec;
use crate::server::agents::input::not_found;
use crate::server::agents::input::{self, invalid, only_keys, opt_str};
use crate::server::agents::runtimes;
use crate::services::ids;
use serde_json::{Map, Value, json};
use std::sync::Mutex;

const KEYS: &[&str] = &[
    "model",
    "name",
    "instructions",
    "metadata",
    "tools",
    "reasoning",
    "multi_agent",
    "service_tier",
    "text",
    "adapter",
    "runtime",
];

#[derive(Debug, Clone)]
pub struct Definition {
    pub owner: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub metadata: Map<String, Value>,
    pub spec: AgentSpec,
    /// The accepted body, secrets included, so an update can merge into it; never returned.
    body: Map<String, Value>,
}

impl Definition {
    pub fn id(&self) -> &str {
        &self.spec.id
    }

    pub fn to_json(&self) -> Value {
        let s = &self.spec;
        json!({
            "id": s.id,
            "object": "agent",
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "name": s.name,
            "model": s.model_shown,
            "instructions": s.instructions,
            "metadata": self.metadata,
            "tools": s.tools.iter().map(|t| t.to_json()).collect::<Vec<_>>(),
            "reasoning": match &s.reasoning_effort { Some(e) => json!({"effort": e}), None => json!({}) },
            "multi_agent": {"enabled": false},
            "service_tier": s.service_tier,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "x_svc": {"compute": "local_state", "runtime": s.runtime.id, "model_resolved": s.model_for_cli.is_some()},
        })
    }
}

#[derive(Default)]
pub struct Definitions {
    /// Creation order.
    list: Mutex<Vec<Definition>>,
}

impl Definitions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Definition>> {
        self.list.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn create(
        &self,
        owner: &str,
        header: Option<&str>,
        body: &Value,
        default_runtime: &str,
    ) -> Result<Value, ApiError> {
        let map = input::object(body, "body")?;
        only_keys(map, KEYS, "")?;
        let id = ids::new("agent");
        let explicit = opt_str(map, "adapter", "adapter")?.or(opt_str(map, "runtime", "runtime")?);
        let definition = build(owner, map, header, explicit, default_runtime, id)?;
        let json = definition.to_json();
        self.lock().push(definition);
        Ok(json)
    }

    pub fn get(&self, owner: &str, id: &str) -> Result<Definition, ApiError> {
        self.lock()
            .iter()
            .find(|d| d.id() == id && d.owner == owner)
            .cloned()
            .ok_or_else(|| not_found("agent definition", "agent_id", id))
    }

    pub fn list(&self, owner: &str) -> Vec<Value> {
        self.lock()
            .iter()
            .filter(|d| d.owner == owner)
            .map(Definition::to_json)
            .collect()
    }

    /// In place: omitted fields keep their values; the runtime never changes.
    pub fn update(&self, owner: &str, id: &str, body: &Value) -> Result<Value, ApiError> {
        let current = self.get(owner, id)?;
        let map = input::object(body, "body")?;
        for key in ["adapter", "runtime"] {
            if map.contains_key(key) {
                return Err(invalid(
                    key,
                    "a definition cannot change its runtime; create a new one",
                ));
            }
        }
        only_keys(map, KEYS, "")?;
        let mut merged = current.body.clone();
        for (k, v) in map {
            merged.insert(k.clone(), v.clone());
        }
        let runtime = current.spec.runtime.id;
        let mut updated = build(owner, &merged, None, Some(runtime), runtime, id.to_owned())?;
        updated.created_at = current.created_at;
        let json = updated.to_json();
        let mut list = self.lock();
        if let Some(slot) = list.iter_mut().find(|d| d.id() == id && d.owner == owner) {
            *slot = updated;
        }
        Ok(json)
    }

    pub fn delete(&self, owner: &str, id: &str) -> Result<Value, ApiError> {
        self.get(owner, id)?;
        self.lock().retain(|d| !(d.id() == id && d.owner == owner));
        Ok(json!({"id": id, "object": "agent.deleted", "deleted": true}))
    }
}

fn build(
    owner: &str,
    map: &Map<String, Value>,
    header: Option<&str>,
    explicit: Option<&str>,
    default_runtime: &str,
    id: String,
) -> Result<Definition, ApiError> {
    let model = opt_str(map, "model", "model")?
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| {
            invalid(
                "model",
                "`model` is required: a model id for the CLI or a runtime name",
            )
        })?;
    let selection = runtimes::select(header, explicit, Some(model), default_runtime)?;
    let spec = agent_spec::build(map, "", selection, Some(model), Some(id))?;
    let metadata = input::metadata(map.get("metadata").filter(|v| !v.is_null()), "metadata")?;
    let now = ids::now();
    Ok(Definition {
        owner: owner.to_owned(),
        created_at: now,
        updated_at: now,
        metadata,
        spec,
        body: map.clone(),
    })
}
