//! A memory sandbox's files, answered as `local` answers them: every path judged by the
//! path guard (relative paths start at the home; an absolute path must be inside it), the
//! same entry info, the same errors. A write reads its whole body before the tree changes
//! (atomic by construction) and never takes the sandbox over its memory bound.

use super::super::provider::{ByteStream, FileBody, FileRead, ProviderResult};
use super::sandbox::{Core, domain, lock};
use crate::error::engine::{Code, EngineError};
use crate::services::files::{FileError, Op};

use crate::wire::{EntryInfo, MkdirBody, MoveBody, WriteQuery};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use std::path::Path;

/// Bytes of a read per chunk of its body.
const CHUNK: usize = 256 * 1024;

/// `E4001`: the write would take the sandbox over its bound.
fn full(core: &Core, path: &Path, usage: u64, limit: u64) -> EngineError {
    let mut e = EngineError::new(
        Code::InvalidArgument,
        format!(
            "writing `{}` would take sandbox `{}` over its {} of memory (its files hold {usage} bytes)",
            path.display(),
            core.id,
            amount(limit),
        ),
    );
    e.suggestion = Some("remove files from the sandbox, or write less".into());
    e
}

/// `256 MiB`, or a count of bytes when it is not whole MiB.
fn amount(bytes: u64) -> String {
    if bytes > 0 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

pub fn read(core: &Core, raw: &str) -> ProviderResult<FileRead> {
    let bytes = core.look(raw, Op::Read, |tree, path| tree.read(path))?;
    let size = bytes.len() as u64;
    let chunks: Vec<std::io::Result<Bytes>> = (0..bytes.len())
        .step_by(CHUNK)
        .map(|at| Ok(bytes.slice(at..bytes.len().min(at + CHUNK))))
        .collect();
    Ok(FileRead {
        size,
        body: FileBody::Stream(Box::pin(futures::stream::iter(chunks))),
    })
}

/// Writes the body whole; `overwrite` and `parents` default to true. What is in the way
/// is refused before the body is read; a body past the room left is refused as soon as it
/// is, and leaves nothing behind.
pub async fn write(
    core: &Core,
    query: WriteQuery,
    mut body: ByteStream,
) -> ProviderResult<EntryInfo> {
    core.life.alive()?;
    let raw = query.path.filter(|p| !p.is_empty()).ok_or_else(|| {
        EngineError::new(Code::InvalidArgument, "query parameter `path` is required")
    })?;
    let overwrite = query.overwrite.unwrap_or(true);
    let parents = query.parents.unwrap_or(true);
    let metadata = query.metadata.unwrap_or_default();
    let (path, room, usage, limit) = {
        let tree = lock(&core.tree);
        let path = core.locate(&tree, &raw, Op::Write).map_err(domain)?;
        let room = tree.room_for(&path, overwrite, parents).map_err(domain)?;
        (path, room, tree.usage(), tree.limit())
    };
    let mut data = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| domain(FileError::Body(Box::new(e))))?;
        if (data.len() + chunk.len()) as u64 > room {
            return Err(full(core, &path, usage, limit));
        }
        data.extend_from_slice(&chunk);
    }
    let written = core.change(|tree, changes| {
        match tree.write(&path, data.freeze(), metadata, overwrite, parents, changes) {
            Err(FileError::TooLarge { limit, .. }) => Err(full(core, &path, tree.usage(), limit)),
            done => done.map_err(domain),
        }
    })?;
    Ok(EntryInfo::from(&written))
}

pub fn list(core: &Core, raw: &str, depth: u32) -> ProviderResult<Vec<EntryInfo>> {
    let entries = core.look(raw, Op::List, |tree, path| tree.list(path, depth))?;
    Ok(entries.iter().map(EntryInfo::from).collect())
}

pub fn info(core: &Core, raw: &str) -> ProviderResult<EntryInfo> {
    Ok(EntryInfo::from(&core.look(
        raw,
        Op::Read,
        |tree, path| tree.info(path),
    )?))
}

/// `a.txt/` of a file is not there (the kernel's ENOTDIR, as `local` answers): the only
/// type error a look of `exists` meets.
pub fn exists(core: &Core, raw: &str) -> ProviderResult<bool> {
    match core.look(raw, Op::Read, |tree, path| tree.exists(path)) {
        Err(e) if e.code == Code::WrongFileType => Ok(false),
        found => found,
    }
}

/// `parents` defaults to true.
pub fn mkdir(core: &Core, body: MkdirBody) -> ProviderResult<EntryInfo> {
    let made = core.change(|tree, changes| {
        let path = core.judge(&body.path, Op::Write).map_err(domain)?;
        tree.mkdir(&path, body.parents.unwrap_or(true), changes)
            .map_err(domain)
    })?;
    Ok(EntryInfo::from(&made))
}

/// `overwrite` defaults to false. The source is judged and reached before the target is
/// even judged, as `local` does.
pub fn rename(core: &Core, body: MoveBody) -> ProviderResult<EntryInfo> {
    let moved = core.change(|tree, changes| {
        let moving = || {
            let from = core.locate(tree, &body.from, Op::Delete)?;
            tree.reach(&from)?;
            let to = core.locate(tree, &body.to, Op::Write)?;
            Ok::<_, FileError>((from, to))
        };
        let (from, to) = moving().map_err(domain)?;
        tree.rename(&from, &to, body.overwrite.unwrap_or(false), changes)
            .map_err(domain)
    })?;
    Ok(EntryInfo::from(&moved))
}

/// The path removed, as the sandbox sees it.
pub fn remove(core: &Core, raw: &str, recursive: bool) -> ProviderResult<String> {
    let removed = core.change(|tree, changes| {
        let path = core.locate(tree, raw, Op::Delete).map_err(domain)?;
        tree.remove(&path, recursive, changes).map_err(domain)
    })?;
    Ok(removed.display().to_string())
}
