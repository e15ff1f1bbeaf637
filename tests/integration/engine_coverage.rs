//! The engine's coverage gate (the gate itself is in `coverage.rs`): every route of the
//! engine's table and of its E2B front's table has a conformance case that names it, every live code of its error table
//! a case that provokes it, and every dormant code is listed with why no request can.

use super::coverage::{Tables, gate};
use conformance::Contract;
use svc::engine::routes::ROUTES;
use svc::error::engine::Code;

#[test]
fn every_engine_route_and_live_engine_code_has_a_conformance_case() {
    gate(Tables {
        contract: Contract::Engine,
        // The E2B front is a door of the engine: its cases run under the engine's contract.
        routes: ROUTES
            .iter()
            .map(|r| (r.id.as_str(), None))
            .chain(svc::engine::e2b::ops().map(|op| (op.id, None)))
            .collect(),
        codes: Code::ALL
            .iter()
            .map(|c| (c.as_str(), c.availability()))
            .collect(),
    });
}
