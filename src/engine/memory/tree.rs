//! The files of one memory sandbox: directories and files held in memory, rooted at the
//! sandbox's home. Paths come in judged and normalized (absolute, under the home); each
//! operation answers what the file service answers `local` for the same request (the same
//! [`FileError`], naming the same path, found in the same order) and notes the changes it
//! made for the watches. Nothing here blocks or awaits: the caller holds the tree's lock for
//! one whole operation, so each is atomic, a write included.

mod edit;

use crate::services::files::{
    Entry, EntryKind, FileError, MAX_LIST_DEPTH, MAX_LIST_ENTRIES, Metadata,
};
use crate::services::paths::RefusalKind;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry as Slot;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// The longest name one component may have, as Linux filesystems allow.
const NAME_MAX: usize = 255;

/// A file's permission bits, and a directory's: what `local` makes them under umask 022.
const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

enum Content {
    File(Bytes),
    /// Names in byte order, as `local` lists them.
    Dir(BTreeMap<String, Node>),
}

struct Node {
    content: Content,
    modified: SystemTime,
    /// What the file was written with (a directory has none, as `local`'s API makes them).
    metadata: Metadata,
}

impl Node {
    fn dir(now: SystemTime) -> Node {
        Node {
            content: Content::Dir(BTreeMap::new()),
            modified: now,
            metadata: Metadata::default(),
        }
    }

    fn kind(&self) -> EntryKind {
        match self.content {
            Content::File(_) => EntryKind::File,
            Content::Dir(_) => EntryKind::Dir,
        }
    }

    fn children(&self) -> Option<&BTreeMap<String, Node>> {
        match &self.content {
            Content::Dir(children) => Some(children),
            Content::File(_) => None,
        }
    }

    /// A file's length; a directory holds no bytes of its own here.
    fn size(&self) -> u64 {
        match &self.content {
            Content::File(bytes) => bytes.len() as u64,
            Content::Dir(_) => 0,
        }
    }

    /// Bytes of every file at and below this node, their metadata's too (it is memory the
    /// sandbox's bound covers).
    fn held(&self) -> u64 {
        match &self.content {
            Content::File(bytes) => bytes.len() as u64 + self.metadata.bytes(),
            Content::Dir(children) => children.values().map(Node::held).sum(),
        }
    }

    fn entry(&self, path: &Path) -> Entry {
        let kind = self.kind();
        Entry {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "/".into()),
            path: path.to_path_buf(),
            kind,
            size: self.size(),
            mode: if kind == EntryKind::Dir {
                DIR_MODE
            } else {
                FILE_MODE
            },
            modified_at: self.modified,
            symlink_target: None,
            metadata: self.metadata.pairs().clone(),
            // A file in memory belongs to no account.
            uid: None,
            gid: None,
        }
    }
}

/// A change, as the watches see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Created {
        path: PathBuf,
        kind: EntryKind,
    },
    Deleted {
        path: PathBuf,
        kind: EntryKind,
    },
    /// `replaced`: something was at `to` before, and is gone.
    Renamed {
        from: PathBuf,
        to: PathBuf,
        kind: EntryKind,
        replaced: bool,
    },
}

pub struct Tree {
    home: PathBuf,
    root: Node,
    /// Bytes held by every file.
    usage: u64,
    /// The most `usage` may be.
    limit: u64,
}

fn root_refused(path: &Path) -> FileError {
    FileError::refused(
        RefusalKind::NotAllowed,
        format!(
            "`{}` is an allowed directory itself; it cannot be replaced, moved or deleted",
            path.display()
        ),
    )
}

fn named(walked: &Path, part: &str) -> Result<(), FileError> {
    if part.len() > NAME_MAX {
        return Err(FileError::refused(
            RefusalKind::Invalid,
            format!(
                "`{}` has a name longer than the filesystem allows",
                walked.display()
            ),
        ));
    }
    Ok(())
}

impl Tree {
    pub fn new(home: PathBuf, limit: u64) -> Tree {
        Tree {
            home,
            root: Node::dir(SystemTime::now()),
            usage: 0,
            limit,
        }
    }

    pub fn usage(&self) -> u64 {
        self.usage
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Lets every file go (the sandbox ended).
    pub fn clear(&mut self) {
        self.root = Node::dir(SystemTime::now());
        self.usage = 0;
    }

    /// The names of `path` below the home.
    fn parts<'p>(&self, path: &'p Path) -> Result<Vec<&'p str>, FileError> {
        let below = path.strip_prefix(&self.home).map_err(|_| {
            FileError::refused(
                RefusalKind::NotAllowed,
                format!("`{}` is outside the allowed directories", path.display()),
            )
        })?;
        below
            .components()
            .map(|c| match c {
                Component::Normal(part) => part.to_str().ok_or_else(|| {
                    FileError::refused(
                        RefusalKind::Invalid,
                        format!("`{}` is not UTF-8", path.display()),
                    )
                }),
                _ => Err(FileError::refused(
                    RefusalKind::Invalid,
                    format!("`{}` is not a normalized path", path.display()),
                )),
            })
            .collect()
    }

    /// What is at `path`: `None` when its directory has no such name; `NotFound` or
    /// `NotDirectory` naming the first part on the way that is missing or a file.
    fn find(&self, path: &Path) -> Result<Option<&Node>, FileError> {
        let parts = self.parts(path)?;
        let Some((last, parents)) = parts.split_last() else {
            return Ok(Some(&self.root));
        };
        let mut dir = &self.root;
        let mut walked = self.home.clone();
        for part in parents {
            walked.push(part);
            named(&walked, part)?;
            dir = match dir.children().and_then(|c| c.get(*part)) {
                Some(node) => node,
                None => return Err(FileError::NotFound(walked)),
            };
            if dir.children().is_none() {
                return Err(FileError::NotDirectory(walked));
            }
        }
        walked.push(last);
        named(&walked, last)?;
        Ok(dir.children().and_then(|c| c.get(*last)))
    }

    /// The directory that holds `path`'s last name (its missing directories made on the
    /// way when `create`, each one noted) and that name; `None` for the home itself.
    fn holder(
        &mut self,
        path: &Path,
        create: bool,
        changes: &mut Vec<Change>,
    ) -> Result<Option<(&mut Node, String)>, FileError> {
        let parts = self.parts(path)?;
        let Some((last, parents)) = parts.split_last() else {
            return Ok(None);
        };
        let now = SystemTime::now();
        let mut dir = &mut self.root;
        let mut walked = self.home.clone();
        for part in parents {
            let Node {
                content, modified, ..
            } = dir;
            let Content::Dir(children) = content else {
                return Err(FileError::NotDirectory(walked));
            };
            walked.push(part);
            named(&walked, part)?;
            dir = match children.entry((*part).to_owned()) {
                Slot::Occupied(slot) => slot.into_mut(),
                Slot::Vacant(slot) if create => {
                    *modified = now;
                    changes.push(Change::Created {
                        path: walked.clone(),
                        kind: EntryKind::Dir,
                    });
                    slot.insert(Node::dir(now))
                }
                Slot::Vacant(_) => return Err(FileError::NotFound(walked)),
            };
        }
        if dir.children().is_none() {
            return Err(FileError::NotDirectory(walked));
        }
        walked.push(last);
        named(&walked, last)?;
        Ok(Some((dir, (*last).to_owned())))
    }

    pub fn info(&self, path: &Path) -> Result<Entry, FileError> {
        match self.find(path)? {
            Some(node) => Ok(node.entry(path)),
            None => Err(FileError::NotFound(path.to_path_buf())),
        }
    }

    /// The entry at `path` when there is one (a watch's event describes it).
    pub fn entry(&self, path: &Path) -> Option<Entry> {
        self.find(path).ok().flatten().map(|node| node.entry(path))
    }

    /// Whether something is at `path`; a part on the way missing or a file is `false`.
    pub fn exists(&self, path: &Path) -> Result<bool, FileError> {
        match self.find(path) {
            Ok(found) => Ok(found.is_some()),
            Err(FileError::NotFound(_) | FileError::NotDirectory(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether `path` is a directory (`None` when nothing is there).
    pub fn is_dir(&self, path: &Path) -> Result<Option<bool>, FileError> {
        Ok(self.find(path)?.map(|node| node.kind() == EntryKind::Dir))
    }

    pub fn read(&self, path: &Path) -> Result<Bytes, FileError> {
        match self.find(path)?.map(|node| &node.content) {
            Some(Content::File(bytes)) => Ok(bytes.clone()),
            Some(Content::Dir(_)) => Err(FileError::IsDirectory(path.to_path_buf())),
            None => Err(FileError::NotFound(path.to_path_buf())),
        }
    }

    /// The directory's entries, `depth` levels down, a directory before what it holds.
    pub fn list(&self, path: &Path, depth: u32) -> Result<Vec<Entry>, FileError> {
        if !(1..=MAX_LIST_DEPTH).contains(&depth) {
            return Err(FileError::InvalidArgument {
                param: "depth",
                message: format!("depth must be 1 to {MAX_LIST_DEPTH}"),
            });
        }
        let children = match self.find(path)? {
            Some(node) => node
                .children()
                .ok_or_else(|| FileError::NotDirectory(path.to_path_buf()))?,
            None => return Err(FileError::NotFound(path.to_path_buf())),
        };
        let mut out = Vec::new();
        collect(children, path, depth, &mut out);
        Ok(out)
    }

    /// Everything below the directory `path`, a directory before what it holds (what a
    /// directory moved into a recursive watch brings with it).
    pub fn below(&self, path: &Path) -> Vec<Entry> {
        let mut out = Vec::new();
        if let Ok(Some(children)) = self.find(path).map(|n| n.and_then(Node::children)) {
            collect(children, path, u32::MAX, &mut out);
        }
        out
    }
}

fn collect(children: &BTreeMap<String, Node>, dir: &Path, depth: u32, out: &mut Vec<Entry>) {
    for (name, node) in children {
        if out.len() >= MAX_LIST_ENTRIES {
            return;
        }
        let path = dir.join(name);
        out.push(node.entry(&path));
        if depth > 1
            && let Some(below) = node.children()
        {
            collect(below, &path, depth - 1, out);
        }
    }
}
