//! `agents/*`: the agents group: sessions, turns and their events, the
//! Responses API, definitions, environments, vaults, webhooks, MCP, runtimes.

use crate::Case;

mod artifacts;
mod children;
mod compact;
mod definitions;
mod environment_files;
mod environment_templates;
mod environments;
mod events;
mod events_memory;
mod files;
mod guarded_property;
mod injection;
mod input;
mod items;
mod keepalive;
mod limits;
mod lists;
mod mcp;
mod models;
mod refusals;
mod responses;
mod responses_property;
mod responses_sequences;
mod responses_store;
mod responses_stream;
mod runtimes;
mod sessions;
mod sessions_stream;
mod switch;
mod turns;
mod vaults;
mod webhooks;
mod webhooks_delivery;
mod ws;

// Helpers, no cases.
mod support;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(refusals::cases());
    all.extend(sessions_stream::cases());
    all.extend(switch::cases());
    all.extend(files::cases());
    all.extend(keepalive::cases());
    all.extend(vaults::cases());
    all.extend(environments::cases());
    all.extend(environment_files::cases());
    all.extend(environment_templates::cases());
    all.extend(injection::cases());
    all.extend(guarded_property::cases());
    all.extend(webhooks::cases());
    all.extend(webhooks_delivery::cases());
    all.extend(compact::cases());
    all.extend(ws::cases());
    all.extend(responses_property::cases());
    all.extend(responses_sequences::cases());
    all.extend(mcp::cases());
    all.extend(runtimes::cases());
    all.extend(sessions::cases());
    all.extend(input::cases());
    all.extend(turns::cases());
    all.extend(items::cases());
    all.extend(events::cases());
    all.extend(lists::cases());
    all.extend(artifacts::cases());
    all.extend(children::cases());
    all.extend(limits::cases());
    all.extend(definitions::cases());
    all.extend(models::cases());
    all.extend(responses::cases());
    all.extend(responses_stream::cases());
    all.extend(responses_store::cases());
    all.extend(events_memory::cases());
    all
}
