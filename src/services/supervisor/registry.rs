//! Processes that outlive a request, by pid and owner: started, listed, read, written to,
//! signalled and killed by their owner only (another owner's pid is indistinguishable from
//! a missing one). An exited process stays readable for a while (a bounded number per
//! owner), so its record and output can still be fetched; `shutdown` ends them all.

use super::process::{Chunk, Process, ProcessHandle, Stream};
use super::{Error, Replay, Signal, Spec};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryConfig {
    /// Exited processes kept per owner; the oldest exits go first.
    pub keep_exited: usize,
    /// How long an exited process is kept at most.
    pub keep_exited_for: Duration,
}

impl Default for RegistryConfig {
    fn default() -> RegistryConfig {
        RegistryConfig {
            keep_exited: 64,
            keep_exited_for: Duration::from_secs(15 * 60),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Running,
    Exited,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRecord {
    pub pid: u32,
    /// The starter's label (what kind of process it is).
    pub tag: String,
    /// What the starter asked to run (a shell line, or a program).
    pub cmd: String,
    /// The program's arguments; `None` for a shell line.
    pub args: Option<Vec<String>>,
    pub cwd: Option<PathBuf>,
    pub status: Status,
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    pub started_at: SystemTime,
    pub ended_at: Option<SystemTime>,
}

/// Both streams of a process, replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub stdout: Replay,
    pub stderr: Replay,
}

/// How a process is shown in its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub tag: String,
    pub cmd: String,
    pub args: Option<Vec<String>>,
}

struct Entry {
    owner: String,
    label: Label,
    cwd: Option<PathBuf>,
    process: Process,
}

impl Entry {
    fn record(&self) -> ProcessRecord {
        let exit = self.process.exit();
        ProcessRecord {
            pid: self.process.pid(),
            tag: self.label.tag.clone(),
            cmd: self.label.cmd.clone(),
            args: self.label.args.clone(),
            cwd: self.cwd.clone(),
            status: if exit.is_some() {
                Status::Exited
            } else {
                Status::Running
            },
            exit_code: exit.as_ref().and_then(|e| e.code()),
            signal: exit.as_ref().and_then(|e| e.signal()),
            started_at: self.process.started_at(),
            ended_at: exit.map(|e| e.ended_at),
        }
    }
}

#[derive(Default)]
struct Inner {
    entries: HashMap<u32, Entry>,
    shutting_down: bool,
}

#[derive(Default)]
pub struct Registry {
    config: RegistryConfig,
    inner: Mutex<Inner>,
}

impl Registry {
    pub fn new(config: RegistryConfig) -> Registry {
        Registry {
            config,
            inner: Mutex::default(),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        prune(&mut inner, &self.config);
        inner
    }

    fn handle(&self, owner: &str, pid: u32) -> Result<ProcessHandle, Error> {
        self.inner()
            .entries
            .get(&pid)
            .filter(|e| e.owner == owner)
            .map(|e| e.process.handle())
            .ok_or(Error::NotFound)
    }

    /// Starts `spec` for `owner`, labelled `tag`, shown as its program and arguments.
    pub fn start(&self, owner: &str, spec: &Spec, tag: &str) -> Result<ProcessRecord, Error> {
        let label = Label {
            tag: tag.to_owned(),
            cmd: spec.program.clone(),
            args: Some(spec.args.clone()),
        };
        self.start_labelled(owner, spec, label)
    }

    /// Starts `spec` for `owner`, shown as `label` says (what the caller asked for, which
    /// for a shell line is not the program the spec runs).
    pub fn start_labelled(
        &self,
        owner: &str,
        spec: &Spec,
        label: Label,
    ) -> Result<ProcessRecord, Error> {
        self.admit()?;
        let process = Process::spawn(spec).map_err(Error::Spawn)?;
        self.insert(owner, spec, label, process)
    }

    /// [`start_labelled`](Self::start_labelled), and every piece of output handed to the
    /// receiver as it is read (see [`Process::spawn_followed`]): a streamed command that
    /// stays reachable by pid for stdin and signals.
    pub fn start_followed(
        &self,
        owner: &str,
        spec: &Spec,
        label: Label,
    ) -> Result<(ProcessRecord, tokio::sync::mpsc::Receiver<Chunk>), Error> {
        self.admit()?;
        let (process, chunks) = Process::spawn_followed(spec).map_err(Error::Spawn)?;
        Ok((self.insert(owner, spec, label, process)?, chunks))
    }

    fn admit(&self) -> Result<(), Error> {
        if self.inner().shutting_down {
            return Err(Error::ShuttingDown);
        }
        Ok(())
    }

    fn insert(
        &self,
        owner: &str,
        spec: &Spec,
        label: Label,
        process: Process,
    ) -> Result<ProcessRecord, Error> {
        let entry = Entry {
            owner: owner.to_owned(),
            label,
            cwd: spec.cwd.clone(),
            process,
        };
        let record = entry.record();
        let mut inner = self.inner();
        if inner.shutting_down {
            // Dropping the entry kills the process.
            return Err(Error::ShuttingDown);
        }
        // An exited process whose pid was reused is replaced by the new one.
        inner.entries.insert(record.pid, entry);
        Ok(record)
    }

    /// The owner's processes, oldest first.
    pub fn list(&self, owner: &str) -> Vec<ProcessRecord> {
        let mut records: Vec<ProcessRecord> = self
            .inner()
            .entries
            .values()
            .filter(|e| e.owner == owner)
            .map(Entry::record)
            .collect();
        records.sort_by_key(|r| (r.started_at, r.pid));
        records
    }

    pub fn get(&self, owner: &str, pid: u32) -> Result<ProcessRecord, Error> {
        self.inner()
            .entries
            .get(&pid)
            .filter(|e| e.owner == owner)
            .map(Entry::record)
            .ok_or(Error::NotFound)
    }

    /// A handle for following the process (its output as it arrives, its exit).
    pub fn process(&self, owner: &str, pid: u32) -> Result<ProcessHandle, Error> {
        self.handle(owner, pid)
    }

    /// Sends TERM or KILL to the process's group.
    pub fn signal(&self, owner: &str, pid: u32, signal: Signal) -> Result<(), Error> {
        self.handle(owner, pid)?.signal(signal)
    }

    /// Writes to the process's stdin (started with `Stdin::Stream`), then closes it if
    /// `close`.
    pub async fn stdin(
        &self,
        owner: &str,
        pid: u32,
        bytes: &[u8],
        close: bool,
    ) -> Result<(), Error> {
        self.handle(owner, pid)?.write_stdin(bytes, close).await
    }

    /// TERM to the group, the spec's grace period, then KILL; returns the final record (at
    /// once for an exited process).
    pub async fn kill(&self, owner: &str, pid: u32) -> Result<ProcessRecord, Error> {
        self.handle(owner, pid)?.kill().await;
        self.get(owner, pid)
    }

    /// Everything kept of both streams.
    pub fn output(&self, owner: &str, pid: u32) -> Result<Output, Error> {
        let handle = self.handle(owner, pid)?;
        Ok(Output {
            stdout: handle.output(Stream::Stdout, 0),
            stderr: handle.output(Stream::Stderr, 0),
        })
    }

    /// Starts nothing more and ends every running process (TERM, grace, KILL, all at once);
    /// returns when all have exited.
    pub async fn shutdown(&self) {
        let running: Vec<ProcessHandle> = {
            let mut inner = self.inner();
            inner.shutting_down = true;
            inner
                .entries
                .values()
                .filter(|e| e.process.is_running())
                .map(|e| e.process.handle())
                .collect()
        };
        futures::future::join_all(running.iter().map(ProcessHandle::kill)).await;
    }
}

/// Drops exited processes past their time, then the oldest exits of an owner past the
/// count.
fn prune(inner: &mut Inner, config: &RegistryConfig) {
    let now = SystemTime::now();
    let mut exited: Vec<(String, SystemTime, u32)> = Vec::new();
    inner
        .entries
        .retain(|pid, entry| match entry.process.exit() {
            None => true,
            Some(exit) => {
                let fresh = now
                    .duration_since(exit.ended_at)
                    .map_or(true, |age| age < config.keep_exited_for);
                if fresh {
                    exited.push((entry.owner.clone(), exit.ended_at, *pid));
                }
                fresh
            }
        });
    // Newest exit first: each owner keeps the first `keep_exited` of its own.
    exited.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut count: HashMap<&str, usize> = HashMap::new();
    let mut gone = Vec::new();
    for (owner, _, pid) in &exited {
        let n = count.entry(owner).or_default();
        *n += 1;
        if *n > config.keep_exited {
            gone.push(*pid);
        }
    }
    for pid in gone {
        inner.entries.remove(&pid);
    }
}
