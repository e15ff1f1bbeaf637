//! The conformance cases. Each module contributes a `cases()` list.

use crate::Case;

mod access;
mod agents;
mod capabilities;
mod commands;
mod core;
mod fuzz;
mod pipeline;
mod raw;

pub fn all() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(core::cases());
    all.extend(pipeline::cases());
    all.extend(access::cases());
    all.extend(capabilities::cases());
    all.extend(commands::cases());
    all.extend(agents::cases());
    all.extend(fuzz::cases());
    all
}
