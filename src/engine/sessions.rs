//! Sessions (spec 5.5 and 3): a connected sandbox handle, keyed by the connection's
//! fingerprint and the sandbox id, so two accounts never share one. A session unused for
//! the idle time is closed; a session the backend no longer knows (the provider answers
//! `E2009` through an old handle) is rebuilt through connect once.

use super::provider::{Provider, ProviderResult, Sandbox};
use crate::error::engine::Code;
use crate::wire::Connection;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

type Key = (String, String);

struct Session {
    sandbox: Arc<dyn Sandbox>,
    last_used: Instant,
}

pub struct Sessions {
    map: Mutex<HashMap<Key, Session>>,
    idle: Duration,
}

impl Sessions {
    pub fn new(idle: Duration) -> Sessions {
        Sessions {
            map: Mutex::new(HashMap::new()),
            idle,
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<Key, Session>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn key(conn: &Connection, sandbox_id: &str) -> Key {
        (conn.fingerprint(), sandbox_id.to_owned())
    }

    /// Open sessions.
    pub fn len(&self) -> usize {
        self.map().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes the sessions unused for the idle time; returns how many.
    pub fn sweep(&self) -> usize {
        let mut map = self.map();
        let before = map.len();
        map.retain(|_, s| s.last_used.elapsed() < self.idle);
        before - map.len()
    }

    pub fn forget(&self, conn: &Connection, sandbox_id: &str) {
        self.map().remove(&Self::key(conn, sandbox_id));
    }

    /// The session's handle, connecting when there is none; `true` when it was just built.
    async fn handle(
        &self,
        provider: &dyn Provider,
        conn: &Connection,
        sandbox_id: &str,
    ) -> ProviderResult<(Arc<dyn Sandbox>, bool)> {
        let key = Self::key(conn, sandbox_id);
        if let Some(session) = self.map().get_mut(&key) {
            session.last_used = Instant::now();
            return Ok((session.sandbox.clone(), false));
        }
        let sandbox = provider.connect(conn, sandbox_id).await?;
        self.map().insert(
            key,
            Session {
                sandbox: sandbox.clone(),
                last_used: Instant::now(),
            },
        );
        Ok((sandbox, true))
    }

    /// Runs `op` on the sandbox's session. When an old session's handle answers `E2009`,
    /// the session is dropped and rebuilt through connect once, and `op` runs once more.
    pub async fn call<T, F, Fut>(
        &self,
        provider: &dyn Provider,
        conn: &Connection,
        sandbox_id: &str,
        op: F,
    ) -> ProviderResult<T>
    where
        F: Fn(Arc<dyn Sandbox>) -> Fut,
        Fut: Future<Output = ProviderResult<T>>,
    {
        let (sandbox, fresh) = self.handle(provider, conn, sandbox_id).await?;
        match op(sandbox).await {
            Err(e) if e.code == Code::SandboxNotFound => {
                self.forget(conn, sandbox_id);
                if fresh {
                    return Err(e);
                }
                let (sandbox, _) = self.handle(provider, conn, sandbox_id).await?;
                op(sandbox).await
            }
            other => other,
        }
    }

    /// The session's handle for an operation that cannot be run twice (it consumes a
    /// request body); a stale session is still rebuilt, by asking the handle first.
    pub async fn sandbox(
        &self,
        provider: &dyn Provider,
        conn: &Connection,
        sandbox_id: &str,
    ) -> ProviderResult<Arc<dyn Sandbox>> {
        self.call(provider, conn, sandbox_id, |s| async move {
            s.info().await.map(|_| s)
        })
        .await
    }
}
