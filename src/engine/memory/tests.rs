//! The memory provider through its trait (every operation, every error path, the expiry,
//! pause, watches, two accounts), and through the engine's HTTP side beside `local`: the
//! same requests answer the same to both (`parity`).

mod accounts;
mod files;
mod lifecycle;
mod mistakes;
mod parity;
mod watch;

use super::MemoryProvider;
use crate::engine::provider::{ByteStream, Event, EventStream, Provider, ProviderResult, Sandbox};
use crate::error::engine::{Code, EngineError};
use crate::wire::{Connection, CreateSandbox, MkdirBody, MoveBody, SandboxRecord, WriteQuery};
use bytes::Bytes;
use futures::StreamExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub(super) fn conn(key: &str) -> Connection {
    Connection {
        provider: Some(super::ID.into()),
        api_key: Some(key.into()),
        ..Connection::default()
    }
}

pub(super) struct Fixture {
    pub dir: tempfile::TempDir,
    pub provider: MemoryProvider,
}

pub(super) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let provider = MemoryProvider::new(dir.path());
    Fixture { dir, provider }
}

/// A provider whose sandboxes may hold `bound` bytes of files.
pub(super) fn bounded(bound: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let provider = MemoryProvider::with_bound(dir.path(), bound);
    Fixture { dir, provider }
}

/// A sandbox of account `a` (60 s unless the body says otherwise) and its handle.
pub(super) async fn sandbox_with(
    f: &Fixture,
    body: CreateSandbox,
) -> (SandboxRecord, Arc<dyn Sandbox>) {
    let body = CreateSandbox {
        timeout: body.timeout.or(Some(60)),
        ..body
    };
    let record = f.provider.create(&conn("a"), body).await.unwrap();
    let sandbox = f
        .provider
        .connect(&conn("a"), &record.sandbox_id)
        .await
        .unwrap();
    (record, sandbox)
}

pub(super) async fn sandbox(f: &Fixture) -> (SandboxRecord, Arc<dyn Sandbox>) {
    sandbox_with(f, CreateSandbox::default()).await
}

/// Where the sandbox's files are rooted: where `local` puts a sandbox's home.
pub(super) fn home(f: &Fixture, id: &str) -> PathBuf {
    f.dir
        .path()
        .canonicalize()
        .unwrap()
        .join("sandboxes")
        .join(id)
        .join("root")
}

pub(super) fn body(bytes: &'static [u8]) -> ByteStream {
    Box::pin(futures::stream::iter([Ok(Bytes::from_static(bytes))]))
}

pub(super) fn write(path: &str) -> WriteQuery {
    WriteQuery {
        path: Some(path.into()),
        ..WriteQuery::default()
    }
}

pub(super) async fn read_all(sandbox: &Arc<dyn Sandbox>, path: &str) -> Vec<u8> {
    let read = sandbox.read_file(path).await.unwrap();
    let chunks: Vec<_> = read.body.into_stream().collect().await;
    let bytes: Vec<u8> = chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect();
    assert_eq!(bytes.len() as u64, read.size);
    bytes
}

/// The error of `result`, which must have failed.
pub(super) fn error<T>(result: ProviderResult<T>) -> EngineError {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

pub(super) fn code<T>(result: ProviderResult<T>) -> Code {
    error(result).code
}

/// The next event of a watch (at most 5 s).
pub(super) async fn next(watch: &mut EventStream) -> Option<Result<Event, EngineError>> {
    tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .expect("the watch answers within 5 s")
}

/// The next event, which must be a change: its name and data.
pub(super) async fn event(watch: &mut EventStream) -> Event {
    match next(watch).await {
        Some(Ok(event)) => event,
        other => panic!("expected an event, got {other:?}"),
    }
}

pub(super) fn mkdir(path: &str, parents: bool) -> MkdirBody {
    MkdirBody {
        path: path.into(),
        parents: Some(parents),
    }
}

pub(super) fn moving(from: &str, to: &str, overwrite: Option<bool>) -> MoveBody {
    MoveBody {
        from: from.into(),
        to: to.into(),
        overwrite,
    }
}

pub(super) fn query(path: &str, overwrite: bool, parents: bool) -> WriteQuery {
    WriteQuery {
        path: Some(path.into()),
        overwrite: Some(overwrite),
        parents: Some(parents),
        metadata: None,
    }
}
