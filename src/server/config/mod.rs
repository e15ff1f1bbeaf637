//! Effective configuration: `template.yaml` plus `SVC_*` environment variables plus the
//! launching program's own choices, validated once at start-up. Every error names the key
//! (and the file line where the YAML parser knows it); nothing here panics on bad input.

pub(crate) mod env;
pub mod error;
pub mod template;

use crate::server::auth::{Identities, Identity};
use crate::server::endpoints::{ENDPOINTS, Group};
use crate::server::policy::limits::{LimitSpec, parse_rate};
use crate::services::commands::CommandRegistry;
use crate::services::paths::PathGuard;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
pub use template::{AuditMode, SymlinkPolicy};
use template::{GroupSwitches, LimitEntry, Template};

pub const DEFAULT_MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;

/// The template `svc serve --demo` runs with: agents on, one harmless named command.
pub const DEMO_TEMPLATE: &str = include_str!("demo.yaml");

pub use error::ConfigError;

fn err<T>(message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(message.into()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Only endpoints that read: everything that writes or executes is switched off.
    ReadOnly,
}

impl Preset {
    pub const NAMES: &'static [&'static str] = &["read-only"];

    pub fn parse(name: &str) -> Option<Preset> {
        match name {
            "read-only" => Some(Preset::ReadOnly),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Preset::ReadOnly => "read-only",
        }
    }
}

/// Where the configuration comes from besides the environment.
#[derive(Debug, Default, Clone)]
pub struct LoadOptions {
    pub config_path: Option<PathBuf>,
    /// Use the embedded demo template instead of a file.
    pub demo: bool,
    /// Group switches chosen by the launching program (`--enable-group` / `--disable-group`).
    pub code_groups: Vec<(Group, bool)>,
}

/// `server.connections`, resolved.
#[derive(Debug, Clone)]
pub struct ConnectionSettings {
    pub max: usize,
    pub header_timeout: std::time::Duration,
}

impl ConnectionSettings {
    fn from_section(section: &template::ConnectionsSection) -> Result<Self, ConfigError> {
        let max = match section.max {
            Some(n) => positive("server.connections.max", n as u64)? as usize,
            None => crate::connections::default_max_connections(),
        };
        let header_timeout = match section.header_timeout_secs {
            Some(secs) => std::time::Duration::from_secs(positive(
                "server.connections.header_timeout_secs",
                secs,
            )?),
            None => crate::connections::DEFAULT_HEADER_TIMEOUT,
        };
        Ok(ConnectionSettings {
            max,
            header_timeout,
        })
    }
}

#[derive(Debug)]
pub struct Settings {
    pub source: Option<String>,
    pub configured: bool,
    pub identities: Identities,
    pub preset: Option<Preset>,
    pub endpoint_switches: HashMap<&'static str, bool>,
    pub group_policy: HashMap<Group, bool>,
    pub env_groups: HashMap<Group, bool>,
    pub code_groups: HashMap<Group, bool>,
    /// Per endpoint, indexed like [`ENDPOINTS`].
    pub limits: Vec<LimitSpec>,
    pub audit: AuditMode,
    pub audit_file: Option<PathBuf>,
    pub paths: PathGuard,
    pub commands: CommandRegistry,
    /// Which programs and variables a caller may hand a child (`process:`).
    pub exec: crate::services::exec_rules::ExecRules,
    /// Who children run as (`process.run_as`); `None`: the server's own user.
    pub run_as: Option<crate::services::child_user::ChildUser>,
    /// Identity tokens are written in the config file (not `token_env`): whoever can read
    /// the file holds them.
    pub tokens_in_file: bool,
    pub agents: crate::server::agents::settings::AgentsSettings,
    /// What every child starts from (never the server's own environment).
    pub child_env: crate::services::child_env::ChildEnv,
    /// `code_run` languages and `http_fetch` hosts (`dev_tools:`).
    pub dev_tools: DevToolsSettings,
    /// What the listeners allow a connection (`server.connections`).
    pub connections: ConnectionSettings,
    pub warnings: Vec<String>,
    pub revision: String,
}

impl Settings {
    /// Loads from the process environment.
    pub fn load(options: &LoadOptions) -> Result<Settings, ConfigError> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Settings::load_with_env(options, &env)
    }

    pub fn load_with_env(
        options: &LoadOptions,
        env: &BTreeMap<String, String>,
    ) -> Result<Settings, ConfigError> {
        let (source, text) = read_template(options, env)?;
        let template: Template = match &text {
            Some(text) => serde_saphyr::from_str(text).map_err(|e| {
                ConfigError(format!(
                    "{}: {e}",
                    source.as_deref().unwrap_or("template.yaml")
                ))
            })?,
            None => Template::default(),
        };
        let mut settings = resolve(template, source.clone(), env)?;
        settings.configured = text.is_some()
            || env
                .keys()
                .any(|k| env::is_server_var(k) || k.starts_with("SVC_AGENTS_"));
        for (group, on) in &options.code_groups {
            settings.code_groups.insert(*group, *on);
        }
        settings.revision = revision(text.as_deref(), env, &options.code_groups);
        Ok(settings)
    }

    /// Defaults only: no template, no environment.
    pub fn defaults() -> Settings {
        Settings::load_with_env(&LoadOptions::default(), &BTreeMap::new())
            .expect("defaults are valid")
    }
}

/// The user of `process.run_as`, checked: the server can start children as that user
/// (root can; another user only as itself), and the config file holding tokens
/// (`tokens_file`) is not readable by it.
fn children_user(
    spec: &str,
    tokens_file: Option<&str>,
) -> Result<crate::services::child_user::ChildUser, ConfigError> {
    use std::os::unix::fs::MetadataExt;
    let user = crate::services::child_user::resolve(spec)
        .map_err(|why| ConfigError(format!("process.run_as: {why}")))?;
    let own = nix::unistd::geteuid().as_raw();
    if own != 0 && user.uid != own {
        return err(format!(
            "process.run_as: the server runs as uid {own} and cannot start children as uid \
             {}: run it as root, or leave the key out",
            user.uid
        ));
    }
    if let Some(file) = tokens_file
        && let Ok(meta) = std::fs::metadata(file)
    {
        let mode = meta.mode();
        let readable = mode & 0o004 != 0
            || (meta.gid() == user.gid && mode & 0o040 != 0)
            || (meta.uid() == user.uid && mode & 0o400 != 0);
        if readable {
            return err(format!(
                "{file} holds identity tokens and the children's user ({}) can read it: \
                 `chmod 600 {file}`, or give the tokens with `token_env`",
                user.name
            ));
        }
    }
    Ok(user)
}

fn read_template(
    options: &LoadOptions,
    env: &BTreeMap<String, String>,
) -> Result<(Option<String>, Option<String>), ConfigError> {
    if options.demo {
        return Ok((Some("<demo>".into()), Some(DEMO_TEMPLATE.into())));
    }
    let path = match (&options.config_path, env.get("SVC_CONFIG")) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) if !p.is_empty() => PathBuf::from(p),
        _ => return Ok((None, None)),
    };
    let shown = path.display().to_string();
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((Some(shown), Some(text))),
        Err(e) => err(format!("{shown}: cannot read the config file: {e}")),
    }
}

fn resolve(
    template: Template,
    source: Option<String>,
    env: &BTreeMap<String, String>,
) -> Result<Settings, ConfigError> {
    let server = template.server;
    let mut warnings = Vec::new();

    let preset = match &server.preset {
        Some(name) => Some(parse_preset("server.preset", name)?),
        None => None,
    };

    let mut group_policy = HashMap::new();
    match server.groups {
        Some(GroupSwitches::List(names)) => {
            for name in names {
                group_policy.insert(parse_group("server.groups", &name)?, true);
            }
        }
        Some(GroupSwitches::Map(map)) => {
            for (name, on) in map {
                group_policy.insert(parse_group("server.groups", &name)?, on);
            }
        }
        None => {}
    }

    let mut endpoint_switches = HashMap::new();
    for (id, on) in server.endpoints {
        let endpoint = crate::server::endpoints::by_id(&id).ok_or_else(|| {
            ConfigError(format!(
                "server.endpoints.{id}: unknown endpoint id (see docs/endpoints.md)"
            ))
        })?;
        endpoint_switches.insert(endpoint.id, on);
    }

    let limits = resolve_limits(&server.limits)?;

    // Tokens written in the file (not `token_env`): whoever reads the file holds them.
    let tokens_in_file = template.identities.iter().any(|e| e.token.is_some());
    let mut identities = Vec::new();
    for (i, entry) in template.identities.into_iter().enumerate() {
        identities.push(Identity::from_entry(i, entry, env)?);
    }

    let paths = PathGuard::from_section(&template.paths).map_err(|e| ConfigError(e.0))?;
    let commands =
        CommandRegistry::from_entries(template.commands).map_err(|e| ConfigError(e.0))?;
    let exec = crate::services::exec_rules::ExecRules::from_section(&template.process)
        .map_err(ConfigError)?;
    let dev_tools = DevToolsSettings::from_section(&template.dev_tools)?;

    let mut settings = Settings {
        source,
        configured: false,
        identities: Identities::default(),
        preset,
        endpoint_switches,
        group_policy,
        env_groups: HashMap::new(),
        code_groups: HashMap::new(),
        limits,
        audit: server.audit.unwrap_or_default(),
        audit_file: server.audit_file,
        paths,
        commands,
        exec,
        run_as: None,
        tokens_in_file: false,
        agents: Default::default(),
        child_env: Default::default(),
        dev_tools,
        connections: ConnectionSettings::from_section(&server.connections)?,
        warnings: Vec::new(),
        revision: String::new(),
    };
    if let Some(bytes) = server.max_body_bytes {
        apply_default_body_limit(
            &mut settings.limits,
            positive("server.max_body_bytes", bytes)?,
        );
    }
    env::apply(&mut settings, &mut identities, env, &mut warnings)?;
    let mut pass = server.child_env;
    pass.extend(env::child_env_pass(env));
    settings.child_env = crate::services::child_env::ChildEnv::from_parent(env, &pass)
        .map_err(|why| ConfigError(format!("server.child_env / {}: {why}", env::CHILD_ENV)))?;
    settings.tokens_in_file = tokens_in_file;
    if let Some(spec) = &template.process.run_as {
        let tokens_file = settings.source.as_deref().filter(|_| tokens_in_file);
        let user = children_user(spec, tokens_file)?;
        settings.child_env = settings.child_env.for_user(&user.name, &user.home);
        settings.run_as = Some(user);
    }
    settings.agents =
        crate::server::agents::settings::AgentsSettings::from_env(env, &mut warnings)?;
    settings.agents.child_env = settings.child_env.clone();
    settings.agents.launch =
        crate::server::agents::settings::launch_from_template(template.agents)?;
    settings.identities = Identities::new(identities)?;
    if settings.identities.is_empty() {
        warnings.push(
            "no token configured: every caller is the identity `anonymous` holding every scope"
                .into(),
        );
    }
    if settings.audit != AuditMode::Off && settings.audit_file.is_none() {
        warnings.push("audit is on but no audit_file is set: entries go to the log".into());
    }
    settings.warnings = warnings;
    Ok(settings)
}

/// A group by name, for command-line flags.
pub fn parse_group_name(name: &str) -> Result<Group, String> {
    parse_group("group", name).map_err(|e| e.0)
}

pub(crate) fn parse_group(key: &str, name: &str) -> Result<Group, ConfigError> {
    Group::from_name(name.trim()).ok_or_else(|| {
        let known: Vec<_> = Group::ALL.iter().map(|g| g.name()).collect();
        ConfigError(format!(
            "{key}: unknown group `{name}` (known: {})",
            known.join(", ")
        ))
    })
}

pub(crate) fn parse_preset(key: &str, name: &str) -> Result<Preset, ConfigError> {
    Preset::parse(name).ok_or_else(|| {
        ConfigError(format!(
            "{key}: unknown preset `{name}` (known: {})",
            Preset::NAMES.join(", ")
        ))
    })
}

fn positive(key: &str, value: u64) -> Result<u64, ConfigError> {
    if value == 0 {
        return err(format!("{key}: must be greater than 0"));
    }
    Ok(value)
}

/// Group limits apply to each endpoint of the group (a group name is an alias for its
/// endpoint ids); an endpoint's own entry overrides them field by field.
fn resolve_limits(section: &template::LimitsSection) -> Result<Vec<LimitSpec>, ConfigError> {
    let mut by_group: HashMap<Group, LimitEntry> = HashMap::new();
    for (name, entry) in &section.groups {
        let group = parse_group("server.limits.groups", name)?;
        check_limit_entry(&format!("server.limits.groups.{name}"), entry)?;
        by_group.insert(group, entry.clone());
    }
    let mut by_endpoint: HashMap<&str, LimitEntry> = HashMap::new();
    for (id, entry) in &section.endpoints {
        let endpoint = crate::server::endpoints::by_id(id).ok_or_else(|| {
            ConfigError(format!(
                "server.limits.endpoints.{id}: unknown endpoint id (see docs/endpoints.md)"
            ))
        })?;
        check_limit_entry(&format!("server.limits.endpoints.{id}"), entry)?;
        by_endpoint.insert(endpoint.id, entry.clone());
    }
    let mut out = Vec::with_capacity(ENDPOINTS.len());
    for endpoint in ENDPOINTS {
        let group = by_group.get(&endpoint.group);
        let own = by_endpoint.get(endpoint.id);
        let pick =
            |f: fn(&LimitEntry) -> Option<String>| own.and_then(f).or_else(|| group.and_then(f));
        let rate = pick(|e| e.rate.clone());
        let burst = own
            .and_then(|e| e.burst)
            .or_else(|| group.and_then(|e| e.burst));
        let concurrency = own
            .and_then(|e| e.concurrency)
            .or_else(|| group.and_then(|e| e.concurrency));
        let body = own
            .and_then(|e| e.body_bytes)
            .or_else(|| group.and_then(|e| e.body_bytes));
        let rate = match rate {
            Some(text) => Some(parse_rate(&text).map_err(|m| {
                ConfigError(format!(
                    "server.limits (endpoint {}): rate: {m}",
                    endpoint.id
                ))
            })?),
            None => None,
        };
        out.push(LimitSpec {
            rate,
            burst,
            concurrency,
            body_bytes: body.unwrap_or(DEFAULT_MAX_BODY_BYTES),
            body_bytes_explicit: body.is_some(),
        });
    }
    Ok(out)
}

fn check_limit_entry(key: &str, entry: &LimitEntry) -> Result<(), ConfigError> {
    if let Some(rate) = &entry.rate {
        parse_rate(rate).map_err(|m| ConfigError(format!("{key}.rate: {m}")))?;
    } else if entry.burst.is_some() {
        return err(format!("{key}.burst: needs a rate"));
    }
    if entry.burst == Some(0) {
        return err(format!("{key}.burst: must be greater than 0"));
    }
    if entry.concurrency == Some(0) {
        return err(format!("{key}.concurrency: must be greater than 0"));
    }
    if entry.body_bytes == Some(0) {
        return err(format!("{key}.body_bytes: must be greater than 0"));
    }
    Ok(())
}

/// A server-wide body limit replaces the default, but never a limit set for an endpoint
/// or its group.
fn apply_default_body_limit(limits: &mut [LimitSpec], bytes: u64) {
    for spec in limits.iter_mut().filter(|s| !s.body_bytes_explicit) {
        spec.body_bytes = bytes;
    }
}

/// Changes whenever the effective configuration may have changed; secrets are hashed.
fn revision(
    text: Option<&str>,
    env: &BTreeMap<String, String>,
    code_groups: &[(Group, bool)],
) -> String {
    let mut hasher = Sha256::new();
    hasher.update(text.unwrap_or_default().as_bytes());
    for (k, v) in env.iter().filter(|(k, _)| env::is_server_var(k)) {
        hasher.update(k.as_bytes());
        hasher.update(Sha256::digest(v.as_bytes()));
    }
    for (k, v) in env.iter().filter(|(k, _)| k.starts_with("SVC_AGENTS_")) {
        hasher.update(k.as_bytes());
        hasher.update(v.as_bytes());
    }
    for (g, on) in code_groups {
        hasher.update(format!("{g}={on}").as_bytes());
    }
    let digest = hasher.finalize();
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// The dev_tools group's settings, checked at start-up.
#[derive(Debug, Clone, Default)]
pub struct DevToolsSettings {
    /// `None`: every installed language.
    pub languages: Option<Vec<&'static str>>,
    pub urls: crate::services::fetch::UrlRules,
}

impl DevToolsSettings {
    fn from_section(section: &template::DevToolsSection) -> Result<DevToolsSettings, ConfigError> {
        let languages = match &section.languages {
            None => None,
            Some(names) => Some(
                names
                    .iter()
                    .map(|name| {
                        crate::services::code_run::language(name)
                            .map(|l| l.name)
                            .ok_or_else(|| {
                                let known: Vec<_> = crate::services::code_run::names().collect();
                                ConfigError(format!(
                                    "dev_tools.languages: unknown language `{name}` (known: {})",
                                    known.join(", ")
                                ))
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let urls =
            crate::services::fetch::UrlRules::from_lists(&section.url_allow, &section.url_deny)
                .map_err(ConfigError)?;
        Ok(DevToolsSettings { languages, urls })
    }

    /// Whether `language` is on the configured list (any known one when there is none).
    pub fn allows(&self, language: &str) -> bool {
        self.languages
            .as_ref()
            .is_none_or(|list| list.contains(&language))
    }
}

#[cfg(test)]
mod tests;
