//! Who is calling: tokens map to identities, each with scopes. Tokens are compared as
//! SHA-256 digests in constant time, and every identity is compared on every request, so
//! neither timing nor token length says which token was close.

use crate::error::{ApiError, Code};
use crate::server::config::error::ConfigError;
use crate::server::config::template::IdentityEntry;
use http::HeaderMap;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use subtle::ConstantTimeEq;

pub const ANONYMOUS: &str = "anonymous";
/// The identity `SVC_SERVER_TOKEN` alone creates.
pub const SERVER_TOKEN_IDENTITY: &str = "server";

#[derive(Debug, Clone)]
pub struct Identity {
    pub id: String,
    pub scopes: Vec<String>,
    digest: [u8; 32],
}

impl Identity {
    pub(crate) fn from_entry(
        index: usize,
        entry: IdentityEntry,
        env: &BTreeMap<String, String>,
    ) -> Result<Identity, ConfigError> {
        let key = format!("identities[{index}]");
        let id = entry.id.trim().to_owned();
        if id.is_empty() {
            return Err(ConfigError(format!("{key}.id: must not be empty")));
        }
        if id == ANONYMOUS {
            return Err(ConfigError(format!(
                "{key}.id: `{ANONYMOUS}` is reserved for callers without a token"
            )));
        }
        let token = match (entry.token, entry.token_env) {
            (Some(t), None) => t,
            (None, Some(var)) => env.get(&var).cloned().ok_or_else(|| {
                ConfigError(format!(
                    "{key}.token_env: environment variable {var} is not set"
                ))
            })?,
            _ => {
                return Err(ConfigError(format!(
                    "{key}: set exactly one of `token` and `token_env`"
                )));
            }
        };
        if token.is_empty() {
            return Err(ConfigError(format!("{key}: the token must not be empty")));
        }
        for (i, scope) in entry.scopes.iter().enumerate() {
            if !valid_scope(scope) {
                return Err(ConfigError(format!(
                    "{key}.scopes[{i}]: `{scope}` is not a scope (`*`, `area:*` or `area:action`)"
                )));
            }
        }
        Ok(Identity {
            id,
            scopes: entry.scopes,
            digest: Sha256::digest(token.as_bytes()).into(),
        })
    }

    pub(crate) fn server_token(token: &str) -> Identity {
        Identity {
            id: SERVER_TOKEN_IDENTITY.into(),
            scopes: vec!["*".into()],
            digest: Sha256::digest(token.as_bytes()).into(),
        }
    }

    pub fn anonymous() -> Identity {
        Identity {
            id: ANONYMOUS.into(),
            scopes: vec!["*".into()],
            digest: [0; 32],
        }
    }

    pub fn has_scope(&self, needed: &str) -> bool {
        self.scopes.iter().any(|held| scope_covers(held, needed))
    }

    /// The first needed scope the identity lacks.
    pub fn missing_scope<'a>(&self, needed: &[&'a str]) -> Option<&'a str> {
        needed.iter().copied().find(|s| !self.has_scope(s))
    }
}

fn valid_scope(scope: &str) -> bool {
    if scope == "*" {
        return true;
    }
    let Some((area, action)) = scope.split_once(':') else {
        return false;
    };
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    word(area) && (action == "*" || word(action))
}

fn scope_covers(held: &str, needed: &str) -> bool {
    if held == "*" || held == needed {
        return true;
    }
    match held.strip_suffix(":*") {
        Some(area) => needed.split_once(':').is_some_and(|(a, _)| a == area),
        None => false,
    }
}

#[derive(Debug, Default, Clone)]
pub struct Identities(Arc<Vec<Identity>>);

impl Identities {
    pub(crate) fn new(list: Vec<Identity>) -> Result<Identities, ConfigError> {
        let mut ids = HashSet::new();
        let mut digests = HashSet::new();
        for identity in &list {
            if !ids.insert(identity.id.clone()) {
                return Err(ConfigError(format!(
                    "identities: the id `{}` is used twice",
                    identity.id
                )));
            }
            if !digests.insert(identity.digest) {
                return Err(ConfigError(format!(
                    "identities: identity `{}` has the same token as another identity",
                    identity.id
                )));
            }
        }
        Ok(Identities(Arc::new(list)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Identity> {
        self.0.iter()
    }

    /// Step 2 of the pipeline. With no identity configured every caller is `anonymous`.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Identity, ApiError> {
        if self.is_empty() {
            return Ok(Identity::anonymous());
        }
        let token = presented_token(headers)?.ok_or_else(|| {
            ApiError::new(
                Code::Unauthorized,
                "missing token: send `Authorization: Bearer <token>` or `X-Access-Token`",
            )
        })?;
        self.holding(token.as_bytes())
            .cloned()
            .ok_or_else(|| ApiError::new(Code::Unauthorized, "the token is not valid"))
    }

    /// Whether `candidate` is some identity's token (the server scrubs such values from
    /// its own environment block).
    pub fn holds_token(&self, candidate: &[u8]) -> bool {
        self.holding(candidate).is_some()
    }

    /// The identity whose token is `token`, compared in constant time against every one.
    fn holding(&self, token: &[u8]) -> Option<&Identity> {
        let digest: [u8; 32] = Sha256::digest(token).into();
        let mut found: Option<&Identity> = None;
        for identity in self.0.iter() {
            if bool::from(identity.digest.ct_eq(&digest)) {
                found = Some(identity);
            }
        }
        found
    }
}

/// The one credential of the request, from `Authorization: Bearer` and `X-Access-Token`.
/// Two different values are ambiguous: the server must not pick one.
fn presented_token(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let mut values: Vec<String> = Vec::new();
    for value in headers.get_all(http::header::AUTHORIZATION) {
        let text = value.to_str().unwrap_or_default().trim();
        if let Some((scheme, token)) = text.split_once(' ')
            && scheme.eq_ignore_ascii_case("bearer")
        {
            values.push(token.trim().to_owned());
        }
    }
    for value in headers.get_all("x-access-token") {
        values.push(value.to_str().unwrap_or_default().trim().to_owned());
    }
    values.retain(|v| !v.is_empty());
    values.dedup();
    let distinct: HashSet<&String> = values.iter().collect();
    if distinct.len() > 1 {
        return Err(ApiError::new(
            Code::AmbiguousCredentials,
            "the request carries two different credentials; send exactly one token",
        ));
    }
    Ok(values.into_iter().next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn ids() -> Identities {
        Identities::new(vec![
            Identity::server_token("alpha"),
            Identity {
                id: "reader".into(),
                scopes: vec!["files:read".into(), "system:*".into()],
                digest: Sha256::digest(b"beta").into(),
            },
        ])
        .unwrap()
    }

    #[test]
    fn bearer_and_header_tokens_authenticate() {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("Bearer beta"));
        assert_eq!(ids().authenticate(&h).unwrap().id, "reader");
        let mut h = HeaderMap::new();
        h.insert("x-access-token", HeaderValue::from_static("alpha"));
        assert_eq!(ids().authenticate(&h).unwrap().id, "server");
    }

    #[test]
    fn missing_wrong_and_ambiguous_tokens_are_refused() {
        let h = HeaderMap::new();
        assert_eq!(ids().authenticate(&h).unwrap_err().code, Code::Unauthorized);
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("Bearer nope"));
        assert_eq!(ids().authenticate(&h).unwrap_err().code, Code::Unauthorized);
        let mut h = HeaderMap::new();
        h.append("x-access-token", HeaderValue::from_static("alpha"));
        h.append("x-access-token", HeaderValue::from_static("beta"));
        assert_eq!(
            ids().authenticate(&h).unwrap_err().code,
            Code::AmbiguousCredentials
        );
        let mut h = HeaderMap::new();
        h.append("x-access-token", HeaderValue::from_static("alpha"));
        h.append("x-access-token", HeaderValue::from_static("alpha"));
        assert_eq!(ids().authenticate(&h).unwrap().id, "server");
    }

    #[test]
    fn scope_wildcards() {
        let reader = &ids().0[1];
        assert!(reader.has_scope("files:read"));
        assert!(!reader.has_scope("files:write"));
        assert!(reader.has_scope("system:write"));
        assert_eq!(
            reader.missing_scope(&["files:read", "agents:use"]),
            Some("agents:use")
        );
        assert!(valid_scope("*") && valid_scope("a:b") && valid_scope("a:*"));
        assert!(!valid_scope("a") && !valid_scope(":b") && !valid_scope("a:b c"));
    }
}
