//! The coverage gates: every endpoint (server) and route (engine) has at least one
//! conformance case of its contract, and every live error code a case that provokes it;
//! the rest are listed with the issue that builds them or why no request reaches them. Each
//! contract counts only its own cases: the engine's route ids reuse some endpoint names
//! (`health`, `files_read`).

use conformance::Contract;
use std::collections::BTreeSet;
use svc::error::Availability;
use svc::server::endpoints::{ENDPOINTS, Status};

/// What a contract's tables hold, for [`gate`].
pub struct Tables<'a> {
    pub contract: Contract,
    /// Every route id, with the issue that builds it when it is still pending.
    pub routes: Vec<(&'a str, Option<&'a str>)>,
    /// Every code and its availability.
    pub codes: Vec<(&'a str, Availability)>,
}

/// Fails when a built route or a live code has no case of the contract, when a case names
/// what the tables do not have, or when a case provokes a code the table does not call
/// live; prints what is pending or dormant.
pub fn gate(tables: Tables<'_>) {
    let cases: Vec<_> = conformance::all_cases()
        .into_iter()
        .filter(|c| c.contract() == tables.contract)
        .collect();
    let covered_routes: BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| c.endpoints.iter().copied())
        .collect();
    let covered_codes: BTreeSet<&str> =
        cases.iter().flat_map(|c| c.codes.iter().copied()).collect();

    let mut missing = Vec::new();
    let mut not_live = Vec::new();
    for (id, pending) in &tables.routes {
        match (pending, covered_routes.contains(id)) {
            (Some(by), _) => not_live.push(format!("route {id} (pending: {by})")),
            (None, false) => missing.push(format!("route {id}")),
            (None, true) => {}
        }
    }
    for (code, availability) in &tables.codes {
        match (availability, covered_codes.contains(code)) {
            (Availability::Live, false) => missing.push(format!("code {code}")),
            (Availability::Live, true) => {}
            (Availability::Pending(by), false) => {
                not_live.push(format!("code {code} (pending: {by})"))
            }
            (Availability::Dormant(why), false) => {
                not_live.push(format!("code {code} (dormant: {why})"))
            }
            // A case that provokes a code proves it reachable: the table must say live.
            (Availability::Pending(_) | Availability::Dormant(_), true) => missing.push(format!(
                "code {code} has a case but the table does not call it live"
            )),
        }
    }
    let routes: BTreeSet<&str> = tables.routes.iter().map(|(id, _)| *id).collect();
    let codes: BTreeSet<&str> = tables.codes.iter().map(|(c, _)| *c).collect();
    let unknown: Vec<String> = covered_routes
        .difference(&routes)
        .map(|id| format!("route {id}"))
        .chain(
            covered_codes
                .difference(&codes)
                .map(|c| format!("code {c}")),
        )
        .collect();

    eprintln!(
        "{} coverage: {} not live:",
        tables.contract.name(),
        not_live.len()
    );
    for n in &not_live {
        eprintln!("  {n}");
    }
    assert!(
        unknown.is_empty(),
        "{} cases name what the tables do not have: {unknown:#?}",
        tables.contract.name()
    );
    assert!(
        missing.is_empty(),
        "{}: built but without a conformance case: {missing:#?}",
        tables.contract.name()
    );
}

#[test]
fn every_implemented_endpoint_and_live_code_has_a_conformance_case() {
    use svc::error::Code;
    gate(Tables {
        contract: Contract::Server,
        routes: ENDPOINTS
            .iter()
            .map(|e| match e.status {
                Status::Pending(by) => (e.id, Some(by)),
                _ => (e.id, None),
            })
            .collect(),
        codes: Code::ALL
            .iter()
            .map(|c| (c.as_str(), c.availability()))
            .collect(),
    });
}
