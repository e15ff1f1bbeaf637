//! The conformance cases. Each module contributes a `cases()` list.

use crate::Case;

mod access;
mod agents;
mod capabilities;
mod commands;
mod core;
mod definitions;
mod files;
mod fuzz;
mod mcp;
mod models;
mod pipeline;
mod raw;
mod responses;
mod responses_common;
mod responses_compact;
mod responses_property;
mod responses_sequences;
mod responses_store;
mod responses_stream;
mod responses_ws;
mod runtimes;
mod sessions;
mod sessions_artifacts;
mod sessions_checks;
mod sessions_common;
mod sessions_events;
mod sessions_input;
mod sessions_items;
mod sessions_keepalive;
mod sessions_lists;
mod sessions_turns;
mod vaults;
mod webhooks;
mod webhooks_delivery;

pub fn all() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(core::cases());
    all.extend(pipeline::cases());
    all.extend(access::cases());
    all.extend(capabilities::cases());
    all.extend(commands::cases());
    all.extend(agents::cases());
    all.extend(files::cases());
    all.extend(fuzz::cases());
    all.extend(sessions_keepalive::cases());
    all.extend(vaults::cases());
    all.extend(webhooks::cases());
    all.extend(webhooks_delivery::cases());
    all.extend(responses_compact::cases());
    all.extend(responses_ws::cases());
    all.extend(responses_property::cases());
    all.extend(responses_sequences::cases());
    all.extend(mcp::cases());
    all.extend(runtimes::cases());
    all.extend(sessions::cases());
    all.extend(sessions_input::cases());
    all.extend(sessions_turns::cases());
    all.extend(sessions_items::cases());
    all.extend(sessions_events::cases());
    all.extend(sessions_lists::cases());
    all.extend(sessions_artifacts::cases());
    all.extend(definitions::cases());
    all.extend(models::cases());
    all.extend(responses::cases());
    all.extend(responses_stream::cases());
    all.extend(responses_store::cases());
    all
}
