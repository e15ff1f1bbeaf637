//! `pipeline/*`: the request pipeline every endpoint goes through: matching,
//! bodies, typed errors, authentication, policy, limits and the audit log.

use crate::Case;

mod access;
mod fuzz;
mod requests;

// Helpers, no cases.
mod raw_http;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(requests::cases());
    all.extend(access::cases());
    all.extend(fuzz::cases());
    all
}
