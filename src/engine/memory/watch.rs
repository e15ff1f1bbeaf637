//! Watching a memory sandbox's files: its tree's own changes, each rendered as `local`
//! renders an inotify event, as a `wire::WatchChange`: `create`, `delete`, `rename`
//! `{path, from?, type, entry?}`, `entry` being the path's entry info as it is when the
//! event is rendered (absent once it is gone). A write replaces a file whole, which
//! `local` reports as a `create` too; nothing here changes a file in place, so no `modify`
//! comes from the files routes of either provider.
//!
//! - Scope: a directory's direct entries, everything below it with `recursive`, or one
//!   file. A directory moved into a recursive watch brings what it holds, each a `create`.
//! - Nothing is dropped silently: every sandbox has one broadcast of changes; a watch that
//!   falls its capacity behind gets one `overflow` `{path, message}` and goes on.
//! - The watched directory deleted or moved away ends the stream with `error` `E2004`;
//!   the sandbox's end with `error` `E2009`.

use super::super::provider::{Event, EventStream, ProviderResult};
use super::sandbox::{Core, lock};
use super::tree::Change;
use crate::error::engine::{Code, EngineError};
use crate::services::files::{EntryKind, FileError, Op};
use crate::wire::{Change as Changed, Deleted, Overflow, WatchChange};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::broadcast::{self, error::RecvError};

/// What a watch reports.
struct Scope {
    /// The path asked for, resolved.
    watched: PathBuf,
    /// The directory whose entries are reported (the file's own, for a file).
    dir: PathBuf,
    /// Only this file, for a watch on a file.
    file: Option<PathBuf>,
    recursive: bool,
}

impl Scope {
    fn covers(&self, path: &Path) -> bool {
        match &self.file {
            Some(file) => path == file,
            None if self.recursive => path.starts_with(&self.dir) && path != self.dir,
            None => path.parent() == Some(self.dir.as_path()),
        }
    }

    /// Whether `change` takes the watched directory away.
    fn ended_by(&self, change: &Change) -> bool {
        match change {
            Change::Created { .. } => false,
            Change::Deleted { path, .. } => self.dir.starts_with(path),
            Change::Renamed {
                from, to, replaced, ..
            } => self.dir.starts_with(from) || (*replaced && self.dir.starts_with(to)),
        }
    }
}

pub fn watch(core: &Arc<Core>, raw: &str, recursive: bool) -> ProviderResult<EventStream> {
    let (scope, changes) = core.look(raw, Op::Read, |tree, path| {
        let is_dir = tree
            .is_dir(path)?
            .ok_or_else(|| FileError::NotFound(path.to_path_buf()))?;
        let (dir, file) = match path.parent() {
            Some(parent) if !is_dir => (parent.to_path_buf(), Some(path.to_path_buf())),
            _ => (path.to_path_buf(), None),
        };
        let scope = Scope {
            watched: path.to_path_buf(),
            dir,
            file,
            recursive,
        };
        // Subscribed under the tree's lock: no change after this look is missed.
        Ok((scope, core.changes.subscribe()))
    })?;
    let follow = Follow {
        core: core.clone(),
        scope,
        changes,
        ended: core.life.ended.subscribe(),
        queue: VecDeque::new(),
        done: false,
    };
    Ok(Box::pin(futures::stream::unfold(
        follow,
        |mut follow| async move { follow.next().await.map(|event| (event, follow)) },
    )))
}

struct Follow {
    core: Arc<Core>,
    scope: Scope,
    changes: broadcast::Receiver<Change>,
    ended: tokio::sync::watch::Receiver<bool>,
    /// Rendered, not yet taken (one change may make several events).
    queue: VecDeque<Result<Event, EngineError>>,
    done: bool,
}

impl Follow {
    async fn next(&mut self) -> Option<Result<Event, EngineError>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            let ended = &mut self.ended;
            // Only whether it ended: the value's guard must not outlive the wait.
            let end = async move { ended.wait_for(|ended| *ended).await.is_ok() };
            let change = tokio::select! {
                // What changed before the end is told before it.
                biased;
                change = self.changes.recv() => change,
                _ = end => {
                    self.done = true;
                    return Some(Err(EngineError::new(Code::SandboxNotFound, "the sandbox ended")));
                }
            };
            match change {
                Ok(change) => self.render(change),
                Err(RecvError::Lagged(_)) => return Some(Ok(self.overflow())),
                Err(RecvError::Closed) => self.done = true,
            }
        }
    }

    fn render(&mut self, change: Change) {
        match &change {
            Change::Created { path, kind } if self.scope.covers(path) => {
                let change = self.changed(path, None, *kind);
                self.queue.push_back(Ok(event(WatchChange::Create(change))));
            }
            Change::Deleted { path, kind } if self.scope.covers(path) => {
                self.queue.push_back(Ok(deleted(path, *kind)));
            }
            Change::Renamed { from, to, kind, .. } => {
                match (self.scope.covers(from), self.scope.covers(to)) {
                    (true, true) => {
                        let change = self.changed(to, Some(from), *kind);
                        self.queue.push_back(Ok(event(WatchChange::Rename(change))));
                    }
                    (true, false) => self.queue.push_back(Ok(deleted(from, *kind))),
                    (false, true) => self.moved_in(to, *kind),
                    (false, false) => {}
                }
            }
            _ => {}
        }
        if self.scope.ended_by(&change) {
            self.done = true;
            self.queue.push_back(Err(EngineError::new(
                Code::FileNotFound,
                format!(
                    "`{}` was deleted or moved away; the watch has ended",
                    self.scope.dir.display()
                ),
            )));
        }
    }

    /// A directory moved into a recursive watch is reported with what it holds.
    fn moved_in(&mut self, to: &Path, kind: EntryKind) {
        let change = self.changed(to, None, kind);
        self.queue.push_back(Ok(event(WatchChange::Create(change))));
        if kind == EntryKind::Dir && self.scope.recursive && self.scope.file.is_none() {
            let below = lock(&self.core.tree).below(to);
            for entry in below {
                let change = Changed::new(&entry.path, None, entry.kind, Some(&entry));
                self.queue.push_back(Ok(event(WatchChange::Create(change))));
            }
        }
    }

    /// `{path, from?, type, entry?}`: the entry as the path is now, when it is there.
    fn changed(&self, path: &Path, from: Option<&Path>, kind: EntryKind) -> Changed {
        let entry = lock(&self.core.tree).entry(path);
        Changed::new(path, from, kind, entry.as_ref())
    }

    fn overflow(&self) -> Event {
        event(WatchChange::Overflow(Overflow::new(
            &self.scope.watched,
            "some events were lost (the reader fell behind); list the path again to \
             resynchronize",
        )))
    }
}

fn deleted(path: &Path, kind: EntryKind) -> Event {
    event(WatchChange::Delete(Deleted::new(path, kind)))
}

fn event(change: WatchChange) -> Event {
    Event {
        name: change.name(),
        data: change.data(),
    }
}
