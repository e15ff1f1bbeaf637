//! The `node` provider kind: in-process provider modules registered at build time through
//! the same trait as every other kind. `memory` keeps sandboxes in memory.

use super::provider::Provider;
use std::path::Path;
use std::sync::Arc;

/// The in-process providers this build registers.
pub fn providers(_state_dir: &Path) -> Vec<Arc<dyn Provider>> {
    Vec::new()
}
