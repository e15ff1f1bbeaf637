//! The `exec` provider kind: plugins, child processes speaking plugin protocol version 1
//! over stdio (`docs/plugin-protocol.md`): newline-delimited JSON, a hello both ways, then
//! requests named by route id, answered by responses, events and chunks, many at once.
//!
//! - [`discover`]: where plugins are found, and the trust that says so;
//! - [`host`]: one plugin as the engine keeps it (its record, its restarts);
//! - [`child`]: its running process (the line reader and writer); [`handshake`]: the
//!   hello both ways; [`lines`]: its stdout read a bounded line at a time;
//! - [`call`]: one call (its idle limit, its cancel); [`stream`]: event streams;
//!   [`body`]: byte bodies as chunks;
//! - [`ops`]: the `Provider` and `Sandbox` traits as requests; [`results`]: the answers
//!   it reads;
//! - [`protocol`]: the messages.
//!
//! Whatever a plugin does (crash, garbage, silence, hanging), the engine goes on: the fault
//! is its record's `error` or a typed E9001 / E9002 for the call, never a hang.

mod body;
mod call;
mod child;
pub mod discover;
mod handshake;
mod host;
mod lines;
mod ops;
pub mod protocol;
mod results;
mod stderr;
mod stream;

#[cfg(test)]
mod tests;

use super::provider::Provider;
use crate::wire::DEFAULT_PROVIDER;
use host::{Host, Settings};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Milliseconds a call may go without a word from its plugin (default 30 000).
pub const TIMEOUT_VAR: &str = "SVC_ENGINE_PLUGIN_TIMEOUT_MS";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most a plugin gets to answer the hello.
const HELLO_WAIT: Duration = Duration::from_secs(5);
/// A failed plugin is started again at most once per this.
const RESTART_PAUSE: Duration = Duration::from_secs(5);

/// The plugins found in `<state_dir>/plugins/` and `SVC_ENGINE_PLUGINS`, each started and
/// asked for its handshake; one that fails is still listed, with its `error`.
pub async fn providers(state_dir: &Path) -> Vec<Arc<dyn Provider>> {
    let variable = std::env::var_os(discover::PLUGINS_VAR);
    let sources = discover::sources(state_dir, variable.as_deref());
    let hosts = start_all(sources, state_dir, settings()).await;
    hosts
        .into_iter()
        .map(|host| host as Arc<dyn Provider>)
        .collect()
}

/// The settings of this engine: the idle limit from `SVC_ENGINE_PLUGIN_TIMEOUT_MS`.
fn settings() -> Settings {
    let idle = match std::env::var(TIMEOUT_VAR) {
        Err(_) => DEFAULT_TIMEOUT,
        Ok(raw) => match raw.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Duration::from_millis(ms),
            _ => {
                tracing::warn!(%raw, "{TIMEOUT_VAR} is not a number of milliseconds: 30000 it is");
                DEFAULT_TIMEOUT
            }
        },
    };
    Settings {
        idle,
        hello_wait: HELLO_WAIT.min(idle),
        restart_pause: RESTART_PAUSE,
    }
}

/// Starts every source at once (a silent plugin delays the engine's start by the hello
/// wait, never more); a plugin claiming an id that is already taken (by `local` or an
/// earlier plugin) is stopped and listed under its file name with the reason.
async fn start_all(
    sources: Vec<host::Source>,
    state_dir: &Path,
    settings: Settings,
) -> Vec<Arc<Host>> {
    let hosts = futures::future::join_all(
        sources
            .into_iter()
            .map(|source| Host::start(source, state_dir, settings)),
    )
    .await;
    let mut taken: HashSet<String> = HashSet::from([DEFAULT_PROVIDER.to_owned()]);
    for host in &hosts {
        let id = host.id();
        if taken.insert(id.clone()) {
            continue;
        }
        let source = host.source();
        let listed_as = [source.name.clone(), source.path.display().to_string()]
            .into_iter()
            .find(|alt| !taken.contains(alt))
            .unwrap_or_else(|| format!("{}#{}", source.path.display(), taken.len()));
        taken.insert(listed_as.clone());
        host.retire(
            format!(
                "its id `{id}` is already taken (plugins found first, and `{DEFAULT_PROVIDER}`, keep theirs); it was found at {}",
                source.path.display()
            ),
            listed_as,
        );
    }
    hosts
}
