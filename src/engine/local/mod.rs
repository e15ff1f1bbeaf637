//! The builtin provider `local`: sandboxes on this machine, each a folder under
//! `<state>/sandboxes/<id>/` (its record `sandbox.json`, its home `root/`) and the
//! processes started in it. A sandbox behaves as a machine: what a command leaves running
//! in the background goes on until it ends, the sandbox ends, or a signal ends it, and is
//! listed, paused and resumed with the rest.
//!
//! - [`store`]: the record on disk; [`sandbox`]: one sandbox's state and the handle a
//!   session holds ([`handle`] implements the provider's `Sandbox` on it);
//! - [`lifecycle`]: create, adopt, pause, resume, lifetime, the end;
//! - [`processes`], [`commands`], [`files`], [`code`], [`terminal`]: what runs and what
//!   is kept in a sandbox; [`env`]: the environment its processes start from.
//!
//! Limits: `timeout` is always enforced. `cpu` and `memory` are enforced by a cgroup v2
//! subtree where the machine gives one (`services::cgroup`); elsewhere the record says
//! they are not (`limits_enforced`), and `disk` never is. Sandboxes outlive the engine: the
//! next engine adopts them from their records (an expired one is ended then).

mod code;
mod commands;
mod env;
mod files;
mod handle;
mod inside;
mod lifecycle;
mod owners;
mod pids;
mod processes;
mod sandbox;
mod store;
mod terminal;

#[cfg(test)]
mod tests;

use super::provider::{Provider, ProviderResult, Sandbox, check_create};
use crate::error::engine::{Code, EngineError};
use crate::services::cgroup::{self, Support};
use crate::services::namespaces::{self, Network};
use crate::wire::{
    Connection, CreateSandbox, Feature, Isolation, ListSandboxes, MAX_PROCESSES_DEFAULT,
    ProviderKind, ProviderRecord, SandboxRecord, SandboxStatus,
};
use async_trait::async_trait;
use lifecycle::Adopted;
use sandbox::{LocalSandbox, Table};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use store::Stored;

/// The one template.
const TEMPLATE: &str = "base";

pub struct LocalProvider {
    /// `<state>/sandboxes`.
    root: PathBuf,
    sandboxes: Arc<Table>,
    cgroups: Support,
}

/// `isolation: namespaces` refused on this machine: why, and how to do without.
fn isolation_unavailable(why: &str) -> EngineError {
    EngineError::new(
        Code::IsolationUnavailable,
        format!(
            "this machine cannot give a sandbox namespaces of its own: {why}. Sandboxes run \
             untrusted code only isolated; for trusted code create with `isolation: \"none\"`"
        ),
    )
}

impl LocalProvider {
    /// The provider over `<state_dir>/sandboxes`; sandboxes a previous engine left are
    /// adopted (their lifetimes go on; an expired one is ended now). Call within a tokio
    /// runtime: the adopted sandboxes' expiries are armed on it.
    pub fn open(state_dir: &Path) -> std::io::Result<Arc<LocalProvider>> {
        let root = state_dir.join("sandboxes");
        std::fs::create_dir_all(&root)?;
        tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        let cgroups = cgroup::detect();
        if let Support::Unavailable(why) = &cgroups {
            tracing::info!(%why, "local sandboxes get no cgroup: cpu and memory are not enforced");
        }
        let sandboxes: Arc<Table> = Arc::default();
        // Enough to enter the machines a previous engine made (making new ones is tried
        // at the first create).
        let tools = namespaces::find_tools().ok().map(Arc::new);
        for entry in std::fs::read_dir(&root)? {
            let dir = entry?.path();
            if !dir.is_dir() {
                continue;
            }
            match lifecycle::adopt(&dir, &cgroups, tools.as_ref(), Arc::downgrade(&sandboxes)) {
                Adopted::Alive(core) => {
                    lifecycle::arm(&core);
                    lifecycle::watch_machine(&core);
                    sandboxes.insert(core);
                }
                Adopted::Ended => {}
                Adopted::Skipped(why) => tracing::warn!(%why, "not a sandbox: left alone"),
            }
        }
        Ok(Arc::new(LocalProvider {
            root,
            sandboxes,
            cgroups,
        }))
    }

    /// Stops the expiry timers; the sandboxes (their processes, folders and records) stay
    /// for the next engine, which adopts them.
    pub async fn shutdown(&self) {
        for core in self.sandboxes.all() {
            core.life.disarm();
        }
    }

    /// How many sandboxes are alive.
    pub fn sandbox_count(&self) -> usize {
        self.sandboxes.len()
    }

    /// Which limits a sandbox asking for these is given for real.
    fn enforced(&self, body: &CreateSandbox, isolated: bool) -> BTreeMap<String, bool> {
        let (cpu, memory, pids) = self
            .cgroups
            .cgroups()
            .map_or((false, false, false), |c| (c.cpu(), c.memory(), c.pids()));
        let mut limits = BTreeMap::from([
            ("timeout".to_owned(), true),
            ("filesystem".to_owned(), isolated),
            ("processes".to_owned(), isolated),
            // Its own network only when it has no internet access; else the machine's.
            (
                "network".to_owned(),
                isolated && body.allow_internet_access == Some(false),
            ),
            ("pids".to_owned(), pids),
        ]);
        if body.cpu.is_some() {
            limits.insert("cpu".into(), cpu);
        }
        if body.memory.is_some() {
            limits.insert("memory".into(), memory);
        }
        if body.disk.is_some() {
            limits.insert("disk".into(), false);
        }
        limits
    }
}

#[async_trait]
impl Provider for LocalProvider {
    fn record(&self) -> ProviderRecord {
        ProviderRecord {
            id: "local".into(),
            name: "Local sandboxes".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: ProviderKind::Builtin,
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
        let (template, timeout) = check_create("local", TEMPLATE, &body)?;
        let isolation = body.isolation.unwrap_or_default();
        let internet = body.allow_internet_access.unwrap_or(true);
        let tools = match isolation {
            Isolation::None if !internet => {
                return Err(EngineError::new(
                    Code::InvalidArgument,
                    "`allow_internet_access: false` needs `isolation: \"namespaces\"`: a \
                     sandbox without isolation shares the machine's network",
                ));
            }
            Isolation::None => None,
            Isolation::Namespaces => match namespaces::support().await {
                namespaces::Support::Available(tools) => Some(tools.clone()),
                namespaces::Support::Unavailable(why) => return Err(isolation_unavailable(why)),
            },
        };
        // Zero was refused by `check_create`.
        let max_processes = body.max_processes.unwrap_or(MAX_PROCESSES_DEFAULT);
        let id = crate::services::ids::new("sb");
        let now = SystemTime::now();
        let envs = body.envs.clone().unwrap_or_default();
        let mut stored = Stored {
            record: SandboxRecord {
                sandbox_id: id.clone(),
                provider: "local".into(),
                template,
                status: SandboxStatus::Creating,
                created_at: crate::services::files::rfc3339(now),
                expires_at: String::new(),
                metadata: body.metadata.clone().unwrap_or_default(),
                envs_keys: envs.keys().cloned().collect(),
                cpu: body.cpu,
                memory: body.memory,
                disk: body.disk,
                // `secure` is E2B's (its processes' API needs the access token), not
                // isolation, which `isolation` says.
                secure: body.secure.unwrap_or(true),
                limits_enforced: self.enforced(&body, tools.is_some()),
                isolation: Some(isolation),
                allow_internet_access: Some(internet),
                max_processes: Some(max_processes),
            },
            owner: conn.fingerprint(),
            envs,
            created_ms: store::ms(now),
            expires_ms: 0,
            groups: Vec::new(),
            sessions: Vec::new(),
            cgroup: None,
            machine: None,
            data: None,
        };
        stored.set_expiry(now + Duration::from_secs(timeout));
        // The machine's own processes are in the cgroup from its start, beside the sandbox's.
        let own = if tools.is_some() {
            namespaces::OWN_PROCESSES
        } else {
            0
        };
        let limits = cgroup::Limits {
            cpus: body.cpu,
            memory_mb: body.memory,
            pids: Some(max_processes.saturating_add(own)),
        };
        let dir = self.root.join(&id);
        let network = if internet {
            Network::Host
        } else {
            Network::Loopback
        };
        // A few small writes and a bwrap: not worth a blocking thread.
        let core = lifecycle::make(
            &dir,
            stored,
            self.cgroups.cgroups(),
            limits,
            tools.map(|tools| (tools, network)),
            Arc::downgrade(&self.sandboxes),
        )
        .await?;
        lifecycle::arm(&core);
        lifecycle::watch_machine(&core);
        Ok(self.sandboxes.insert(core).record())
    }

    async fn list(
        &self,
        conn: &Connection,
        query: &ListSandboxes,
    ) -> ProviderResult<Vec<SandboxRecord>> {
        self.sandboxes.page(&conn.fingerprint(), query)
    }

    async fn connect(&self, conn: &Connection, id: &str) -> ProviderResult<Arc<dyn Sandbox>> {
        let core = self.sandboxes.of(id, &conn.fingerprint())?;
        Ok(Arc::new(LocalSandbox { core }))
    }
}
