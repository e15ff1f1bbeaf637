//! `pipeline/*`: the request pipeline every endpoint goes through: matching,
//! bodies, typed errors, authentication, policy, limits and the audit log.
//! One file per area.

use crate::Case;

mod audit;
mod auth;
mod body;
mod connections;
mod errors;
mod fuzz;
mod limits;
mod local;
/// `pipeline/match/*` (`match` is a keyword).
mod matching;
mod policy;
mod query;
mod scope;

// Helpers, no cases.
mod raw_http;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(matching::cases());
    all.extend(query::cases());
    all.extend(body::cases());
    all.extend(errors::cases());
    all.extend(local::cases());
    all.extend(limits::cases());
    all.extend(connections::cases());
    all.extend(auth::cases());
    all.extend(scope::cases());
    all.extend(policy::cases());
    all.extend(audit::cases());
    all.extend(fuzz::cases());
    all
}
