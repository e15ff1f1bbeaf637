//! Set-up the agents' tests share: the server's state with the agents group on, and a
//! session opened on it directly (creating one over HTTP wants its runtime installed).

use crate::server::SharedState;
use crate::server::agents::agent_spec;
use crate::server::agents::runtimes::{RUNTIMES, Selection};
use crate::server::agents::session_handle::SessionHandle;
use crate::server::auth::ANONYMOUS;
use crate::server::config::{LoadOptions, Settings};
use crate::server::state::AppState;
use serde_json::Map;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The state of a server with the agents group on and its workspace in `workspace`.
pub fn agents_state(workspace: &std::path::Path) -> SharedState {
    let env = BTreeMap::from([
        ("SVC_SERVER_ENABLED_GROUPS".to_owned(), "agents".to_owned()),
        (
            "SVC_AGENTS_WORKSPACE".to_owned(),
            workspace.display().to_string(),
        ),
    ]);
    AppState::with_settings(Settings::load_with_env(&LoadOptions::default(), &env).unwrap())
}

/// An idle session of the first runtime, owned by the anonymous identity.
pub fn open_session(state: &SharedState) -> Arc<SessionHandle> {
    let selection = Selection {
        runtime: &RUNTIMES[0],
        model: None,
    };
    let spec = agent_spec::build(&Map::new(), "", selection, None, None).unwrap();
    state
        .agents
        .open(ANONYMOUS, spec, Map::new(), Default::default())
}
