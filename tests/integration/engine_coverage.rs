//! The engine's coverage gate (the gate itself is in `coverage.rs`): every route of the
//! engine's table has a conformance case that names it, every live code of its error table
//! a case that provokes it, and every dormant code is listed with why no request can.

use super::coverage::{Tables, gate};
use conformance::Contract;
use svc::engine::routes::ROUTES;
use svc::error::engine::Code;

#[test]
fn every_engine_route_and_live_engine_code_has_a_conformance_case() {
    gate(Tables {
        contract: Contract::Engine,
        routes: ROUTES.iter().map(|r| (r.id.as_str(), None)).collect(),
        codes: Code::ALL
            .iter()
            .map(|c| (c.as_str(), c.availability()))
            .collect(),
    });
}
