//! Terminals by id and owner: created, listed, read, resized, attached to and killed by
//! their owner only (another owner's id is indistinguishable from a missing one). A
//! terminal whose shell has exited is gone; `shutdown` ends them all.

use super::terminal::{self, TerminalHandle};
use super::{Error, GRACE, Size, Spec};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Between the hang-up and KILL when a terminal is killed.
    pub grace: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config { grace: GRACE }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalRecord {
    pub id: String,
    pub pid: u32,
    pub cols: u16,
    pub rows: u16,
    pub shell: String,
    pub cwd: Option<PathBuf>,
    pub created_at: SystemTime,
    /// Clients attached now.
    pub clients: usize,
}

struct Entry {
    owner: String,
    terminal: TerminalHandle,
}

impl Entry {
    fn record(&self, id: &str) -> TerminalRecord {
        record_of(id, &self.terminal)
    }
}

/// A terminal the registry forgets (its owner never killed it) does not keep running.
impl Drop for Entry {
    fn drop(&mut self) {
        self.terminal.kill_now();
    }
}

fn record_of(id: &str, terminal: &TerminalHandle) -> TerminalRecord {
    let size = terminal.size();
    TerminalRecord {
        id: id.to_owned(),
        pid: terminal.pid(),
        cols: size.cols,
        rows: size.rows,
        shell: terminal.shell().to_owned(),
        cwd: terminal.cwd().map(PathBuf::from),
        created_at: terminal.created_at(),
        clients: terminal.clients(),
    }
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    shutting_down: bool,
}

#[derive(Default)]
pub struct Terminals {
    config: Config,
    inner: Mutex<Inner>,
}

impl Terminals {
    pub fn new(config: Config) -> Terminals {
        Terminals {
            config,
            inner: Mutex::default(),
        }
    }

    /// The entries, without the terminals whose shell has exited.
    fn inner(&self) -> MutexGuard<'_, Inner> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.entries.retain(|_, e| e.terminal.is_running());
        inner
    }

    /// The owner's terminal `id`.
    pub fn terminal(&self, owner: &str, id: &str) -> Result<TerminalHandle, Error> {
        self.inner()
            .entries
            .get(id)
            .filter(|e| e.owner == owner)
            .map(|e| e.terminal.clone())
            .ok_or_else(|| Error::NotFound(id.to_owned()))
    }

    /// Starts `spec`'s shell for `owner`.
    pub fn create(&self, owner: &str, spec: &Spec) -> Result<TerminalRecord, Error> {
        if self.inner().shutting_down {
            return Err(Error::ShuttingDown);
        }
        let entry = Entry {
            owner: owner.to_owned(),
            terminal: terminal::spawn(spec)?,
        };
        let id = crate::services::ids::new("pty");
        let record = entry.record(&id);
        let mut inner = self.inner();
        if inner.shutting_down {
            // Dropping the entry ends the shell.
            return Err(Error::ShuttingDown);
        }
        inner.entries.insert(id, entry);
        Ok(record)
    }

    /// The owner's terminals, oldest first.
    pub fn list(&self, owner: &str) -> Vec<TerminalRecord> {
        let mut records: Vec<TerminalRecord> = self
            .inner()
            .entries
            .iter()
            .filter(|(_, e)| e.owner == owner)
            .map(|(id, e)| e.record(id))
            .collect();
        records.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        records
    }

    pub fn get(&self, owner: &str, id: &str) -> Result<TerminalRecord, Error> {
        Ok(record_of(id, &self.terminal(owner, id)?))
    }

    /// Sets the window size; answers the record with it.
    pub fn resize(&self, owner: &str, id: &str, size: Size) -> Result<TerminalRecord, Error> {
        let terminal = self.terminal(owner, id)?;
        terminal.resize(size)?;
        Ok(record_of(id, &terminal))
    }

    /// Hangs up the terminal's session, the grace period, then KILL; answers the final
    /// record once the shell is reaped and the clients are closed.
    pub async fn kill(&self, owner: &str, id: &str) -> Result<TerminalRecord, Error> {
        let terminal = self.terminal(owner, id)?;
        terminal.stop(self.config.grace).await;
        self.inner().entries.remove(id);
        Ok(record_of(id, &terminal))
    }

    /// Starts nothing more and ends every terminal (all at once); returns when all have
    /// exited.
    pub async fn shutdown(&self) {
        let running: Vec<TerminalHandle> = {
            let mut inner = self.inner();
            inner.shutting_down = true;
            inner.entries.values().map(|e| e.terminal.clone()).collect()
        };
        let grace = self.config.grace;
        futures::future::join_all(running.iter().map(|t| t.stop(grace))).await;
        self.inner().entries.clear();
    }
}
