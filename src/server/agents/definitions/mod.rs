//! Saved agent definitions (POST /v1/agents): a runtime, model, instructions and MCP tools
//! that sessions start from. A session copies the definition when it starts, so a later
//! update or delete never changes a running session.

pub mod wire;

use crate::error::ApiError;
use crate::server::agents::agent_spec;
use crate::server::agents::agent_spec::AgentSpec;
use crate::server::agents::input::{self, invalid, not_found, opt_str};
use crate::server::agents::runtimes;
use crate::server::agents::wire::Deleted;
use crate::services::ids;
use serde_json::{Map, Value};
use std::sync::Mutex;
use wire::{
    AgentDefinition, DefinitionBody, DefinitionXSvc, MultiAgent, Reasoning, Text, TextFormat,
};

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

    pub fn answer(&self) -> AgentDefinition {
        let s = &self.spec;
        AgentDefinition {
            id: s.id.clone(),
            object: "agent",
            created_at: self.created_at,
            updated_at: self.updated_at,
            name: s.name.clone(),
            model: s.model_shown.clone(),
            instructions: s.instructions.clone(),
            metadata: self.metadata.clone(),
            tools: s.tools.iter().map(|t| t.to_json()).collect(),
            reasoning: Reasoning {
                effort: s.reasoning_effort.clone(),
            },
            multi_agent: MultiAgent { enabled: false },
            service_tier: s.service_tier.clone(),
            text: Text {
                format: TextFormat { kind: "text" },
                verbosity: "medium",
            },
            x_svc: DefinitionXSvc {
                compute: "local_state",
                runtime: s.runtime.id,
                model_resolved: s.model_for_cli.is_some(),
            },
        }
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
        body: DefinitionBody,
        default_runtime: &str,
    ) -> Result<AgentDefinition, ApiError> {
        let id = ids::new("agent");
        let explicit = body.adapter.clone().flatten();
        let explicit = explicit.or(body.runtime.clone().flatten());
        let definition = build(
            owner,
            &body.to_map(),
            header,
            explicit.as_deref(),
            default_runtime,
            id,
        )?;
        let answer = definition.answer();
        self.lock().push(definition);
        Ok(answer)
    }

    pub fn get(&self, owner: &str, id: &str) -> Result<Definition, ApiError> {
        self.lock()
            .iter()
            .find(|d| d.id() == id && d.owner == owner)
            .cloned()
            .ok_or_else(|| not_found("agent definition", "agent_id", id))
    }

    pub fn list(&self, owner: &str) -> Vec<AgentDefinition> {
        self.lock()
            .iter()
            .filter(|d| d.owner == owner)
            .map(Definition::answer)
            .collect()
    }

    /// In place: omitted fields keep their values; the runtime never changes.
    pub fn update(
        &self,
        owner: &str,
        id: &str,
        body: DefinitionBody,
    ) -> Result<AgentDefinition, ApiError> {
        let current = self.get(owner, id)?;
        for (key, given) in [("adapter", &body.adapter), ("runtime", &body.runtime)] {
            if given.is_some() {
                return Err(invalid(
                    key,
                    "a definition cannot change its runtime; create a new one",
                ));
            }
        }
        let mut merged = current.body.clone();
        merged.extend(body.to_map());
        let runtime = current.spec.runtime.id;
        let mut updated = build(owner, &merged, None, Some(runtime), runtime, id.to_owned())?;
        updated.created_at = current.created_at;
        let answer = updated.answer();
        let mut list = self.lock();
        if let Some(slot) = list.iter_mut().find(|d| d.id() == id && d.owner == owner) {
            *slot = updated;
        }
        Ok(answer)
    }

    pub fn delete(&self, owner: &str, id: &str) -> Result<Deleted, ApiError> {
        self.get(owner, id)?;
        self.lock().retain(|d| !(d.id() == id && d.owner == owner));
        Ok(Deleted::new(id, "agent.deleted"))
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
