//! Policy admission: whether an endpoint is on (and which layer decided), whether the
//! caller holds its scopes, and its limits. Decisions are computed once at start-up; the
//! configuration does not change while the server runs.

pub mod limits;

use crate::server::auth::Identity;
use crate::server::config::{Preset, Settings};
use crate::server::endpoints::{Access, ENDPOINTS, Endpoint, Group};
use limits::Limiter;

/// Which layer switched an endpoint on or off. When several layers speak about one
/// endpoint, the first of this list wins (most specific and most deliberate first):
/// `policy:endpoints.<id>`, `preset:<name>`, `policy:groups.<g>`,
/// `env:SVC_SERVER_ENABLED_GROUPS:<g>`, `code:enable_group:<g>`, `default:*:<g>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub enabled: bool,
    pub rule: String,
}

pub struct Policy {
    decisions: Vec<Decision>,
    limiters: Vec<Limiter>,
}

impl Policy {
    pub fn new(settings: &Settings) -> Policy {
        let decisions = ENDPOINTS.iter().map(|e| decide(settings, e)).collect();
        let limiters = settings.limits.iter().map(Limiter::new).collect();
        Policy {
            decisions,
            limiters,
        }
    }

    pub fn decision(&self, index: usize) -> &Decision {
        &self.decisions[index]
    }

    pub fn limiter(&self, index: usize) -> &Limiter {
        &self.limiters[index]
    }

    /// The caller's view of one endpoint, as `/capabilities` and the check route report it.
    pub fn verdict(&self, index: usize, identity: &Identity) -> Verdict {
        let endpoint = &ENDPOINTS[index];
        let decision = self.decision(index);
        if !decision.enabled {
            return Verdict::Disabled(decision.rule.clone());
        }
        match identity.missing_scope(endpoint.scopes) {
            Some(scope) => Verdict::MissingScope(scope),
            None => Verdict::Allowed,
        }
    }

    pub fn group_enabled(&self, group: Group) -> bool {
        ENDPOINTS
            .iter()
            .zip(&self.decisions)
            .any(|(e, d)| e.group == group && d.enabled)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Disabled(String),
    MissingScope(&'static str),
}

fn decide(settings: &Settings, endpoint: &Endpoint) -> Decision {
    let group = endpoint.group;
    let layers: [Option<(bool, String)>; 5] = [
        settings
            .endpoint_switches
            .get(endpoint.id)
            .map(|on| (*on, format!("policy:endpoints.{}", endpoint.id))),
        settings
            .preset
            .filter(|p| preset_disables(*p, endpoint))
            .map(|p| (false, format!("preset:{}", p.name()))),
        settings
            .group_policy
            .get(&group)
            .map(|on| (*on, format!("policy:groups.{group}"))),
        settings
            .env_groups
            .get(&group)
            .map(|on| (*on, format!("env:SVC_SERVER_ENABLED_GROUPS:{group}"))),
        settings
            .code_groups
            .get(&group)
            .map(|on| (*on, format!("code:enable_group:{group}"))),
    ];
    let (enabled, rule) = layers.into_iter().flatten().next().unwrap_or_else(|| {
        if group.opt_in() {
            (false, format!("default:opt-in:{group}"))
        } else {
            (true, format!("default:on:{group}"))
        }
    });
    Decision { enabled, rule }
}

fn preset_disables(preset: Preset, endpoint: &Endpoint) -> bool {
    match preset {
        Preset::ReadOnly => endpoint.access != Access::Read,
    }
}

#[cfg(test)]
mod tests;
