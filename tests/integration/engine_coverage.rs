//! The engine's coverage gate: every route of the engine's table has a conformance case
//! that names it, every live code of its error table a case that provokes it, and every
//! dormant code is listed with why no request can provoke it. Only the engine's cases
//! count (the server's are gated by `coverage.rs`: some ids, like `health`, are in both
//! tables).

use conformance::Contract;
use std::collections::BTreeSet;
use svc::engine::routes::{ROUTES, route};
use svc::error::{Availability, engine::Code};

#[test]
fn every_engine_route_and_live_engine_code_has_a_conformance_case() {
    let cases: Vec<_> = conformance::all_cases()
        .into_iter()
        .filter(|c| c.contract() == Contract::Engine)
        .collect();
    let covered_routes: BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| c.endpoints.iter().copied())
        .collect();
    let covered_codes: BTreeSet<&str> =
        cases.iter().flat_map(|c| c.codes.iter().copied()).collect();

    let mut missing = Vec::new();
    let mut not_live = Vec::new();
    for r in ROUTES {
        if !covered_routes.contains(r.id) {
            missing.push(format!(
                "route {} ({} /v1{})",
                r.id,
                r.method.as_str(),
                r.path
            ));
        }
    }
    for code in Code::ALL {
        let name = code.as_str();
        match (code.availability(), covered_codes.contains(name)) {
            (Availability::Live, false) => missing.push(format!("code {name}")),
            (Availability::Live, true) => {}
            // A case that provokes a code proves it live: the table must say so.
            (Availability::Dormant(_) | Availability::Pending(_), true) => missing.push(format!(
                "code {name} has a case but the table does not call it live"
            )),
            (Availability::Dormant(why), false) => {
                not_live.push(format!("{name} (dormant: {why})"))
            }
            (Availability::Pending(by), false) => not_live.push(format!("{name} (pending: {by})")),
        }
    }
    let unknown: Vec<String> = covered_routes
        .iter()
        .filter(|id| route(id).is_none())
        .map(|id| format!("route {id}"))
        .chain(
            covered_codes
                .iter()
                .filter(|c| Code::parse(c).is_none())
                .map(|c| format!("code {c}")),
        )
        .collect();

    eprintln!(
        "engine coverage: {} codes no case provokes:",
        not_live.len()
    );
    for n in &not_live {
        eprintln!("  {n}");
    }
    assert!(
        unknown.is_empty(),
        "engine cases name what the engine's tables do not have: {unknown:#?}"
    );
    assert!(
        missing.is_empty(),
        "engine routes and codes without a conformance case: {missing:#?}"
    );
}
