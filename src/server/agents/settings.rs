//! `SVC_AGENTS_*` settings, read once at start-up like the rest of the configuration.

use crate::server::agents::runtimes;
use crate::server::config::error::ConfigError;
use crate::server::config::template::{AgentsSection, RuntimeLaunchEntry};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const WORKSPACE: &str = "SVC_AGENTS_WORKSPACE";
pub const DEFAULT: &str = "SVC_AGENTS_DEFAULT";
pub const CONFIG: &str = "SVC_AGENTS_CONFIG";
pub const TRACES: &str = "SVC_AGENTS_TRACES";
pub const EVENT_HISTORY: &str = "SVC_AGENTS_EVENT_HISTORY";
pub const MAX_FILE_BYTES: &str = "SVC_AGENTS_MAX_FILE_BYTES";
pub const MAX_VAULTS: &str = "SVC_AGENTS_MAX_VAULTS";
pub const ALLOW_PRIVATE_URLS: &str = "SVC_AGENTS_ALLOW_PRIVATE_URLS";
pub const WEBHOOK_ALLOW_HTTP: &str = "SVC_AGENTS_WEBHOOK_ALLOW_HTTP";
pub const WEBHOOK_RETRY_BASE_MS: &str = "SVC_AGENTS_WEBHOOK_RETRY_BASE_MS";
/// `SVC_AGENTS_WEBHOOK_RETRY_BASE_MS` unset: retries after 1 s, 4 s, 16 s and 64 s.
pub const DEFAULT_RETRY_BASE: std::time::Duration = std::time::Duration::from_secs(1);
pub const TURN_TIMEOUT: &str = "SVC_AGENTS_TURN_TIMEOUT";
pub const MAX_OUTPUT_BYTES: &str = "SVC_AGENTS_MAX_OUTPUT_BYTES";

/// A turn running longer is stopped and fails (`SVC_AGENTS_TURN_TIMEOUT`, seconds).
pub const DEFAULT_TURN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);
/// The longest line a runtime may write (one event carrying a whole reply, for the CLIs
/// that report whole messages); what is over it is cut, kept up to the cap, and the turn
/// marked truncated (`SVC_AGENTS_MAX_OUTPUT_BYTES`).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct AgentsSettings {
    /// Where sessions run their runtime (`/workspace` unless configured).
    pub workspace: PathBuf,
    /// The runtime used when a request names none.
    pub default_runtime: &'static str,
    pub traces: bool,
    /// Events kept per session for replay; older ones are dropped (and a replay from
    /// before them gets a typed gap signal).
    pub event_history: usize,
    /// The largest uploaded or environment file.
    pub max_file_bytes: usize,
    pub max_vaults: usize,
    /// Local development: private or loopback hosts are accepted in MCP URLs (with http)
    /// and webhook URLs.
    pub allow_private_urls: bool,
    /// Operator additions to each runtime's launch (`agents.runtimes` in template.yaml).
    pub launch: BTreeMap<&'static str, RuntimeLaunchEntry>,
    /// Local development: webhook endpoints may use plain http.
    pub webhook_allow_http: bool,
    /// The first pause before a failed webhook delivery is retried; each later one is
    /// four times longer.
    pub webhook_retry_base: std::time::Duration,
    /// What runtimes start from instead of the server's environment (the server's
    /// `child_env`, copied here when the configuration is resolved).
    pub child_env: crate::services::child_env::ChildEnv,
    pub turn_timeout: std::time::Duration,
    pub max_output_bytes: usize,
}

impl Default for AgentsSettings {
    fn default() -> Self {
        AgentsSettings {
            workspace: PathBuf::from("/workspace"),
            default_runtime: "rt-one",
            traces: false,
            event_history: 10_000,
            max_file_bytes: crate::server::agents::files::MAX_FILE_BYTES,
            max_vaults: crate::server::agents::vaults::DEFAULT_MAX_VAULTS,
            allow_private_urls: false,
            launch: BTreeMap::new(),
            webhook_allow_http: false,
            webhook_retry_base: DEFAULT_RETRY_BASE,
            child_env: Default::default(),
            turn_timeout: DEFAULT_TURN_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

impl AgentsSettings {
    pub fn from_env(
        env: &BTreeMap<String, String>,
        warnings: &mut Vec<String>,
    ) -> Result<AgentsSettings, ConfigError> {
        let mut s = AgentsSettings::default();
        if let Some(dir) = env.get(WORKSPACE).filter(|d| !d.is_empty()) {
            let path = PathBuf::from(dir);
            if !path.is_absolute() {
                return Err(ConfigError(format!(
                    "{WORKSPACE}: `{dir}` must be an absolute path"
                )));
            }
            s.workspace = path;
        }
        if let Some(raw) = env.get(CONFIG)
            && let Some(name) = default_from_json(CONFIG, raw)?
        {
            s.default_runtime = implemented_runtime(CONFIG, &name)?;
        }
        if let Some(raw) = env.get(DEFAULT) {
            let name = if raw.trim_start().starts_with('{') {
                default_from_json(DEFAULT, raw)?
            } else {
                Some(raw.trim().to_owned())
            };
            if let Some(name) = name {
                s.default_runtime = implemented_runtime(DEFAULT, &name)?;
            }
        }
        if let Some(raw) = env.get(TRACES) {
            s.traces = match raw.as_str() {
                "1" | "true" => true,
                "0" | "false" | "" => false,
                _ => {
                    return Err(ConfigError(format!(
                        "{TRACES}: expected 1 or 0, got `{raw}`"
                    )));
                }
            };
        }
        if let Some(raw) = env.get(EVENT_HISTORY) {
            s.event_history = raw.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                ConfigError(format!(
                    "{EVENT_HISTORY}: expected a positive number, got `{raw}`"
                ))
            })?;
        }
        if let Some(raw) = env.get(MAX_FILE_BYTES) {
            s.max_file_bytes = raw.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                ConfigError(format!(
                    "{MAX_FILE_BYTES}: expected a positive number of bytes, got `{raw}`"
                ))
            })?;
        }
        if let Some(raw) = env.get(MAX_VAULTS) {
            s.max_vaults = raw.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                ConfigError(format!(
                    "{MAX_VAULTS}: expected a positive number, got `{raw}`"
                ))
            })?;
        }
        if let Some(raw) = env.get(ALLOW_PRIVATE_URLS) {
            s.allow_private_urls = match raw.as_str() {
                "1" | "true" => true,
                "0" | "false" | "" => false,
                _ => {
                    return Err(ConfigError(format!(
                        "{ALLOW_PRIVATE_URLS}: expected 1 or 0, got `{raw}`"
                    )));
                }
            };
        }
        if let Some(raw) = env.get(WEBHOOK_ALLOW_HTTP) {
            s.webhook_allow_http = flag(WEBHOOK_ALLOW_HTTP, raw)?;
        }
        if let Some(raw) = env.get(WEBHOOK_RETRY_BASE_MS) {
            s.webhook_retry_base = raw
                .parse()
                .ok()
                .filter(|n| *n <= 3_600_000)
                .map(std::time::Duration::from_millis)
                .ok_or_else(|| {
                    ConfigError(format!(
                        "{WEBHOOK_RETRY_BASE_MS}: expected milliseconds from 0 to 3600000, got `{raw}`"
                    ))
                })?;
        }
        if let Some(raw) = env.get(TURN_TIMEOUT) {
            s.turn_timeout = raw
                .parse()
                .ok()
                .filter(|n| (1..=7 * 86_400).contains(n))
                .map(std::time::Duration::from_secs)
                .ok_or_else(|| {
                    ConfigError(format!(
                        "{TURN_TIMEOUT}: expected seconds from 1 to 604800, got `{raw}`"
                    ))
                })?;
        }
        if let Some(raw) = env.get(MAX_OUTPUT_BYTES) {
            s.max_output_bytes = raw
                .parse()
                .ok()
                .filter(|n| (1024..=1 << 30).contains(n))
                .ok_or_else(|| {
                    ConfigError(format!(
                        "{MAX_OUTPUT_BYTES}: expected bytes from 1024 to 1073741824, got `{raw}`"
                    ))
                })?;
        }
        let known = [
            TURN_TIMEOUT,
            MAX_OUTPUT_BYTES,
            WORKSPACE,
            DEFAULT,
            CONFIG,
            TRACES,
            EVENT_HISTORY,
            MAX_FILE_BYTES,
            MAX_VAULTS,
            ALLOW_PRIVATE_URLS,
            WEBHOOK_ALLOW_HTTP,
            WEBHOOK_RETRY_BASE_MS,
        ];
        for name in env.keys().filter(|k| k.starts_with("SVC_AGENTS_")) {
            if !known.contains(&name.as_str()) {
                warnings.push(format!("{name} is not a known variable and was ignored"));
            }
        }
        Ok(s)
    }
}

fn flag(var: &str, raw: &str) -> Result<bool, ConfigError> {
    match raw {
        "1" | "true" => Ok(true),
        "0" | "false" | "" => Ok(false),
        _ => Err(ConfigError(format!("{var}: expected 1 or 0, got `{raw}`"))),
    }
}

/// `{"default": "rt-two"}` or `{"agents": {"default": "rt-two"}}`.
fn default_from_json(var: &str, raw: &str) -> Result<Option<String>, ConfigError> {
    let value: serde_json::Value = serde_json::from_str(raw)
        .map_err(|e| ConfigError(format!("{var}: not valid JSON: {e}")))?;
    let pick = value
        .get("default")
        .or_else(|| value.get("agents").and_then(|a| a.get("default")));
    match pick {
        None => Ok(None),
        Some(serde_json::Value::String(name)) => Ok(Some(name.clone())),
        Some(other) => Err(ConfigError(format!(
            "{var}: `default` must be a runtime name, got {other}"
        ))),
    }
}

fn implemented_runtime(var: &str, name: &str) -> Result<&'static str, ConfigError> {
    match runtimes::resolve(name) {
        Some(r) if r.implemented => Ok(r.id),
        Some(r) => Err(ConfigError(format!(
            "{var}: `{}` is declared but has no local backend (implemented: rt-one, rt-two)",
            r.id
        ))),
        None => Err(ConfigError(format!(
            "{var}: unknown runtime `{name}` (implemented: rt-one, rt-two)"
        ))),
    }
}

/// `agents.runtimes` of template.yaml: only implemented runtimes, variable names a shell
/// accepts. The operator's choice is trusted: unlike a session's `env`, any name may be set.
pub fn launch_from_template(
    section: AgentsSection,
) -> Result<BTreeMap<&'static str, RuntimeLaunchEntry>, ConfigError> {
    let mut out = BTreeMap::new();
    for (name, entry) in section.runtimes {
        let key = format!("agents.runtimes.{name}");
        let id = implemented_runtime(&key, &name)?;
        for var in entry.env.keys() {
            let valid = !var.is_empty()
                && !var.starts_with(|c: char| c.is_ascii_digit())
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(ConfigError(format!(
                    "{key}.env: `{var}` is not a variable name"
                )));
            }
        }
        if entry.args.iter().any(|a| a.contains('\0'))
            || entry.env.values().any(|v| v.contains('\0'))
        {
            return Err(ConfigError(format!("{key}: values must not contain NUL")));
        }
        out.insert(id, entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Result<AgentsSettings, ConfigError> {
        let env = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AgentsSettings::from_env(&env, &mut Vec::new())
    }

    #[test]
    fn webhook_variables() {
        let s = load(&[]).unwrap();
        assert!(!s.webhook_allow_http && !s.allow_private_urls);
        assert_eq!(s.webhook_retry_base, std::time::Duration::from_secs(1));
        let s = load(&[(WEBHOOK_ALLOW_HTTP, "1"), (WEBHOOK_RETRY_BASE_MS, "50")]).unwrap();
        assert!(s.webhook_allow_http);
        assert_eq!(s.webhook_retry_base, std::time::Duration::from_millis(50));
        for (var, bad) in [
            (WEBHOOK_ALLOW_HTTP, "yes"),
            (WEBHOOK_RETRY_BASE_MS, "-1"),
            (WEBHOOK_RETRY_BASE_MS, "3600001"),
        ] {
            let err = load(&[(var, bad)]).unwrap_err();
            assert!(err.0.contains(var), "{}", err.0);
        }
    }
}
