//! The engine group (issue 15, spec part B): the local engine `svc-engine/1`
//! reached through its descriptor; the door, its own routes, and every sandbox
//! route of a provider, each case skipped with the reason when the provider
//! does not declare the feature it needs (`feature:<name>` tags).

mod code;
mod commands;
mod connection;
mod connection_cap;
mod door;
mod errors;
mod files;
mod health;
mod isolation;
mod lifecycle;
mod processes;
mod providers;
mod remote;
mod sandboxes;
mod shutdown;
pub(in crate::cases) mod support;
mod terminal;
mod watch;

use crate::Case;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(door::cases());
    all.extend(health::cases());
    all.extend(providers::cases());
    all.extend(remote::cases());
    all.extend(errors::cases());
    all.extend(connection::cases());
    all.extend(connection_cap::cases());
    all.extend(sandboxes::cases());
    all.extend(lifecycle::cases());
    all.extend(commands::cases());
    all.extend(processes::cases());
    all.extend(files::cases());
    all.extend(watch::cases());
    all.extend(code::cases());
    all.extend(terminal::cases());
    all.extend(isolation::cases());
    all.extend(shutdown::cases());
    all
}
