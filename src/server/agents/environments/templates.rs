//! Environment templates: a name, variables and files, applied when an environment or a
//! session names the template. Shown without variable values or file contents.

use crate::error::ApiError;
use crate::server::agents::Agents;
use crate::server::agents::environments::config::{self, FileSpec};
use crate::server::agents::environments::paths::{self, VIRTUAL_ROOT};
use crate::server::agents::environments::wire::{
    TemplateBody, TemplateCompute, TemplateFile, TemplateNetwork, TemplateObject, TemplatePackages,
};
use crate::server::agents::input::not_found;
use crate::server::agents::wire::Deleted;
use crate::services::ids;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Clone)]
pub struct Template {
    pub id: String,
    pub owner: String,
    pub name: Option<String>,
    pub env: BTreeMap<String, String>,
    pub files: Vec<FileSpec>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Template {
    pub fn object(&self) -> TemplateObject {
        TemplateObject {
            id: self.id.clone(),
            object: "agent.environment.template",
            name: self.name.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            files: self
                .files
                .iter()
                .map(|f| TemplateFile {
                    kind: "inline",
                    path: paths::shown(Path::new(VIRTUAL_ROOT), &f.path),
                    size_bytes: f.bytes.len(),
                })
                .collect(),
            capability_directories: [],
            network: TemplateNetwork {
                access: "enabled",
                allowed_domains: [],
            },
            packages: TemplatePackages::default(),
            plugins: [],
            skills: [],
            desktop: None,
            x_svc: TemplateCompute {
                compute: "local_state",
                env_count: self.env.len(),
            },
        }
    }
}

#[derive(Default)]
pub struct Templates {
    list: Mutex<Vec<Template>>,
}

impl Templates {
    fn lock(&self) -> MutexGuard<'_, Vec<Template>> {
        self.list.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, owner: &str, id: &str) -> Result<Template, ApiError> {
        self.lock()
            .iter()
            .find(|t| t.id == id && t.owner == owner)
            .cloned()
            .ok_or_else(|| not_found("environment template", "environment_template_id", id))
    }
}

struct Fields {
    name: Option<Option<String>>,
    env: Option<BTreeMap<String, String>>,
    files: Option<Vec<FileSpec>>,
}

impl Agents {
    fn template_fields(&self, owner: &str, body: &TemplateBody) -> Result<Fields, ApiError> {
        config::refuse_hosted_keys(body.hosted(), "")?;
        Ok(Fields {
            name: body.name.clone(),
            env: match &body.env {
                None => None,
                Some(v) => Some(config::env(Some(v), "env")?),
            },
            files: match &body.files {
                None => None,
                Some(v) => Some(config::files(
                    Some(v),
                    "files",
                    owner,
                    &self.files,
                    Path::new(VIRTUAL_ROOT),
                    self.settings.max_file_bytes,
                )?),
            },
        })
    }

    pub fn template_create(
        &self,
        owner: &str,
        body: TemplateBody,
    ) -> Result<TemplateObject, ApiError> {
        let fields = self.template_fields(owner, &body)?;
        let now = ids::now();
        let template = Template {
            id: ids::new("envtpl"),
            owner: owner.to_owned(),
            name: fields.name.flatten(),
            env: fields.env.unwrap_or_default(),
            files: fields.files.unwrap_or_default(),
            created_at: now,
            updated_at: now,
        };
        let object = template.object();
        self.environments.templates.lock().push(template);
        Ok(object)
    }

    pub fn template_list(&self, owner: &str) -> Vec<TemplateObject> {
        self.environments
            .templates
            .lock()
            .iter()
            .filter(|t| t.owner == owner)
            .map(Template::object)
            .collect()
    }

    pub fn template_get(&self, owner: &str, id: &str) -> Result<TemplateObject, ApiError> {
        Ok(self.environments.templates.get(owner, id)?.object())
    }

    /// Replaces the fields given; the others stay. Environments and sessions created before
    /// keep what they were given.
    pub fn template_update(
        &self,
        owner: &str,
        id: &str,
        body: TemplateBody,
    ) -> Result<TemplateObject, ApiError> {
        self.environments.templates.get(owner, id)?;
        let fields = self.template_fields(owner, &body)?;
        let mut list = self.environments.templates.lock();
        let template = list
            .iter_mut()
            .find(|t| t.id == id && t.owner == owner)
            .ok_or_else(|| not_found("environment template", "environment_template_id", id))?;
        if let Some(name) = fields.name {
            template.name = name;
        }
        if let Some(env) = fields.env {
            template.env = env;
        }
        if let Some(files) = fields.files {
            template.files = files;
        }
        template.updated_at = ids::now();
        Ok(template.object())
    }

    pub fn template_delete(&self, owner: &str, id: &str) -> Result<Deleted, ApiError> {
        let mut list = self.environments.templates.lock();
        let before = list.len();
        list.retain(|t| !(t.id == id && t.owner == owner));
        if list.len() == before {
            return Err(not_found(
                "environment template",
                "environment_template_id",
                id,
            ));
        }
        Ok(Deleted::new(id, "agent.environment.template.deleted"))
    }
}
