//! The environment routes' bodies and answers (agents spec 2.7, 4.6), and the inline
//! `environment` a session gives. The group reads the bodies through its typed extractor
//! and documents both from these types; `config` judges what the types cannot say (paths,
//! variable names, the hosted-only keys).

use crate::error::ApiError;
use crate::server::agents::input::invalid;
use crate::server::agents::wire::{Object, given};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Keys of hosted environments that need a container this server does not provision.
pub const REFUSED_KEYS: [&str; 8] = [
    "network",
    "packages",
    "setup_commands",
    "plugins",
    "skills",
    "desktop",
    "container_size",
    "capability_directories",
];

/// A key's name where it stands (`environment.files[0].path`).
pub fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// An environment's configuration: `POST /v1/agents/environments` (flat, or wrapped as
/// `{environment: {...}, vault_ids}`), and a session's inline `environment`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "EnvironmentParam")]
pub struct EnvironmentConfig {
    /// `self_hosted` (a hosted type without configuration is converted).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Sessions only: an existing environment.
    pub id: Option<String>,
    /// Sessions only: an existing environment.
    pub environment_id: Option<String>,
    pub workspace_directory: Option<String>,
    pub env: Option<BTreeMap<String, String>>,
    #[schemars(with = "Option<Vec<FileParam>>")]
    pub files: Option<Vec<Object<FileParam>>>,
    pub environment_template_id: Option<String>,
    /// The create's wrapped form (the SDK's): the configuration inside.
    #[schemars(skip)]
    pub environment: Option<Box<Object<EnvironmentConfig>>>,
    /// The create's wrapped form: vaults attach to sessions, so only an empty list.
    #[schemars(skip)]
    pub vault_ids: Option<Vec<Value>>,
    #[schemars(skip)]
    pub network: Option<Value>,
    #[schemars(skip)]
    pub packages: Option<Value>,
    #[schemars(skip)]
    pub setup_commands: Option<Value>,
    #[schemars(skip)]
    pub plugins: Option<Value>,
    #[schemars(skip)]
    pub skills: Option<Value>,
    #[schemars(skip)]
    pub desktop: Option<Value>,
    #[schemars(skip)]
    pub container_size: Option<Value>,
    #[schemars(skip)]
    pub capability_directories: Option<Value>,
}

impl EnvironmentConfig {
    /// The hosted-only keys, each with whether it was given (`null` counts as absent).
    pub fn hosted(&self) -> [(&'static str, bool); 8] {
        hosted([
            &self.network,
            &self.packages,
            &self.setup_commands,
            &self.plugins,
            &self.skills,
            &self.desktop,
            &self.container_size,
            &self.capability_directories,
        ])
    }

    /// The configuration keys given, beside `type` and a reference to an environment: what
    /// a hosted type cannot be converted with.
    pub fn configured(&self) -> Vec<&'static str> {
        let own = [
            ("workspace_directory", self.workspace_directory.is_some()),
            ("env", self.env.is_some()),
            ("files", self.files.is_some()),
            (
                "environment_template_id",
                self.environment_template_id.is_some(),
            ),
        ];
        own.into_iter()
            .chain(self.hosted())
            .filter_map(|(key, given)| given.then_some(key))
            .collect()
    }

    /// The create's body as one configuration and where it stands: the wrapped form's
    /// inner object (nothing else beside it but an empty `vault_ids`), or the flat form.
    pub fn into_create(mut self) -> Result<(EnvironmentConfig, &'static str), ApiError> {
        let Some(inner) = self.environment.take() else {
            self.refuse_wrapper("")?;
            return Ok((self, ""));
        };
        if self.vault_ids.as_ref().is_some_and(|v| !v.is_empty()) {
            return Err(invalid(
                "vault_ids",
                "vaults attach to sessions here: pass `vault_ids` when creating the session",
            ));
        }
        if let Some(key) = self.configured().first().copied().or(self.reference()) {
            return Err(unknown(key));
        }
        let Object(inner) = *inner;
        inner.refuse_wrapper("environment")?;
        Ok((inner, "environment"))
    }

    /// The wrapper's keys anywhere but at the create's top level.
    pub fn refuse_wrapper(&self, prefix: &str) -> Result<(), ApiError> {
        let key = if self.environment.is_some() {
            "environment"
        } else if self.vault_ids.is_some() {
            "vault_ids"
        } else {
            return Ok(());
        };
        Err(unknown(&join(prefix, key)))
    }

    /// `type`, `id` or `environment_id`, the first given (`type` with the others counts).
    fn reference(&self) -> Option<&'static str> {
        [
            ("type", self.kind.is_some()),
            ("id", self.id.is_some()),
            ("environment_id", self.environment_id.is_some()),
        ]
        .into_iter()
        .find_map(|(key, given)| given.then_some(key))
    }
}

/// The hosted-only keys (read so the refusal can name them, never documented as accepted)
/// paired with whether each was given, in [`REFUSED_KEYS`]' order.
fn hosted(given: [&Option<Value>; 8]) -> [(&'static str, bool); 8] {
    std::array::from_fn(|i| (REFUSED_KEYS[i], given[i].is_some()))
}

/// The words of a key the body may not hold where it stands.
pub fn unknown(param: &str) -> ApiError {
    invalid(param, format!("unknown or unsupported parameter `{param}`"))
}

/// A file to place in a workspace: inline base64 `data`, or an uploaded `file_id` (`type`
/// says which, or the key does). Also the body of `POST .../files`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileParam {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub path: Option<String>,
    pub data: Option<String>,
    pub file_id: Option<String>,
}

// Two shapes told apart by a key: more than a derive says.
impl JsonSchema for FileParam {
    fn schema_name() -> Cow<'static, str> {
        "FileParam".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
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
        })
    }
}

/// A template's body (create and update; on update what is given replaces).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "EnvironmentTemplateBody",
    description = "The hosted platform's keys (packages, network, plugins, ...) are refused unless empty."
)]
pub struct TemplateBody {
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Option<String>")]
    pub name: Option<Option<String>>,
    pub env: Option<BTreeMap<String, String>>,
    #[schemars(with = "Option<Vec<FileParam>>")]
    pub files: Option<Vec<Object<FileParam>>>,
    #[schemars(skip)]
    pub network: Option<Value>,
    #[schemars(skip)]
    pub packages: Option<Value>,
    #[schemars(skip)]
    pub setup_commands: Option<Value>,
    #[schemars(skip)]
    pub plugins: Option<Value>,
    #[schemars(skip)]
    pub skills: Option<Value>,
    #[schemars(skip)]
    pub desktop: Option<Value>,
    #[schemars(skip)]
    pub container_size: Option<Value>,
    #[schemars(skip)]
    pub capability_directories: Option<Value>,
}

impl TemplateBody {
    /// The hosted-only keys, each with whether it was given.
    pub fn hosted(&self) -> [(&'static str, bool); 8] {
        hosted([
            &self.network,
            &self.packages,
            &self.setup_commands,
            &self.plugins,
            &self.skills,
            &self.desktop,
            &self.container_size,
            &self.capability_directories,
        ])
    }
}

/// An environment: a self-hosted workspace.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AgentEnvironment")]
pub struct EnvironmentObject {
    pub id: String,
    #[schemars(extend("const" = "agent.environment"))]
    pub object: &'static str,
    #[serde(rename = "type")]
    #[schemars(extend("const" = "self_hosted"))]
    pub kind: &'static str,
    pub status: &'static str,
    pub workspace_directory: PathBuf,
    /// Unix seconds.
    pub created_at: i64,
    pub environment_template_id: Option<String>,
    pub files: Vec<PlacedFile>,
    /// Hosted only: always empty here.
    pub plugins: [Value; 0],
    /// Hosted only: always empty here.
    pub skills: [Value; 0],
    pub x_svc: LocalCompute,
}

/// A file placed through the API: never its content.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlacedFile {
    pub id: String,
    /// `inline` or `file_id`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub path: String,
    pub size_bytes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
}

/// How the server ran what a hosted platform would: locally, and what differs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LocalCompute {
    #[schemars(extend("const" = "local_state"))]
    pub compute: &'static str,
    pub differences: Vec<String>,
}

/// A template: the hosted-only parts are present and empty, since the server refuses them;
/// files show their size only.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "EnvironmentTemplate")]
pub struct TemplateObject {
    pub id: String,
    #[schemars(extend("const" = "agent.environment.template"))]
    pub object: &'static str,
    pub name: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub updated_at: i64,
    pub files: Vec<TemplateFile>,
    pub capability_directories: [Value; 0],
    pub network: TemplateNetwork,
    pub packages: TemplatePackages,
    pub plugins: [Value; 0],
    pub skills: [Value; 0],
    pub desktop: Option<Value>,
    pub x_svc: TemplateCompute,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TemplateFile {
    #[serde(rename = "type")]
    #[schemars(extend("const" = "inline"))]
    pub kind: &'static str,
    pub path: String,
    pub size_bytes: usize,
}

/// The network a hosted template would have: here the machine's own.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TemplateNetwork {
    #[schemars(extend("const" = "enabled"))]
    pub access: &'static str,
    pub allowed_domains: [String; 0],
}

/// Packages a hosted template would install: none here.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct TemplatePackages {
    pub npm: [String; 0],
    pub python: [String; 0],
    pub system: [String; 0],
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TemplateCompute {
    #[schemars(extend("const" = "local_state"))]
    pub compute: &'static str,
    /// How many variables the template sets (their values are never shown).
    pub env_count: usize,
}

/// A file in an environment's workspace.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "EnvironmentFile")]
pub struct EnvironmentFile {
    pub environment_id: String,
    #[schemars(extend("const" = "agent.environment.file"))]
    pub object: &'static str,
    pub path: String,
    pub size_bytes: u64,
}

/// A page of a workspace's files, in path order; `next` continues it.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "EnvironmentFilePage")]
pub struct FilePage {
    #[schemars(extend("const" = "list"))]
    pub object: &'static str,
    pub data: Vec<EnvironmentFile>,
    pub has_more: bool,
    /// The next page's `page`.
    pub next: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::agents::wire::read;
    use serde_json::json;

    fn create(body: Value) -> Result<(EnvironmentConfig, &'static str), ApiError> {
        read::<EnvironmentConfig>(&body, "")?.into_create()
    }

    /// The flat and the wrapped form read as one configuration; the wrapper's keys are
    /// refused anywhere else, naming where they stand.
    #[test]
    fn the_create_body_has_two_forms_and_one_reader() {
        let (flat, at) = create(json!({"workspace_directory": "/srv/a"})).unwrap();
        assert_eq!(
            (flat.workspace_directory.as_deref(), at),
            (Some("/srv/a"), "")
        );
        let (inner, at) =
            create(json!({"environment": {"env": {"A": "1"}}, "vault_ids": []})).unwrap();
        assert_eq!((inner.env.unwrap()["A"].as_str(), at), ("1", "environment"));
        let refusals = [
            (json!({"environment": {}, "env": {}}), "env"),
            (json!({"environment": {}, "vault_ids": ["v"]}), "vault_ids"),
            (json!({"vault_ids": []}), "vault_ids"),
            (
                json!({"environment": {"environment": {}}}),
                "environment.environment",
            ),
            (json!({"environment": {"tools": []}}), "environment.tools"),
            (json!({"env": {"A": 1}}), "env.A"),
        ];
        for (body, param) in refusals {
            let e = create(body.clone()).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{body}");
        }
    }

    /// A hosted key is read only to be refused by name, first in the documented order.
    #[test]
    fn hosted_keys_are_named() {
        let config: EnvironmentConfig = read(&json!({"skills": [], "network": {}}), "").unwrap();
        let given: Vec<_> = config.hosted().into_iter().filter(|(_, g)| *g).collect();
        assert_eq!(given, [("network", true), ("skills", true)]);
        assert_eq!(config.configured(), ["network", "skills"]);
    }
}
