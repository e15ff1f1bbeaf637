//! What changes a tree: writes, directories made, moves and removals. Each checks all it
//! can before it changes anything, in the order `local`'s file service does, and notes its
//! changes for the watches.

use super::{Change, Content, Node, Tree, root_refused};
use crate::services::files::{Entry, EntryKind, FileError, Metadata};
use bytes::Bytes;
use std::collections::btree_map::Entry as Slot;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

impl Tree {
    /// What a write of `path` finds in its way (nothing is changed): the refusals a write
    /// answers before it reads the body; else how many bytes the file may have.
    pub fn room_for(&self, path: &Path, overwrite: bool, parents: bool) -> Result<u64, FileError> {
        if path == self.home {
            return Err(root_refused(path));
        }
        let found = match self.find(path) {
            Ok(found) => found,
            // Made on the way; nothing can be below a missing directory.
            Err(FileError::NotFound(_)) if parents => None,
            Err(e) => return Err(e),
        };
        let replaced = match found {
            Some(node) if node.kind() == EntryKind::Dir => {
                return Err(FileError::IsDirectory(path.to_path_buf()));
            }
            Some(_) if !overwrite => return Err(FileError::Exists(path.to_path_buf())),
            Some(node) => node.held(),
            None => 0,
        };
        Ok(self
            .limit
            .saturating_sub(self.usage.saturating_sub(replaced)))
    }

    /// Puts `bytes` at `path` whole, with `metadata` (its missing directories made when
    /// `parents`). Over the room left (the metadata counted): `TooLarge` with the tree's
    /// limit, and nothing changed.
    pub fn write(
        &mut self,
        path: &Path,
        bytes: Bytes,
        metadata: Metadata,
        overwrite: bool,
        parents: bool,
        changes: &mut Vec<Change>,
    ) -> Result<Entry, FileError> {
        let room = self.room_for(path, overwrite, parents)?;
        let len = bytes.len() as u64 + metadata.bytes();
        if len > room {
            return Err(FileError::TooLarge {
                path: path.to_path_buf(),
                limit: self.limit,
            });
        }
        let now = SystemTime::now();
        let Some((dir, name)) = self.holder(path, parents, changes)? else {
            return Err(root_refused(path));
        };
        dir.modified = now;
        let Content::Dir(children) = &mut dir.content else {
            return Err(FileError::NotDirectory(path.to_path_buf()));
        };
        let node = Node {
            content: Content::File(bytes),
            modified: now,
            metadata,
        };
        let entry = node.entry(path);
        let replaced = children.insert(name, node).map_or(0, |old| old.held());
        self.usage = self.usage.saturating_sub(replaced) + len;
        // An atomic write replaces the file whole: `local` reports it as made, too.
        changes.push(Change::Created {
            path: path.to_path_buf(),
            kind: EntryKind::File,
        });
        Ok(entry)
    }

    /// Makes the directory `path` (its missing parents too when `parents`; then an
    /// existing directory is fine, as with `mkdir -p`).
    pub fn mkdir(
        &mut self,
        path: &Path,
        parents: bool,
        changes: &mut Vec<Change>,
    ) -> Result<Entry, FileError> {
        let now = SystemTime::now();
        let Some((dir, name)) = self.holder(path, parents, changes)? else {
            return if parents {
                Ok(self.root.entry(path))
            } else {
                Err(FileError::Exists(path.to_path_buf()))
            };
        };
        let Node {
            content, modified, ..
        } = dir;
        let Content::Dir(children) = content else {
            return Err(FileError::NotDirectory(path.to_path_buf()));
        };
        match children.entry(name) {
            Slot::Occupied(slot) if parents && slot.get().kind() == EntryKind::Dir => {
                Ok(slot.get().entry(path))
            }
            Slot::Occupied(_) => Err(FileError::Exists(path.to_path_buf())),
            Slot::Vacant(slot) => {
                *modified = now;
                changes.push(Change::Created {
                    path: path.to_path_buf(),
                    kind: EntryKind::Dir,
                });
                Ok(slot.insert(Node::dir(now)).entry(path))
            }
        }
    }

    /// The way to `path` is there and `path` is not the home (what a move or a remove
    /// asks of each of its paths before anything else).
    pub fn reach(&self, path: &Path) -> Result<(), FileError> {
        self.find(path)?;
        if path == self.home {
            return Err(root_refused(path));
        }
        Ok(())
    }

    /// Moves `from` to `to` whole, as one rename would (`overwrite`: over what is there,
    /// a file over a file or a directory over an empty directory).
    pub fn rename(
        &mut self,
        from: &Path,
        to: &Path,
        overwrite: bool,
        changes: &mut Vec<Change>,
    ) -> Result<Entry, FileError> {
        self.reach(from)?;
        self.reach(to)?;
        let Some(source) = self.find(from)? else {
            return Err(FileError::NotFound(from.to_path_buf()));
        };
        if to.starts_with(from) && to != from {
            return Err(FileError::InvalidArgument {
                param: "to",
                message: format!(
                    "`{}` cannot be moved into itself (`{}`)",
                    from.display(),
                    to.display()
                ),
            });
        }
        let kind = source.kind();
        let target = self.find(to)?;
        if let Some(target) = target {
            let refused = match (kind, target.kind()) {
                _ if !overwrite => Some(FileError::Exists(to.to_path_buf())),
                _ if from == to => return Ok(target.entry(to)),
                (EntryKind::Dir, EntryKind::Dir)
                    if target.children().is_some_and(|c| !c.is_empty()) =>
                {
                    Some(FileError::NotEmpty(to.to_path_buf()))
                }
                (EntryKind::Dir, EntryKind::File) => {
                    Some(FileError::NotDirectory(to.to_path_buf()))
                }
                (EntryKind::File, EntryKind::Dir) => Some(FileError::IsDirectory(to.to_path_buf())),
                _ => None,
            };
            if let Some(e) = refused {
                return Err(e);
            }
        }
        let now = SystemTime::now();
        let moved = self.take(from, now, changes)?;
        let Some((dir, name)) = self.holder(to, false, changes)? else {
            return Err(root_refused(to));
        };
        dir.modified = now;
        let Content::Dir(children) = &mut dir.content else {
            return Err(FileError::NotDirectory(to.to_path_buf()));
        };
        let entry = moved.entry(to);
        let replaced = children.insert(name, moved);
        self.usage = self
            .usage
            .saturating_sub(replaced.as_ref().map_or(0, Node::held));
        changes.push(Change::Renamed {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            kind,
            replaced: replaced.is_some(),
        });
        Ok(entry)
    }

    /// Removes `path` (a non-empty directory only when `recursive`): every entry removed
    /// is noted, what a directory held before the directory, as `local` removes them.
    pub fn remove(
        &mut self,
        path: &Path,
        recursive: bool,
        changes: &mut Vec<Change>,
    ) -> Result<PathBuf, FileError> {
        self.reach(path)?;
        match self.find(path)? {
            None => return Err(FileError::NotFound(path.to_path_buf())),
            Some(node) if !recursive && node.children().is_some_and(|c| !c.is_empty()) => {
                return Err(FileError::NotEmpty(path.to_path_buf()));
            }
            Some(_) => {}
        }
        let removed = self.take(path, SystemTime::now(), changes)?;
        self.usage = self.usage.saturating_sub(removed.held());
        deleted(&removed, path, changes);
        Ok(path.to_path_buf())
    }

    /// Takes the node at `path` out of its directory.
    fn take(
        &mut self,
        path: &Path,
        now: SystemTime,
        changes: &mut Vec<Change>,
    ) -> Result<Node, FileError> {
        let Some((dir, name)) = self.holder(path, false, changes)? else {
            return Err(root_refused(path));
        };
        dir.modified = now;
        let Content::Dir(children) = &mut dir.content else {
            return Err(FileError::NotDirectory(path.to_path_buf()));
        };
        children
            .remove(&name)
            .ok_or_else(|| FileError::NotFound(path.to_path_buf()))
    }
}

/// Notes the removal of `node` (at `path`) and of everything it held, deepest first.
fn deleted(node: &Node, path: &Path, changes: &mut Vec<Change>) {
    if let Some(children) = node.children() {
        for (name, child) in children {
            deleted(child, &path.join(name), changes);
        }
    }
    changes.push(Change::Deleted {
        path: path.to_path_buf(),
        kind: node.kind(),
    });
}
