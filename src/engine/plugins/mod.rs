//! The `exec` provider kind: plugins, child processes speaking plugin protocol version 1
//! over stdio (`docs/plugin-protocol.md`).

use super::provider::Provider;
use std::path::Path;
use std::sync::Arc;

/// The plugins found in `<state_dir>/plugins/` and `SVC_ENGINE_PLUGINS`, each started and
/// asked for its handshake; one that fails is still listed, with its `error`.
pub async fn providers(_state_dir: &Path) -> Vec<Arc<dyn Provider>> {
    Vec::new()
}
