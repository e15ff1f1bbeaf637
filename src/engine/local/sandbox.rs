//! One sandbox's state, shared by every handle a session holds: its folder, its record,
//! its processes (one supervisor registry, terminals, code contexts), its cgroup, its
//! expiry timer. A handle ([`LocalSandbox`]) checks that the sandbox still exists before
//! anything (`E2009` once it is gone) and that it runs before starting anything in it
//! (`E4003` while it is paused or stopping).

use super::super::provider::ProviderResult;
use super::env;
use super::store::{self, Flush, Stored};
use crate::engine::table::{Life, Member};
use crate::error::engine::{Code, EngineError};
use crate::services::cgroup::Cgroup;
use crate::services::code_run::contexts::Contexts;
use crate::services::files::FileService;
use crate::services::namespaces::{Machine, Tools, View};
use crate::services::paths::{PathGuard, PathRules, SymlinkPolicy};
use crate::services::proc_scan::{self, Found, Marks};
use crate::services::pty::Terminals;
use crate::services::supervisor::{Registry, RegistryConfig};
use crate::wire::{SandboxRecord, SandboxStatus};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

/// The provider's sandboxes by id (the end removes its own entry).
pub type Table = crate::engine::table::Table<Core>;

pub use crate::engine::table::{lock, not_found, status_name};

/// The folder the sandbox's processes and files live in, inside its own folder (beside
/// the record).
pub const HOME: &str = "root";
/// The folder behind an isolated sandbox's `/tmp`.
pub const TMP: &str = "tmp";
/// Where an isolated sandbox's generated `/etc` files are written.
pub const ETC: &str = "etc";

/// An isolated sandbox's machine, the tools to enter it, and its paths.
pub struct Isolated {
    pub tools: Arc<Tools>,
    pub machine: Machine,
    pub view: View,
}

pub struct Core {
    pub id: String,
    /// `<state>/sandboxes/<id>`: the record and the home.
    pub dir: PathBuf,
    /// `<dir>/root`, canonical: the processes' working folder and `HOME`, the files' root.
    pub home: PathBuf,
    /// Its machine, when it has one (`isolation: namespaces`): every process runs inside
    /// and every path is the machine's.
    pub isolated: Option<Isolated>,
    pub stored: Mutex<Stored>,
    /// Every process of the sandbox starts with this environment (then its own).
    pub env: Vec<(String, String)>,
    pub files: FileService,
    /// Commands, by pid (owner: the sandbox id).
    pub registry: Registry,
    pub terminals: Terminals,
    pub contexts: Contexts,
    pub cgroup: Option<Cgroup>,
    /// In an isolated sandbox, each running command's `nsenter` (the registry's pid) and
    /// the command's pid inside, which the API speaks ([`pids`](super::pids)).
    pub inner: Mutex<std::collections::HashMap<u32, u32>>,
    /// Serializes pause, resume, timeout changes and the end.
    pub lifecycle: tokio::sync::Mutex<()>,
    /// Held shared while something is started in the sandbox ([`Core::admit`]) and
    /// exclusively while it is paused or ended: nothing starts between a pause's last look
    /// for processes and its `paused`.
    pub gate: tokio::sync::RwLock<()>,
    /// Gone or not, the end's signal to its streams, the expiry timer.
    pub life: Life,
    pub table: Weak<Table>,
}

impl Member for Core {
    fn life(&self) -> &Life {
        &self.life
    }

    fn listing(&self) -> (String, SystemTime, SandboxRecord) {
        let stored = lock(&self.stored);
        let created = SystemTime::UNIX_EPOCH + Duration::from_millis(stored.created_ms);
        (stored.owner.clone(), created, stored.record.clone())
    }
}

impl Core {
    /// The state of a sandbox whose folder is `dir` (its home already made).
    pub fn new(
        dir: PathBuf,
        stored: Stored,
        cgroup: Option<Cgroup>,
        tools: Option<Arc<Tools>>,
        table: Weak<Table>,
    ) -> std::io::Result<Core> {
        let id = stored.record.sandbox_id.clone();
        let base = stored.data.clone().unwrap_or_else(|| dir.clone());
        let home = base.join(HOME).canonicalize()?;
        let isolated = match (tools, stored.machine.clone()) {
            (Some(tools), Some(machine)) => Some(Isolated {
                tools,
                machine,
                view: View::new(home.clone(), base.join(TMP).canonicalize()?),
            }),
            (None, Some(_)) => {
                return Err(std::io::Error::other(
                    "the sandbox has a machine but this engine cannot enter one",
                ));
            }
            _ => None,
        };
        let mut allowed = vec![home.clone()];
        allowed.extend(isolated.as_ref().map(|i| i.view.tmp().to_path_buf()));
        let guard = PathGuard::from_section(&PathRules {
            allow: Some(allowed),
            symlinks: Some(SymlinkPolicy::Within),
            ..PathRules::default()
        })
        .map_err(std::io::Error::other)?;
        // A sandbox's files keep the metadata their writers give them (E2B's envd does).
        let files = FileService::new(guard, &home).keeping_metadata();
        let env = match &isolated {
            Some(_) => env::inside(&id, &stored.envs),
            None => env::base(&home, &id, &stored.envs),
        };
        // An interpreter joins the cgroup before it runs, as every process of the sandbox
        // does (its spec is the confiner's).
        let contexts = Contexts::default();
        Ok(Core {
            life: Life::new(&id),
            id,
            dir,
            home,
            isolated,
            stored: Mutex::new(stored),
            env,
            files,
            registry: Registry::new(RegistryConfig::default()),
            terminals: Terminals::default(),
            contexts,
            cgroup,
            inner: Mutex::default(),
            lifecycle: tokio::sync::Mutex::new(()),
            gate: tokio::sync::RwLock::new(()),
            table,
        })
    }

    pub fn record(&self) -> SandboxRecord {
        lock(&self.stored).record.clone()
    }

    pub fn status(&self) -> SandboxStatus {
        lock(&self.stored).record.status
    }

    /// `E2009` once gone, `E4003` unless it runs: nothing starts in a paused sandbox.
    pub fn running(&self) -> ProviderResult<()> {
        self.life.alive()?;
        match self.status() {
            SandboxStatus::Running => Ok(()),
            status => Err(EngineError::new(
                Code::SandboxNotRunning,
                format!(
                    "sandbox `{}` is {}: nothing runs in it until it is resumed",
                    self.id,
                    status_name(status)
                ),
            )),
        }
    }

    /// [`running`](Self::running), and a pass that keeps a pause or the end waiting while
    /// the caller starts its process (hold it until the process is spawned, no longer).
    pub async fn admit(&self) -> ProviderResult<tokio::sync::RwLockReadGuard<'_, ()>> {
        let pass = self.gate.read().await;
        self.running()?;
        Ok(pass)
    }

    /// Changes the record with `change` and writes it.
    pub fn update(&self, change: impl FnOnce(&mut Stored)) -> ProviderResult<SandboxRecord> {
        self.update_with(change, Flush::Synced)
    }

    fn update_with(
        &self,
        change: impl FnOnce(&mut Stored),
        flush: Flush,
    ) -> ProviderResult<SandboxRecord> {
        let mut stored = lock(&self.stored);
        change(&mut stored);
        store::save_with(&self.dir, &stored, flush).map_err(|e| {
            EngineError::new(
                Code::Internal,
                format!("cannot write the record of `{}`: {e}", self.id),
            )
        })?;
        Ok(stored.record.clone())
    }

    /// Notes a process group a command started, so its members are found even once they
    /// drop the mark. Not where something a process cannot leave finds them already: an
    /// isolated sandbox's pid namespace, a sandbox's cgroup. (Written, a note costs the
    /// command a rename of the record, 1.3 ms measured.)
    pub fn note_group(&self, pgid: u32) {
        self.note(pgid, |s| &mut s.groups);
    }

    /// Notes a session a terminal started (as [`Core::note_group`]).
    pub fn note_session(&self, sid: u32) {
        self.note(sid, |s| &mut s.sessions);
    }

    fn note(&self, id: u32, list: fn(&mut Stored) -> &mut Vec<u32>) {
        if self.isolated.is_some() || self.cgroup.is_some() {
            return;
        }
        let _ = self.update_with(
            |s| {
                let list = list(s);
                if !list.contains(&id) {
                    list.push(id);
                }
            },
            Flush::Cached,
        );
    }

    /// Every process of the sandbox now (zombies included), and the groups and sessions
    /// that still hold one are kept in the record (empty ones are dropped: their ids may
    /// be reused by strangers).
    pub fn scan(&self) -> Vec<Found> {
        let (groups, sessions) = {
            let stored = lock(&self.stored);
            (stored.groups.clone(), stored.sessions.clone())
        };
        let known = self.cgroup.as_ref().map(Cgroup::procs).unwrap_or_default();
        let mark = env::mark_entry(&self.id);
        let find = |pidns| {
            proc_scan::find(&Marks {
                env: &mark,
                groups: &groups,
                sessions: &sessions,
                known: &known,
                pidns,
            })
        };
        // By its namespace only while its machine runs: a dead machine's number may be the
        // next sandbox's already, whose processes this sandbox's end would kill.
        let found = match &self.isolated {
            Some(isolated) => isolated.machine.while_alive(find),
            None => find(None),
        };
        let live = |id: u32, of: fn(&Found) -> u32| found.iter().any(|f| of(f) == id);
        let kept_groups: Vec<u32> = groups
            .iter()
            .copied()
            .filter(|g| live(*g, |f| f.stat.pgid))
            .collect();
        let kept_sessions: Vec<u32> = sessions
            .iter()
            .copied()
            .filter(|s| live(*s, |f| f.stat.sid))
            .collect();
        if kept_groups != groups || kept_sessions != sessions {
            let _ = self.update_with(
                |s| {
                    s.groups.retain(|g| kept_groups.contains(g));
                    s.sessions.retain(|x| kept_sessions.contains(x));
                },
                Flush::Cached,
            );
        }
        found
    }

    /// The live (not dead) processes of the sandbox, its machine's init aside.
    pub fn live(&self) -> Vec<Found> {
        let init = |pid| {
            self.isolated
                .as_ref()
                .is_some_and(|i| i.machine.is_init(pid))
        };
        self.scan()
            .into_iter()
            .filter(|f| !f.stat.is_dead() && !init(f.stat.pid))
            .collect()
    }
}

/// A session's handle on one sandbox.
pub struct LocalSandbox {
    pub core: Arc<Core>,
}
