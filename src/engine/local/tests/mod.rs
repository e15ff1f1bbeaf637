//! The local provider against this machine: sandboxes in a temporary state folder, real
//! processes found in `/proc`. Every test ends the sandboxes it made, so a failing one
//! leaves nothing running for long (each sandbox also expires on its own).

mod code;
mod commands;
mod files;
mod isolated;
mod lifecycle;

use super::LocalProvider;
use super::env::mark_entry;
use crate::engine::provider::{Event, EventStream, Provider, Sandbox};
use crate::error::engine::{Code, EngineError};
use crate::services::proc_scan::{self, Marks};
use crate::wire::{Connection, CreateSandbox, SandboxRecord};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

pub(super) fn conn(key: &str) -> Connection {
    Connection {
        api_key: Some(key.into()),
        ..Connection::default()
    }
}

pub(super) fn provider_in(dir: &std::path::Path) -> Arc<LocalProvider> {
    LocalProvider::open(dir).unwrap()
}

pub(super) struct Fixture {
    pub dir: tempfile::TempDir,
    pub provider: Arc<LocalProvider>,
}

pub(super) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let provider = provider_in(dir.path());
    Fixture { dir, provider }
}

/// A sandbox of account `a` (60 s, without isolation, unless the body says otherwise)
/// and its handle. These tests pin the provider's own mechanics with host paths; the
/// isolated view is `tests::isolated` and the conformance suite's `engine/isolation`.
pub(super) async fn sandbox_with(
    f: &Fixture,
    body: CreateSandbox,
) -> (SandboxRecord, Arc<dyn Sandbox>) {
    let body = CreateSandbox {
        timeout: body.timeout.or(Some(60)),
        isolation: body.isolation.or(Some(crate::wire::Isolation::None)),
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

/// The code of an error, or a panic naming what came instead.
pub(super) fn code_of<T: std::fmt::Debug>(result: Result<T, EngineError>) -> Code {
    match result {
        Err(e) => e.code,
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

/// The live processes marked as sandbox `id`'s, found the way a stranger would: by the
/// mark alone.
pub(super) fn marked(id: &str) -> Vec<u32> {
    let mark = mark_entry(id);
    proc_scan::find(&Marks {
        env: &mark,
        ..Marks::default()
    })
    .into_iter()
    .filter(|f| !f.stat.is_dead())
    .map(|f| f.stat.pid)
    .collect()
}

/// Waits up to `within` for `check`, looking every 20 ms.
pub(super) async fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if check() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every event of a stream (it must end within 20 s).
pub(super) async fn events(mut stream: EventStream) -> Vec<Result<Event, EngineError>> {
    let mut all = Vec::new();
    let collected = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = stream.next().await {
            all.push(event);
        }
    })
    .await;
    assert!(collected.is_ok(), "the stream did not end: {all:?}");
    all
}

/// The CPU time of `pid` in clock ticks.
pub(super) fn cpu(pid: u32) -> u64 {
    proc_scan::stat(pid).map_or(0, |s| s.cpu_ticks)
}

/// Ends a sandbox at the end of a test (already gone is fine).
pub(super) async fn end(sandbox: &Arc<dyn Sandbox>) {
    let _ = sandbox.kill().await;
}
