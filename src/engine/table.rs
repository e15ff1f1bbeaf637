//! The sandbox table of the providers that keep their sandboxes themselves (`local`,
//! `memory`, and the next one): the sandboxes by id, each one's life (gone or not, the signal
//! its streams stop on, its expiry timer), the owner check of a connect and the pages of a
//! list. A provider's sandbox is a [`Member`]; what it keeps beyond that is its own.

use super::provider::ProviderResult;
use crate::error::engine::{Code, EngineError};
use crate::wire::{ListSandboxes, SandboxRecord, SandboxStatus};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;

/// A lock that a panic elsewhere does not poison for good (the state stays usable).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `E2009`: a sandbox that is gone, never was, or is another account's (the three are not
/// told apart, so a caller learns nothing of another account's ids).
pub fn not_found(id: &str) -> EngineError {
    EngineError::new(
        Code::SandboxNotFound,
        format!("no sandbox `{id}` (it was killed, it expired, or it is another account's)"),
    )
}

/// How a message names a status.
pub fn status_name(status: SandboxStatus) -> &'static str {
    match status {
        SandboxStatus::Creating => "creating",
        SandboxStatus::Running => "running",
        SandboxStatus::Paused => "paused",
        SandboxStatus::Stopping => "stopping",
        SandboxStatus::Stopped => "stopped",
        SandboxStatus::Error => "in error",
    }
}

/// The life of one sandbox: whether it is gone, the signal its streams stop on, and the
/// timer of its expiry.
pub struct Life {
    id: String,
    gone: AtomicBool,
    /// Becomes `true` at the end: streams of the sandbox (commands, watches) stop.
    pub ended: tokio::sync::watch::Sender<bool>,
    timer: Mutex<Option<JoinHandle<()>>>,
}

impl Life {
    pub fn new(id: &str) -> Life {
        Life {
            id: id.to_owned(),
            gone: AtomicBool::new(false),
            ended: tokio::sync::watch::Sender::new(false),
            timer: Mutex::new(None),
        }
    }

    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }

    /// Everything of the sandbox is gone: every handle answers `E2009`, streams stop.
    pub fn set_gone(&self) {
        self.gone.store(true, Ordering::SeqCst);
        self.ended.send_replace(true);
    }

    /// `E2009` once the sandbox is gone.
    pub fn alive(&self) -> ProviderResult<()> {
        if self.is_gone() {
            return Err(not_found(&self.id));
        }
        Ok(())
    }

    /// Runs `expire` at `at` (at once when that is past), in place of an earlier expiry.
    pub fn arm(&self, at: SystemTime, expire: impl Future<Output = ()> + Send + 'static) {
        let wait = at
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        let timer = tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            expire.await;
        });
        if let Some(old) = lock(&self.timer).replace(timer) {
            old.abort();
        }
    }

    /// Stops the expiry (a kill, the provider's stop). Never from the expiry itself, which
    /// would abort its own end.
    pub fn disarm(&self) {
        if let Some(timer) = lock(&self.timer).take() {
            timer.abort();
        }
    }
}

/// What the table needs of a provider's sandbox.
pub trait Member: Send + Sync + 'static {
    fn life(&self) -> &Life;
    /// Its owner (the fingerprint of the connection that created it), when it was made
    /// (the list's order, finer than the record's seconds) and its record.
    fn listing(&self) -> (String, SystemTime, SandboxRecord);
}

/// A provider's sandboxes by id; a sandbox's end removes its own entry.
pub struct Table<M> {
    members: Mutex<HashMap<String, Arc<M>>>,
}

impl<M> Default for Table<M> {
    fn default() -> Self {
        Table {
            members: Mutex::new(HashMap::new()),
        }
    }
}

impl<M: Member> Table<M> {
    pub fn insert(&self, member: Arc<M>) -> Arc<M> {
        let id = member.listing().2.sandbox_id;
        lock(&self.members).insert(id, member.clone());
        member
    }

    /// How many sandboxes the table holds.
    pub fn len(&self) -> usize {
        lock(&self.members).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn remove(&self, id: &str) {
        lock(&self.members).remove(id);
    }

    /// Every sandbox in the table, taken out of it (an end locks its sandbox, then the
    /// table: nothing is held across).
    pub fn all(&self) -> Vec<Arc<M>> {
        lock(&self.members).values().cloned().collect()
    }

    /// The live sandbox `id` of `owner`; `E2009` for any other.
    pub fn of(&self, id: &str, owner: &str) -> ProviderResult<Arc<M>> {
        let member = lock(&self.members).get(id).cloned();
        member
            .filter(|m| !m.life().is_gone() && m.listing().0 == owner)
            .ok_or_else(|| not_found(id))
    }

    /// A page of `owner`'s live sandboxes: newest first, the id breaking ties so pages are
    /// stable; `E4001` for a `limit` out of bounds.
    pub fn page(&self, owner: &str, query: &ListSandboxes) -> ProviderResult<Vec<SandboxRecord>> {
        let limit = query
            .page_size()
            .map_err(|m| EngineError::new(Code::InvalidArgument, m))?;
        let mut mine: Vec<(SystemTime, SandboxRecord)> = self
            .all()
            .iter()
            .filter(|m| !m.life().is_gone())
            .map(|m| m.listing())
            .filter(|(who, _, _)| who == owner)
            .filter(|(_, _, r)| query.status.is_none_or(|status| r.status == status))
            .map(|(_, created, record)| (created, record))
            .collect();
        mine.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| b.1.sandbox_id.cmp(&a.1.sandbox_id))
        });
        Ok(mine
            .into_iter()
            .skip(query.offset.unwrap_or(0) as usize)
            .take(limit as usize)
            .map(|(_, record)| record)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::SandboxStatus;
    use std::collections::BTreeMap;

    struct Fake {
        life: Life,
        owner: String,
        created: SystemTime,
        record: SandboxRecord,
    }

    impl Member for Fake {
        fn life(&self) -> &Life {
            &self.life
        }
        fn listing(&self) -> (String, SystemTime, SandboxRecord) {
            (self.owner.clone(), self.created, self.record.clone())
        }
    }

    fn fake(id: &str, owner: &str, age_s: u64, status: SandboxStatus) -> Arc<Fake> {
        Arc::new(Fake {
            life: Life::new(id),
            owner: owner.into(),
            created: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 - age_s),
            record: SandboxRecord {
                sandbox_id: id.into(),
                provider: "fake".into(),
                template: "base".into(),
                status,
                created_at: String::new(),
                expires_at: String::new(),
                metadata: BTreeMap::new(),
                envs_keys: Vec::new(),
                cpu: None,
                memory: None,
                disk: None,
                secure: true,
                limits_enforced: BTreeMap::new(),
                isolation: None,
                allow_internet_access: None,
                max_processes: None,
            },
        })
    }

    fn ids(records: Vec<SandboxRecord>) -> Vec<String> {
        records.into_iter().map(|r| r.sandbox_id).collect()
    }

    #[test]
    fn pages_are_the_owners_live_sandboxes_newest_first() {
        let table = Table::default();
        table.insert(fake("old", "a", 30, SandboxStatus::Running));
        table.insert(fake("new", "a", 10, SandboxStatus::Paused));
        table.insert(fake("mid", "a", 20, SandboxStatus::Running));
        table.insert(fake("theirs", "b", 5, SandboxStatus::Running));
        table
            .insert(fake("gone", "a", 1, SandboxStatus::Running))
            .life
            .set_gone();
        let all = ListSandboxes::default();
        assert_eq!(ids(table.page("a", &all).unwrap()), ["new", "mid", "old"]);
        let running = ListSandboxes {
            status: Some(SandboxStatus::Running),
            ..all.clone()
        };
        assert_eq!(ids(table.page("a", &running).unwrap()), ["mid", "old"]);
        let second = ListSandboxes {
            limit: Some(1),
            offset: Some(1),
            ..all.clone()
        };
        assert_eq!(ids(table.page("a", &second).unwrap()), ["mid"]);
        let too_many = ListSandboxes {
            limit: Some(1001),
            ..all
        };
        assert_eq!(
            table.page("a", &too_many).unwrap_err().code,
            Code::InvalidArgument
        );
    }

    #[test]
    fn a_connect_finds_only_the_owners_live_sandbox() {
        let table = Table::default();
        table.insert(fake("s1", "a", 1, SandboxStatus::Running));
        assert!(table.of("s1", "a").is_ok());
        assert_eq!(
            table.of("s1", "b").err().unwrap().code,
            Code::SandboxNotFound
        );
        table.of("s1", "a").unwrap().life.set_gone();
        assert_eq!(
            table.of("s1", "a").err().unwrap().code,
            Code::SandboxNotFound
        );
        table.remove("s1");
        assert!(table.all().is_empty());
    }

    #[tokio::test]
    async fn the_expiry_runs_once_and_a_later_arm_replaces_it() {
        let life = Life::new("s");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let first = tx.clone();
        life.arm(SystemTime::now() + Duration::from_secs(3600), async move {
            let _ = first.send("first");
        });
        life.arm(SystemTime::now(), async move {
            let _ = tx.send("second");
        });
        assert_eq!(rx.recv().await, Some("second"));
        assert_eq!(rx.recv().await, None, "the replaced expiry never runs");
        assert!(life.alive().is_ok());
        life.set_gone();
        assert!(*life.ended.subscribe().borrow());
        assert_eq!(life.alive().unwrap_err().code, Code::SandboxNotFound);
    }
}
