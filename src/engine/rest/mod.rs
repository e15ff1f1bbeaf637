//! The `rest` provider kind: sandboxes behind another svc-engine/1 service at the
//! connection's `api_url`, reached with its `api_key` (one local engine fronting a remote
//! one). Every route is forwarded to the same route there; event streams, file bodies and
//! the terminal flow through as they come, never held whole. Over `http://`, a file's
//! bytes pass socket to socket where the caller's connection allows it, with `splice(2)`
//! (a write of declared length, `upload.rs`; a read to an HTTP/1 caller, `download.rs`).
//!
//! The connection: `api_url` is the remote engine's base URL (`http://HOST:PORT`; a
//! trailing `/` or `/v1` is accepted), `api_key` its token (its descriptor's `token`, sent
//! as `Authorization: Bearer`, never logged or echoed). The remote is spoken to as
//! `provider_options.remote` (a whole connection, so `rest` can front another `rest`), else
//! as `{"provider": "local"}`; `provider_options.timeout_ms` sets how long a call may take
//! (1 ms to a day, default 60 s); `provider_options` holds nothing else. A missing or bad
//! field is `E4002` naming it.
//!
//! What a caller sees:
//!
//! - the record declares every feature: the remote decides, and a feature its provider
//!   lacks comes back as its own 501 `E8004`; every error of the remote passes through
//!   with its code, message and suggestion (a stale sandbox's `E2009` included, so the
//!   session layer connects once more);
//! - the remote's 401 (a wrong `api_key`) is `E1002`; its 403 (its door refuses requests
//!   that are not from its own loopback) is `E4002`: a remote engine serves its own
//!   machine, so `api_url` is a loopback address or a tunnel to one;
//! - an unreachable remote is `E9001` naming the URL; one that does not answer in time is
//!   `E9002` (connect 5 s; a JSON call 60 s, or a run's own `timeout` plus 10 s when
//!   longer, no limit for `timeout: 0`; the head of a stream or file 60 s; an open
//!   stream, body, upload or terminal may be silent 60 s, and a quiet terminal is pinged);
//!   an answer that is not the protocol is `E9001`;
//! - sandbox records name `rest` as their provider (the id this engine reaches them by);
//!   `ports/:port/url` answers the remote's URL as it gave it;
//! - a terminal cut by a silent remote ends with a notice line in its output (a terminal's
//!   output has no error channel); an `error` event the remote sends and then goes on
//!   after (a watch notice) is passed on once the next bytes show the stream goes on;
//! - the HTTP client is built at the first call, not at engine start (loading TLS roots
//!   would cost the engine's cold start), ignores proxy variables (the remote is a
//!   loopback service and the token must not cross a proxy), and is shared by every call
//!   (one connection pool). An `https://` `api_url` is reached over TLS by the calls and
//!   the terminal alike, certificates checked against the platform's roots.

mod download;
mod failure;
mod files;
mod remote;
mod sandbox;
mod sse;
mod streams;
mod terminal;
mod timeouts;
mod upload;

#[cfg(test)]
mod tests;

pub use timeouts::Timeouts;

use super::provider::{Provider, ProviderResult, Sandbox};
use crate::error::engine::{Code, EngineError};
use crate::wire::{
    Connection, CreateSandbox, Feature, ListSandboxes, ProviderKind, ProviderRecord, SandboxList,
    SandboxRecord,
};
use async_trait::async_trait;
use remote::{Empty, Remote};
use reqwest::Method;
use sandbox::{PROVIDER_ID, RestSandbox, ours};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How often an idle pooled connection is probed, so a remote machine that vanished is
/// noticed even by a call without a limit.
const KEEPALIVE: Duration = Duration::from_secs(30);

/// The `rest` providers this build registers: the one that reaches any remote engine.
pub fn providers(_state_dir: &Path) -> Vec<Arc<dyn Provider>> {
    vec![Arc::new(RestProvider::new())]
}

pub struct RestProvider {
    timeouts: Timeouts,
    http: OnceLock<Result<reqwest::Client, String>>,
}

impl Default for RestProvider {
    fn default() -> Self {
        RestProvider::new()
    }
}

impl RestProvider {
    pub fn new() -> RestProvider {
        RestProvider::with_timeouts(Timeouts::default())
    }

    pub fn with_timeouts(timeouts: Timeouts) -> RestProvider {
        RestProvider {
            timeouts,
            http: OnceLock::new(),
        }
    }

    fn http(&self) -> ProviderResult<reqwest::Client> {
        let built = self.http.get_or_init(|| {
            reqwest::Client::builder()
                .no_proxy()
                .tcp_nodelay(true)
                .tcp_keepalive(KEEPALIVE)
                .connect_timeout(self.timeouts.connect)
                .build()
                .map_err(|e| e.to_string())
        });
        built.clone().map_err(|e| {
            EngineError::new(
                Code::ProviderFailed,
                format!("the `rest` provider cannot make its HTTP client: {e}"),
            )
        })
    }

    fn remote(&self, conn: &Connection) -> ProviderResult<Remote> {
        Remote::of(conn, self.http()?, self.timeouts)
    }
}

#[async_trait]
impl Provider for RestProvider {
    fn record(&self) -> ProviderRecord {
        ProviderRecord {
            id: PROVIDER_ID.into(),
            name: "remote svc-engine/1".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: ProviderKind::Rest,
            trust: "builtin".into(),
            features: Feature::ALL.to_vec(),
            error: None,
        }
    }

    async fn create(
        &self,
        conn: &Connection,
        body: CreateSandbox,
    ) -> ProviderResult<SandboxRecord> {
        let remote = self.remote(conn)?;
        let limit = Some(remote.timeouts.call);
        let record = remote
            .send(Method::POST, &["sandboxes"], &body, limit)
            .await?;
        Ok(ours(record))
    }

    async fn list(
        &self,
        conn: &Connection,
        query: &ListSandboxes,
    ) -> ProviderResult<Vec<SandboxRecord>> {
        let remote = self.remote(conn)?;
        let mut pairs = Vec::new();
        if let Some(status) = query.status
            && let Ok(serde_json::Value::String(status)) = serde_json::to_value(status)
        {
            pairs.push(("status", status));
        }
        pairs.extend(query.limit.map(|l| ("limit", l.to_string())));
        pairs.extend(query.offset.map(|o| ("offset", o.to_string())));
        let list: SandboxList = remote.call(Method::GET, &["sandboxes"], &pairs).await?;
        Ok(list.sandboxes.into_iter().map(ours).collect())
    }

    /// Checks that the remote knows the sandbox (its connect route) before handing out a
    /// handle.
    async fn connect(&self, conn: &Connection, id: &str) -> ProviderResult<Arc<dyn Sandbox>> {
        let remote = self.remote(conn)?;
        let limit = Some(remote.timeouts.call);
        let segments = ["sandboxes", id, "connect"];
        let _: SandboxRecord = remote
            .send(Method::POST, &segments, &Empty {}, limit)
            .await?;
        Ok(Arc::new(RestSandbox {
            remote: Arc::new(remote),
            id: id.to_owned(),
        }))
    }
}
