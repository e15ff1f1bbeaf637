//! The coverage gate: every endpoint and error code the server implements has at least
//! one conformance case; the rest are listed as pending with the issue that builds them.
//! Only the server's cases count here: the engine's route ids reuse some endpoint names
//! (`health`, `files_read`), so its cases are gated by `engine_coverage.rs`.

use conformance::Contract;
use std::collections::BTreeSet;
use svc::error::{Availability, Code};
use svc::server::endpoints::{ENDPOINTS, Status};

#[test]
fn every_implemented_endpoint_and_live_code_has_a_conformance_case() {
    let cases: Vec<_> = conformance::all_cases()
        .into_iter()
        .filter(|c| c.contract() == Contract::Server)
        .collect();
    let covered_endpoints: BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| c.endpoints.iter().copied())
        .collect();
    let covered_codes: BTreeSet<&str> =
        cases.iter().flat_map(|c| c.codes.iter().copied()).collect();

    let mut missing = Vec::new();
    let mut pending = Vec::new();
    for endpoint in ENDPOINTS {
        match (endpoint.status, covered_endpoints.contains(endpoint.id)) {
            (Status::Pending(by), _) => pending.push(format!("endpoint {} ({by})", endpoint.id)),
            (_, false) => missing.push(format!("endpoint {}", endpoint.id)),
            (_, true) => {}
        }
    }
    for code in Code::ALL {
        match (code.availability(), covered_codes.contains(code.as_str())) {
            (Availability::Pending(by), _) => {
                pending.push(format!("code {} ({by})", code.as_str()))
            }
            (Availability::Dormant(why), _) => {
                pending.push(format!("code {} (dormant: {why})", code.as_str()))
            }
            (Availability::Live, false) => missing.push(format!("code {}", code.as_str())),
            (Availability::Live, true) => {}
        }
    }
    let unknown: Vec<_> = covered_endpoints
        .iter()
        .filter(|id| svc::server::endpoints::by_id(id).is_none())
        .map(|id| format!("endpoint {id}"))
        .chain(
            covered_codes
                .iter()
                .filter(|c| Code::parse(c).is_none())
                .map(|c| format!("code {c}")),
        )
        .collect();

    eprintln!(
        "coverage: {} pending (built by later issues):",
        pending.len()
    );
    for p in &pending {
        eprintln!("  pending {p}");
    }
    assert!(
        unknown.is_empty(),
        "cases name what the tables do not have: {unknown:#?}"
    );
    assert!(
        missing.is_empty(),
        "implemented but without a conformance case: {missing:#?}"
    );
}
