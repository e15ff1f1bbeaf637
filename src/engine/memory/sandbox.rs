//! One memory sandbox's state, shared by every handle a session holds: its record, its
//! files ([`Tree`]), the changes its watches follow, its expiry timer. Every call checks
//! first that the sandbox still exists (`E2009` once it is gone); files work while it is
//! paused, as `local`'s do.

use super::super::provider::ProviderResult;
use super::tree::{Change, Tree};
use crate::engine::table::{Life, Member};
use crate::error::engine::EngineError;
use crate::services::files::{FileError, Op, names_directory};
use crate::services::paths::PathGuard;
use crate::wire::SandboxRecord;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;
use tokio::sync::broadcast;

/// The provider's sandboxes by id (the end removes its own entry).
pub type Table = crate::engine::table::Table<Core>;

pub use crate::engine::table::lock;

/// What a sandbox is, apart from its files.
pub struct State {
    pub record: SandboxRecord,
    /// The fingerprint of the connection that created it: only that account sees it.
    pub owner: String,
    /// When it was made, to the nanosecond (the record's field is to the second): the
    /// list's order.
    pub created: SystemTime,
    pub expires: SystemTime,
}

impl State {
    pub fn set_expiry(&mut self, at: SystemTime) {
        self.expires = at;
        self.record.expires_at = crate::services::files::rfc3339(at);
    }
}

pub struct Core {
    pub id: String,
    /// `<state>/sandboxes/<id>/root`, where `local` would put this sandbox's home: relative
    /// paths start here and no path leaves it.
    pub home: PathBuf,
    guard: PathGuard,
    pub state: Mutex<State>,
    pub tree: Mutex<Tree>,
    /// Every change of the tree, in order, for the watches.
    pub changes: broadcast::Sender<Change>,
    /// Gone or not, the end's signal to its watches, the expiry timer.
    pub life: Life,
    pub table: Weak<Table>,
}

impl Member for Core {
    fn life(&self) -> &Life {
        &self.life
    }

    fn listing(&self) -> (String, SystemTime, SandboxRecord) {
        let state = lock(&self.state);
        (state.owner.clone(), state.created, state.record.clone())
    }
}

impl Core {
    pub fn new(
        home: PathBuf,
        guard: PathGuard,
        state: State,
        tree: Tree,
        watch_capacity: usize,
        table: Weak<Table>,
    ) -> Core {
        Core {
            life: Life::new(&state.record.sandbox_id),
            id: state.record.sandbox_id.clone(),
            home,
            guard,
            state: Mutex::new(state),
            tree: Mutex::new(tree),
            changes: broadcast::channel(watch_capacity).0,
            table,
        }
    }

    pub fn record(&self) -> SandboxRecord {
        lock(&self.state).record.clone()
    }

    /// `raw` (relative to the home, or absolute) judged by the path guard: normalized,
    /// and inside the home.
    pub fn judge(&self, raw: &str, op: Op) -> Result<PathBuf, FileError> {
        Ok(self.guard.check(raw, op, &self.home)?)
    }

    /// `raw` judged for `op`, and found on `tree` as `local` locates it: `a.txt/` names a
    /// directory (ENOTDIR), never the file `a.txt`, whatever the operation.
    pub fn locate(&self, tree: &Tree, raw: &str, op: Op) -> Result<PathBuf, FileError> {
        let path = self.judge(raw, op)?;
        if names_directory(raw) && matches!(tree.is_dir(&path), Ok(Some(false))) {
            return Err(FileError::NotDirectory(path));
        }
        Ok(path)
    }

    /// Looks at the files: `raw` located for `op`, then `look` on the tree.
    pub fn look<T>(
        &self,
        raw: &str,
        op: Op,
        look: impl FnOnce(&Tree, &Path) -> Result<T, FileError>,
    ) -> ProviderResult<T> {
        self.life.alive()?;
        let tree = lock(&self.tree);
        self.life.alive()?;
        let path = self.locate(&tree, raw, op).map_err(domain)?;
        look(&tree, &path).map_err(domain)
    }

    /// Changes the files with `change`, all at once, and tells the watches what changed
    /// (under the same lock, so they see the changes in the tree's order).
    pub fn change<T>(
        &self,
        change: impl FnOnce(&mut Tree, &mut Vec<Change>) -> Result<T, EngineError>,
    ) -> ProviderResult<T> {
        self.life.alive()?;
        let mut tree = lock(&self.tree);
        // The end clears the tree under this lock: nothing changes a sandbox that is gone.
        self.life.alive()?;
        let mut changes = Vec::new();
        let done = change(&mut tree, &mut changes);
        for change in changes {
            // No watch is listening: nobody to tell.
            let _ = self.changes.send(change);
        }
        done
    }
}

/// A file service error as the engine answers it (the table's row for each, as `local`).
pub fn domain(e: FileError) -> EngineError {
    EngineError::from_domain(&e)
}

/// A session's handle on one sandbox.
pub struct MemorySandbox {
    pub core: Arc<Core>,
}
