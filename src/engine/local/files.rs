//! A sandbox's files, through the file service rooted at its folder: every path is
//! judged by the path guard (relative paths start at the folder; an absolute path must be
//! inside it) and opened beneath the folder without following a link out of it. Files
//! work while the sandbox is paused. Entries are the server's entry info, with their
//! owners named as the sandbox names them ([`Owners`]) and the metadata a write kept.

use super::super::provider::{
    ByteStream, Event, EventStream, FileBody, FileRead, ProviderResult, UploadBody,
};
use super::inside;
use super::owners::Owners;
use super::sandbox::Core;
use crate::error::engine::{Code, EngineError};
use crate::services::files::watch::{DEFAULT_CAPACITY, Watch};
use crate::services::files::{Entry, FileError, FileService, Piece, WriteOptions};

use crate::wire::watch::{Rendered, render_named};
use crate::wire::{EntryInfo, MkdirBody, MoveBody, WriteQuery};
use std::sync::Arc;

fn domain(core: &Core, e: FileError) -> EngineError {
    inside::redacted(core, EngineError::from_domain(&e))
}

/// The wire's entry info of `entry`, its paths and owners the sandbox's.
fn entry(core: &Core, entry: &Entry) -> EntryInfo {
    named(core, &mut Owners::default(), entry)
}

/// [`entry`], the owners' names looked up through `owners` (a listing's, shared).
fn named(core: &Core, owners: &mut Owners, entry: &Entry) -> EntryInfo {
    let mut info = EntryInfo::from(entry);
    (info.owner, info.group) = owners.of(core, entry);
    if core.isolated.is_some() {
        info.path = inside::shown(core, info.path.into())
            .as_str()
            .unwrap_or_default()
            .to_owned();
        info.symlink_target = info.symlink_target.map(|t| {
            inside::shown(core, t.into())
                .as_str()
                .unwrap_or_default()
                .to_owned()
        });
    }
    info
}

/// What the API just made, given to the sandbox's user ([`inside::own`]); its entry, taken
/// before, answers who owns it now (what was the engine's is the user's).
fn owned(core: &Core, mut made: Entry) -> Entry {
    inside::own(core, &made.path);
    if let Some(user) = inside::user_to_give(core)
        && made.uid == Some(0)
    {
        (made.uid, made.gid) = (Some(user), Some(user));
    }
    made
}

/// Runs a blocking file operation off the runtime's threads.
async fn blocking<T: Send + 'static>(
    core: &Core,
    op: impl FnOnce(FileService) -> Result<T, FileError> + Send + 'static,
) -> ProviderResult<T> {
    core.life.alive()?;
    let files = core.files.clone();
    tokio::task::spawn_blocking(move || op(files))
        .await
        .map_err(|e| {
            // The panic's text goes to the log, never into an answer (it can quote the input).
            tracing::error!("a file operation stopped: {e}");
            EngineError::new(
                Code::Internal,
                "a file operation stopped on a bug; the engine log has the details",
            )
        })?
        .map_err(|e| domain(core, e))
}

pub async fn read(core: &Core, path: &str) -> ProviderResult<FileRead> {
    let path = inside::host_path(core, path)?;
    let file = blocking(core, move |files| files.read(&path, None)).await?;
    Ok(FileRead {
        size: file.len,
        body: FileBody::File(file),
    })
}

/// Writes the body atomically; `overwrite` and `parents` default to true.
pub async fn write(core: &Core, query: WriteQuery, body: ByteStream) -> ProviderResult<EntryInfo> {
    use futures::StreamExt;
    let pieces = body.map(|chunk| chunk.map(Piece::Bytes));
    write_pieces(core, query, pieces, None, |_| {}).await
}

/// [`write`] of a body the connection places in the temp file itself once it is armed with
/// it (`crate::zero_copy`): the sandbox's files are local, so nothing need pass through the
/// engine's memory.
pub async fn write_upload(
    core: &Core,
    query: WriteQuery,
    body: UploadBody,
) -> ProviderResult<EntryInfo> {
    let arming = body.arming();
    let expected_len = body.declared_len();
    write_pieces(core, query, body, expected_len, move |file| {
        arming.arm(file)
    })
    .await
}

async fn write_pieces<S, E>(
    core: &Core,
    query: WriteQuery,
    pieces: S,
    expected_len: Option<u64>,
    on_open: impl FnOnce(&std::fs::File) + Send + 'static,
) -> ProviderResult<EntryInfo>
where
    S: futures::Stream<Item = Result<Piece<bytes::Bytes>, E>> + Send,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    core.life.alive()?;
    let path = query.path.filter(|p| !p.is_empty()).ok_or_else(|| {
        EngineError::new(Code::InvalidArgument, "query parameter `path` is required")
    })?;
    let path = inside::host_path(core, &path)?;
    let options = WriteOptions {
        overwrite: query.overwrite.unwrap_or(true),
        parents: query.parents.unwrap_or(true),
        sync: false,
        expected_len,
        metadata: query.metadata,
    };
    // The temp file is the sandbox user's before it is renamed into place: a watch sees
    // the file appear with its owner, never a moment of the engine's.
    let user = inside::user_to_give(core);
    let on_open = move |file: &std::fs::File| {
        inside::give(user, file);
        on_open(file)
    };
    let written = core
        .files
        .write_pieces(&path, pieces, options, on_open)
        .await
        .map_err(|e| domain(core, e))?;
    Ok(entry(core, &owned(core, written)))
}

pub async fn list(core: &Core, path: &str, depth: u32) -> ProviderResult<Vec<EntryInfo>> {
    let path = inside::host_path(core, path)?;
    let listing = blocking(core, move |files| files.list(&path, depth)).await?;
    let mut owners = Owners::default();
    Ok(listing
        .entries
        .iter()
        .map(|e| named(core, &mut owners, e))
        .collect())
}

pub async fn info(core: &Core, path: &str) -> ProviderResult<EntryInfo> {
    let path = inside::host_path(core, path)?;
    Ok(entry(
        core,
        &blocking(core, move |files| files.info(&path)).await?,
    ))
}

pub async fn exists(core: &Core, path: &str) -> ProviderResult<bool> {
    let path = inside::host_path(core, path)?;
    blocking(core, move |files| files.exists(&path)).await
}

/// `parents` defaults to true.
pub async fn mkdir(core: &Core, body: MkdirBody) -> ProviderResult<EntryInfo> {
    let path = inside::host_path(core, &body.path)?;
    let made = blocking(core, move |files| {
        files.mkdir(&path, body.parents.unwrap_or(true))
    })
    .await?;
    Ok(entry(core, &owned(core, made)))
}

/// `overwrite` defaults to false.
pub async fn rename(core: &Core, body: MoveBody) -> ProviderResult<EntryInfo> {
    let (from, to) = (
        inside::host_path(core, &body.from)?,
        inside::host_path(core, &body.to)?,
    );
    let moved = blocking(core, move |files| {
        files.rename(&from, &to, body.overwrite.unwrap_or(false))
    })
    .await?;
    Ok(entry(core, &moved))
}

pub async fn remove(core: &Core, path: &str, recursive: bool) -> ProviderResult<String> {
    let path = inside::host_path(core, path)?;
    let removed = blocking(core, move |files| files.delete(&path, recursive)).await?;
    Ok(inside::shown_path(core, &removed.display().to_string()))
}

/// Changes under `path` as events (rendered as the server's watch renders them); a
/// directory the system cannot watch is an `error` event and the stream goes on; the
/// path going away, a failed watch, or the sandbox's end close it with an error.
pub async fn watch(core: &Arc<Core>, path: &str, recursive: bool) -> ProviderResult<EventStream> {
    let path = inside::host_path(core, path)?;
    let watch = blocking(core, move |files| {
        files.watch(&path, recursive, DEFAULT_CAPACITY)
    })
    .await?;
    let follow = Follow {
        watch,
        core: core.clone(),
        files: core.files.clone(),
        ended: core.life.ended.subscribe(),
        done: false,
        owners: Owners::default(),
    };
    Ok(Box::pin(futures::stream::unfold(
        follow,
        |mut follow| async move { follow.next().await.map(|event| (event, follow)) },
    )))
}

struct Follow {
    watch: Watch,
    core: Arc<Core>,
    files: FileService,
    ended: tokio::sync::watch::Receiver<bool>,
    done: bool,
    /// The owners' names of the stream's entries, each id looked up once.
    owners: Owners,
}

impl Follow {
    async fn next(&mut self) -> Option<Result<Event, EngineError>> {
        if self.done {
            return None;
        }
        let event = tokio::select! {
            event = self.watch.next() => event,
            _ = self.ended.wait_for(|ended| *ended) => {
                self.done = true;
                return Some(Err(EngineError::new(Code::SandboxNotFound, "the sandbox ended")));
            }
        };
        let Some(event) = event else {
            self.done = true;
            return None;
        };
        let (core, owners) = (&self.core, &mut self.owners);
        let mut name = |entry: &crate::services::files::Entry| owners.of(core, entry);
        Some(
            match render_named(event, &self.files, self.watch.path(), &mut name) {
                Rendered::Event(change) => Ok(Event {
                    name: change.name(),
                    data: inside::shown(&self.core, change.data()),
                }),
                Rendered::Unwatched(message) => Ok(Event {
                    name: "error",
                    data: inside::redacted(&self.core, EngineError::new(Code::Internal, message))
                        .body(),
                }),
                Rendered::Gone(message) => {
                    self.done = true;
                    Err(inside::redacted(
                        &self.core,
                        EngineError::new(Code::FileNotFound, message),
                    ))
                }
                Rendered::Failed(message) => {
                    self.done = true;
                    Err(inside::redacted(
                        &self.core,
                        EngineError::new(Code::Internal, message),
                    ))
                }
            },
        )
    }
}
