//! `SVC_*` environment variables: the only configuration a container platform can set
//! without writing a file. Bad values stop the server with the variable's name.

use super::{ConfigError, Settings, parse_group, parse_preset, positive};
use crate::server::auth::Identity;
use crate::server::config::AuditMode;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const SERVER_TOKEN: &str = "SVC_SERVER_TOKEN";
pub const ENABLED_GROUPS: &str = "SVC_SERVER_ENABLED_GROUPS";
pub const PRESET: &str = "SVC_SERVER_PRESET";
pub const AUDIT: &str = "SVC_SERVER_AUDIT";
pub const AUDIT_FILE: &str = "SVC_SERVER_AUDIT_FILE";
pub const MAX_BODY_BYTES: &str = "SVC_SERVER_MAX_BODY_BYTES";
pub const CHILD_ENV: &str = "SVC_SERVER_CHILD_ENV";

const KNOWN: &[&str] = &[
    SERVER_TOKEN,
    ENABLED_GROUPS,
    PRESET,
    AUDIT,
    AUDIT_FILE,
    MAX_BODY_BYTES,
    CHILD_ENV,
];

/// `SVC_SERVER_CHILD_ENV`: a comma list of names (or prefixes ending in `*`) passed on to
/// children, added to `server.child_env`.
pub(super) fn child_env_pass(env: &BTreeMap<String, String>) -> Vec<String> {
    env.get(CHILD_ENV)
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_server_var(name: &str) -> bool {
    name.starts_with("SVC_SERVER_")
}

pub(super) fn apply(
    settings: &mut Settings,
    identities: &mut Vec<Identity>,
    env: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    for name in env.keys().filter(|k| is_server_var(k)) {
        if !KNOWN.contains(&name.as_str()) {
            warnings.push(format!(
                "{name} is not a known variable and was ignored (known: {})",
                KNOWN.join(", ")
            ));
        }
    }
    if let Some(token) = env.get(SERVER_TOKEN) {
        if token.is_empty() {
            return Err(ConfigError(format!("{SERVER_TOKEN}: must not be empty")));
        }
        identities.push(Identity::server_token(token));
    }
    if let Some(list) = env.get(ENABLED_GROUPS) {
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, on) = match item.strip_prefix('-') {
                Some(name) => (name, false),
                None => (item.strip_prefix('+').unwrap_or(item), true),
            };
            settings
                .env_groups
                .insert(parse_group(ENABLED_GROUPS, name)?, on);
        }
    }
    if let Some(name) = env.get(PRESET) {
        settings.preset = Some(parse_preset(PRESET, name)?);
    }
    if let Some(mode) = env.get(AUDIT) {
        settings.audit = AuditMode::parse(mode).ok_or_else(|| {
            ConfigError(format!(
                "{AUDIT}: expected one of off, deny, all; got `{mode}`"
            ))
        })?;
    }
    if let Some(path) = env.get(AUDIT_FILE) {
        settings.audit_file = Some(PathBuf::from(path));
    }
    if let Some(raw) = env.get(MAX_BODY_BYTES) {
        let bytes: u64 = raw.parse().map_err(|_| {
            ConfigError(format!(
                "{MAX_BODY_BYTES}: expected a number of bytes, got `{raw}`"
            ))
        })?;
        super::apply_default_body_limit(&mut settings.limits, positive(MAX_BODY_BYTES, bytes)?);
    }
    Ok(())
}
