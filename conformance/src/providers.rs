//! The engine's provider cases run against every provider kind, not only `local`: a
//! client must not be able to tell the kinds apart (spec 1, engine). Each provider
//! named with `--engine-provider` gets a copy of every case of the `local` profile,
//! under the group `engine@<id>` (`engine@memory/files/003`), with its own engine and
//! its own connection. A provider that needs another engine behind it (`rest`) names
//! `{upstream_url}` and `{upstream_token}` in its connection: the runner then launches
//! that second engine first, with its own state folder and token.

use std::collections::HashMap;

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::case::Case;
use crate::contract::Contract;
use crate::profiles::Profile;

/// The placeholder of a connection for the upstream engine's base URL.
pub const UPSTREAM_URL: &str = "{upstream_url}";
/// The placeholder of a connection for the upstream engine's token.
pub const UPSTREAM_TOKEN: &str = "{upstream_token}";

/// One more provider the engine's provider cases run against.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderTarget {
    /// Its id in the engine's `GET /v1/providers`.
    pub id: String,
    /// The connection the cases send; `{"provider": id}` when `None`.
    pub connection: Option<Value>,
}

impl ProviderTarget {
    /// `ID` or `ID=CONNECTION_JSON` (the `--engine-provider` flag).
    pub fn parse(spec: &str) -> anyhow::Result<ProviderTarget> {
        let (id, connection) = match spec.split_once('=') {
            Some((id, json)) => {
                let value: Value = serde_json::from_str(json)
                    .with_context(|| format!("the connection of provider {id} is not JSON"))?;
                if !value.is_object() {
                    bail!("the connection of provider {id} must be a JSON object");
                }
                (id, Some(value))
            }
            None => (spec, None),
        };
        if id.is_empty() || id.contains(['/', '@', ' ']) {
            bail!("{id:?} is not a provider id");
        }
        Ok(ProviderTarget {
            id: id.to_owned(),
            connection,
        })
    }

    /// Whether its connection needs an upstream engine launched first.
    pub fn needs_upstream(&self) -> bool {
        self.connection
            .as_ref()
            .is_some_and(|c| c.to_string().contains(UPSTREAM_URL))
    }

    /// Its connection with the upstream engine's URL and token put in.
    pub fn connection_for(&self, upstream: Option<(&str, &str)>) -> Option<Value> {
        let connection = self.connection.clone()?;
        let Some((url, token)) = upstream else {
            return Some(connection);
        };
        Some(replace_strings(connection, &|s| {
            s.replace(UPSTREAM_URL, url).replace(UPSTREAM_TOKEN, token)
        }))
    }
}

fn replace_strings(value: Value, f: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(&s)),
        Value::Array(list) => list.into_iter().map(|v| replace_strings(v, f)).collect(),
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| (k, replace_strings(v, f)))
            .collect(),
        other => other,
    }
}

/// The profile of a provider's copies: named after its group, connecting as `id`.
/// Leaked: a run makes one per provider and keeps it to the end.
fn profile_of(id: &str) -> &'static Profile {
    let name: &'static str = Box::leak(format!("engine@{id}").into_boxed_str());
    let provider: &'static str = Box::leak(id.to_owned().into_boxed_str());
    Box::leak(Box::new(Profile {
        name,
        contract: Contract::Engine,
        provider: Some(provider),
        env: &[],
        template: None,
        args: &[],
        files: &[],
    }))
}

/// The cases, and a copy of every provider case (an engine case with a provider) per
/// target, its id's group `engine@<id>`.
pub fn with_variants(cases: Vec<Case>, targets: &[ProviderTarget]) -> Vec<Case> {
    let profiles: HashMap<&str, &'static Profile> = targets
        .iter()
        .map(|t| (t.id.as_str(), profile_of(&t.id)))
        .collect();
    let mut out = Vec::with_capacity(cases.len() * (1 + targets.len()));
    for case in cases {
        out.push(case);
        if case.contract() != Contract::Engine || case.profile.provider.is_none() {
            continue;
        }
        for target in targets {
            let profile = profiles[target.id.as_str()];
            let rest = case.id.split_once('/').map_or(case.id, |(_, rest)| rest);
            let id: &'static str = Box::leak(format!("{}/{rest}", profile.name).into_boxed_str());
            out.push(Case {
                id,
                profile,
                ..case
            });
        }
    }
    out
}

/// The target a variant profile stands for.
pub fn target_of<'a>(
    profile: &Profile,
    targets: &'a [ProviderTarget],
) -> Option<&'a ProviderTarget> {
    let id = profile.name.strip_prefix("engine@")?;
    targets.iter().find(|t| t.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn specs_parse_with_and_without_a_connection() {
        let plain = ProviderTarget::parse("memory").unwrap();
        assert_eq!(plain.id, "memory");
        assert!(plain.connection.is_none() && !plain.needs_upstream());
        let rest = ProviderTarget::parse(
            r#"rest={"provider":"rest","api_url":"{upstream_url}","api_key":"{upstream_token}"}"#,
        )
        .unwrap();
        assert!(rest.needs_upstream());
        assert_eq!(
            rest.connection_for(Some(("http://127.0.0.1:9", "t0k"))),
            Some(json!({"provider": "rest", "api_url": "http://127.0.0.1:9", "api_key": "t0k"}))
        );
        assert!(ProviderTarget::parse("rest=[1]").is_err());
        assert!(ProviderTarget::parse("rest={").is_err());
        assert!(ProviderTarget::parse("a/b").is_err());
        assert!(ProviderTarget::parse("").is_err());
    }

    #[test]
    fn provider_cases_are_copied_per_target_and_others_are_not() {
        let all = crate::all_cases();
        let providers = all
            .iter()
            .filter(|c| c.contract() == Contract::Engine && c.profile.provider.is_some())
            .count();
        assert!(providers > 0);
        let targets = [
            ProviderTarget::parse("memory").unwrap(),
            ProviderTarget::parse("dir").unwrap(),
        ];
        let out = with_variants(all.clone(), &targets);
        assert_eq!(out.len(), all.len() + 2 * providers);
        let copy = out
            .iter()
            .find(|c| c.id.starts_with("engine@memory/"))
            .unwrap();
        assert_eq!(copy.group(), "engine@memory");
        assert_eq!(copy.profile.provider, Some("memory"));
        assert_eq!(
            target_of(copy.profile, &targets).map(|t| t.id.as_str()),
            Some("memory")
        );
        assert!(target_of(&crate::profiles::LOCAL, &targets).is_none());
    }
}
