//! The `node` provider kind: in-process provider modules registered at build time through
//! the same trait as every other kind. `memory` keeps sandboxes in memory, for fast tests:
//! files in a tree per sandbox, no processes (commands, processes, code, terminals and
//! ports answer 501 `E8004` through the trait's defaults).
//!
//! For what it declares it answers as the builtin `local` does: the same records, entry
//! info, errors and events. A sandbox's files are rooted where `local` would put its home,
//! `<state>/sandboxes/<id>/root` (nothing is written there: the path is a name), so paths
//! read the same; like `local`'s, a new home holds an empty `.tmp`.
//!
//! - [`sandbox`]: one sandbox's state and the handle a session holds ([`handle`]
//!   implements the provider's `Sandbox` on it); [`lifecycle`]: pause, resume, lifetime,
//!   the end;
//! - [`tree`]: the files; [`files`]: the file routes on them; [`watch`]: their changes.
//!
//! Limits: `timeout` is enforced; `cpu`, `memory` and `disk` are kept in the record and
//! not enforced (nothing runs). Each sandbox's files may hold [`MEMORY_BOUND`] bytes; a
//! write past it is refused (`E4001`). Sandboxes end with the engine.

mod files;
mod handle;
mod lifecycle;
mod sandbox;
mod tree;
mod watch;

#[cfg(test)]
mod tests;

use super::provider::{Provider, ProviderResult, Sandbox, check_create};
use crate::error::engine::{Code, EngineError};
use crate::services::paths::{PathGuard, PathRules, SymlinkPolicy, normalize};
use crate::wire::{
    Connection, CreateSandbox, Feature, ListSandboxes, ProviderKind, ProviderRecord, SandboxRecord,
    SandboxStatus,
};
use async_trait::async_trait;
use sandbox::{Core, MemorySandbox, State, Table};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tree::Tree;

/// The in-process providers this build registers.
pub fn providers(state_dir: &Path) -> Vec<Arc<dyn Provider>> {
    vec![Arc::new(MemoryProvider::new(state_dir))]
}

pub const ID: &str = "memory";
/// The one template.
const TEMPLATE: &str = "base";
/// What a sandbox's files may hold, in bytes.
pub const MEMORY_BOUND: u64 = 256 << 20;
/// Changes a watch may fall behind before it gets an `overflow` (as `local`'s).
const WATCH_CAPACITY: usize = crate::services::files::watch::DEFAULT_CAPACITY;
/// The temp folder `local` makes in every home (its processes' `TMPDIR`).
const TMP: &str = ".tmp";

pub struct MemoryProvider {
    /// `<state>/sandboxes`, canonical where it exists: each sandbox's home is below.
    root: PathBuf,
    sandboxes: Arc<Table>,
    /// What each sandbox's files may hold, in bytes ([`MEMORY_BOUND`]).
    bound: u64,
}

impl MemoryProvider {
    pub fn new(state_dir: &Path) -> MemoryProvider {
        // Paths read as `local`'s, whose homes are canonical.
        let state = std::fs::canonicalize(state_dir)
            .or_else(|_| std::path::absolute(state_dir))
            .unwrap_or_else(|_| state_dir.to_path_buf());
        MemoryProvider {
            root: normalize(&state).join("sandboxes"),
            sandboxes: Arc::default(),
            bound: MEMORY_BOUND,
        }
    }

    /// Sandboxes whose files may hold `bound` bytes (the bound's tests, without 256 MiB).
    #[cfg(test)]
    pub(crate) fn with_bound(state_dir: &Path, bound: u64) -> MemoryProvider {
        MemoryProvider {
            bound,
            ..MemoryProvider::new(state_dir)
        }
    }

    /// How many sandboxes are alive.
    pub fn sandbox_count(&self) -> usize {
        self.sandboxes.len()
    }

    /// Which limits a sandbox asking for these is given for real: only its lifetime.
    fn enforced(body: &CreateSandbox) -> BTreeMap<String, bool> {
        let mut limits = BTreeMap::from([("timeout".to_owned(), true)]);
        for (name, asked) in [
            ("cpu", body.cpu.is_some()),
            ("memory", body.memory.is_some()),
            ("disk", body.disk.is_some()),
        ] {
            if asked {
                limits.insert(name.to_owned(), false);
            }
        }
        limits
    }

    /// The state of a new sandbox `state` describes: its home, its guard, its files.
    fn make(&self, state: State) -> ProviderResult<Arc<Core>> {
        let internal = |e: String| EngineError::new(Code::Internal, e);
        let home = self.root.join(&state.record.sandbox_id).join("root");
        let guard = PathGuard::from_section(&PathRules {
            allow: Some(vec![home.clone()]),
            // There are no links in memory: nothing to follow, nothing to look up on disk.
            symlinks: Some(SymlinkPolicy::Allow),
            ..PathRules::default()
        })
        .map_err(|e| internal(format!("cannot guard the sandbox's paths: {e}")))?;
        let mut tree = Tree::new(home.clone(), self.bound);
        tree.mkdir(&home.join(TMP), false, &mut Vec::new())
            .map_err(|e| internal(format!("cannot make the sandbox's temp folder: {e}")))?;
        let core = Core::new(
            home,
            guard,
            state,
            tree,
            WATCH_CAPACITY,
            Arc::downgrade(&self.sandboxes),
        );
        Ok(Arc::new(core))
    }
}

#[async_trait]
impl Provider for MemoryProvider {
    fn record(&self) -> ProviderRecord {
        ProviderRecord {
            id: ID.into(),
            name: "in-memory".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: ProviderKind::Node,
            trust: "builtin".into(),
            features: vec![
                Feature::Sandboxes,
                Feature::Timeout,
                Feature::Pause,
                Feature::Files,
                Feature::Watch,
            ],
            error: None,
        }
    }

    async fn create(
        &self,
        conn: &Connection,
        body: CreateSandbox,
    ) -> ProviderResult<SandboxRecord> {
        let (template, timeout) = check_create(ID, TEMPLATE, &body)?;
        if body.isolation.is_some() || body.allow_internet_access.is_some() {
            return Err(EngineError::new(
                Code::FeatureNotSupported,
                "the memory provider keeps sandboxes in memory and runs nothing on the machine: \
                 `isolation` and `allow_internet_access` do not apply (create without them)",
            ));
        }
        let envs = body.envs.clone().unwrap_or_default();
        let id = crate::services::ids::new("sb");
        let now = SystemTime::now();
        let mut state = State {
            record: SandboxRecord {
                sandbox_id: id.clone(),
                provider: ID.into(),
                template,
                status: SandboxStatus::Running,
                created_at: crate::services::files::rfc3339(now),
                expires_at: String::new(),
                metadata: body.metadata.clone().unwrap_or_default(),
                // Nothing runs to be given the values: only the names are kept.
                envs_keys: envs.keys().cloned().collect(),
                cpu: body.cpu,
                memory: body.memory,
                disk: body.disk,
                secure: body.secure.unwrap_or(true),
                limits_enforced: Self::enforced(&body),
                isolation: None,
                allow_internet_access: None,
                max_processes: None,
            },
            owner: conn.fingerprint(),
            created: now,
            expires: now,
        };
        state.set_expiry(now + Duration::from_secs(timeout));
        let core = self.make(state)?;
        lifecycle::arm(&core);
        Ok(self.sandboxes.insert(core).record())
    }

    async fn list(
        &self,
        conn: &Connection,
        query: &ListSandboxes,
    ) -> ProviderResult<Vec<SandboxRecord>> {
        self.sandboxes.page(&conn.fingerprint(), query)
    }

    async fn connect(&self, conn: &Connection, id: &str) -> ProviderResult<Arc<dyn Sandbox>> {
        let core = self.sandboxes.of(id, &conn.fingerprint())?;
        Ok(Arc::new(MemorySandbox { core }))
    }
}
