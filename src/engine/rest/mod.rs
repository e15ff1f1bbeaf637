//! The `rest` provider kind: sandboxes behind another svc-engine/1 service at the
//! connection's `api_url`, reached with its `api_key`.

use super::provider::Provider;
use std::path::Path;
use std::sync::Arc;

/// The `rest` providers this build registers.
pub fn providers(_state_dir: &Path) -> Vec<Arc<dyn Provider>> {
    Vec::new()
}
