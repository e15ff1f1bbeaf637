//! A sandbox's life: made (`creating`, then `running`), paused and resumed, given a new
//! lifetime, adopted by the next engine, and ended (`stopping`, then gone) by a kill or
//! at its expiry. The end leaves nothing: every process killed (again and again, until
//! the scan finds none), the cgroup removed, the folder with the record and the files
//! removed, and every handle answers `E2009` from then on.
//!
//! The expiry counts while a sandbox is paused too: a paused sandbox still holds its
//! processes and its folder, and ends at its `expires_at` like a running one.

use super::super::provider::ProviderResult;
use super::processes;
use super::sandbox::{Core, ETC, HOME, TMP, Table, lock, not_found};
use super::store::{self, Stored};
use crate::error::engine::{Code, EngineError};
use crate::services::cgroup::{self, Cgroup, Cgroups, Support};
use crate::services::namespaces::{self, Network, Plan, Tools};
use crate::wire::{SandboxRecord, SandboxStatus};
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

/// Makes the sandbox folder `dir` for `stored` (its home and temp folder, its cgroup, its
/// machine when `tools` are given) and its state; the record is written `creating`, then
/// `running`.
pub async fn make(
    dir: &Path,
    mut stored: Stored,
    cgroups: Option<&Cgroups>,
    limits: cgroup::Limits,
    isolation: Option<(Arc<Tools>, Network)>,
    table: Weak<Table>,
) -> ProviderResult<Arc<Core>> {
    let internal = |what: &str, e: std::io::Error| {
        EngineError::new(Code::Internal, format!("cannot {what}: {e}"))
    };
    std::fs::create_dir(dir).map_err(|e| internal("make the sandbox folder", e))?;
    let mut cgroup = None;
    let made = async {
        stored.record.status = SandboxStatus::Creating;
        // Not synced: it only lets a restarted engine clean up a create it interrupted,
        // and the `running` record below is.
        store::save_with(dir, &stored, store::Flush::Cached)
            .map_err(|e| internal("write the sandbox record", e))?;
        // A root engine's machines keep their folders where bwrap may reach them.
        if let Some((tools, _)) = &isolation
            && tools.ids.root.is_some()
        {
            let data = namespaces::machines_root()
                .map(|root| root.join(&stored.record.sandbox_id))
                .map_err(|e| internal("make the machines' folder", e))?;
            namespaces::machine_folder(&data)
                .map_err(|e| internal("make the sandbox's machine folder", e))?;
            stored.data = Some(data);
        }
        let base = stored.data.clone().unwrap_or_else(|| dir.to_path_buf());
        let home = base.join(HOME);
        std::fs::create_dir(&home).map_err(|e| internal("make the sandbox home", e))?;
        let tmp = match isolation {
            Some(_) => base.join(TMP),
            None => home.join(super::env::TMP),
        };
        std::fs::create_dir(&tmp).map_err(|e| internal("make the sandbox temp folder", e))?;
        if let Some(cgroups) = cgroups {
            cgroup = Some(
                cgroups
                    .create(&stored.record.sandbox_id, &limits)
                    .map_err(|e| internal("make the sandbox's cgroup", e))?,
            );
        }
        stored.cgroup = cgroup.as_ref().map(|c| c.path().to_path_buf());
        if let Some((tools, network)) = &isolation {
            // Born in the cgroup, so what is orphaned to its init stays counted.
            let join_cgroup = cgroup.as_ref().map(Cgroup::join_files).unwrap_or_default();
            let plan = Plan {
                hostname: &stored.record.sandbox_id,
                home: &home,
                tmp: &tmp,
                etc: &base.join(ETC),
                network: *network,
                join_cgroup: &join_cgroup,
            };
            let machine = namespaces::start(tools, &plan)
                .await
                .map_err(|e| internal("make the sandbox's machine", e))?;
            stored.machine = Some(machine);
        }
        stored.record.status = SandboxStatus::Running;
        let tools = isolation.as_ref().map(|(tools, _)| tools.clone());
        let core = Core::new(
            dir.to_path_buf(),
            stored.clone(),
            cgroup.clone(),
            tools,
            table,
        )
        .map_err(|e| internal("open the sandbox", e))?;
        store::save(dir, &stored).map_err(|e| internal("write the sandbox record", e))?;
        Ok(Arc::new(core))
    }
    .await;
    if made.is_err() {
        if let Some(machine) = &stored.machine {
            machine.end();
        }
        if let Some(cgroup) = &cgroup {
            let _ = cgroup.kill();
            let _ = cgroup.remove();
        }
        if let Some(data) = &stored.data {
            let _ = std::fs::remove_dir_all(data);
        }
        let _ = std::fs::remove_dir_all(dir);
    }
    made
}

/// What [`adopt`] found in a folder.
pub enum Adopted {
    /// Alive: its state, its timer to arm.
    Alive(Arc<Core>),
    /// Expired, or left half made or half ended by the previous engine: cleaned up now.
    Ended,
    /// Not a sandbox (no readable record): left alone.
    Skipped(String),
}

/// A sandbox a previous engine left in `dir`. One with a machine keeps it when its init
/// still runs and this engine can enter it (`tools`); otherwise it is ended, and the log
/// says why.
pub fn adopt(
    dir: &Path,
    support: &Support,
    tools: Option<&Arc<Tools>>,
    table: Weak<Table>,
) -> Adopted {
    let stored = match store::load(dir) {
        Ok(stored) => stored,
        Err(why) => return Adopted::Skipped(why),
    };
    let named = dir.file_name().and_then(|n| n.to_str());
    if named != Some(stored.record.sandbox_id.as_str()) {
        return Adopted::Skipped(format!(
            "{}: the record names `{}`",
            dir.display(),
            stored.record.sandbox_id
        ));
    }
    let cgroup = support
        .cgroups()
        .zip(stored.cgroup.as_deref())
        .and_then(|(cgroups, path)| cgroups.open(path));
    let finished = matches!(
        stored.record.status,
        SandboxStatus::Creating | SandboxStatus::Stopping | SandboxStatus::Stopped
    );
    let expired = stored.expires_at() <= SystemTime::now();
    let lost = match (&stored.machine, tools) {
        (Some(machine), _) if !machine.alive() => Some("its machine did not survive"),
        (Some(_), None) => Some("this engine cannot enter its machine (no nsenter)"),
        _ => None,
    };
    if let Some(why) = lost {
        tracing::warn!(sandbox = %stored.record.sandbox_id, why, "a sandbox of the previous engine is ended");
        if let Some(machine) = &stored.machine {
            machine.end();
        }
    }
    let tools = stored.machine.as_ref().and(tools.cloned());
    let mut stored = stored;
    if lost.is_some() {
        stored.machine = None;
    }
    match Core::new(dir.to_path_buf(), stored, cgroup, tools, table) {
        Ok(core) if !finished && !expired && lost.is_none() => Adopted::Alive(Arc::new(core)),
        Ok(core) => {
            end_now(&core);
            Adopted::Ended
        }
        Err(e) => Adopted::Skipped(format!("{}: {e}", dir.display())),
    }
}

/// Ends a sandbox without a runtime's help (at open): KILL until nothing is left, then
/// its cgroup and folder go.
fn end_now(core: &Core) {
    if let Some(isolated) = &core.isolated {
        isolated.machine.end();
    }
    for _ in 0..1000 {
        let live = core.live();
        if live.is_empty() {
            break;
        }
        for found in live {
            crate::services::proc_scan::signal(found.stat.pid, nix::sys::signal::Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    remove(core);
    core.life.set_gone();
}

/// Removes the cgroup and the folder.
fn remove(core: &Core) {
    if let Some(cgroup) = &core.cgroup {
        let _ = cgroup.kill();
        let _ = cgroup.remove();
    }
    // A process killed a moment ago may still be writing, or left a folder it made
    // unreadable: open the folders up and try again.
    let data = lock(&core.stored).data.clone();
    for dir in data.iter().chain([&core.dir]) {
        if !remove_tree(dir) {
            tracing::warn!(sandbox = %core.id, dir = %dir.display(), "a sandbox folder could not be removed");
        }
    }
}

/// Removes `dir` and everything in it; false when it could not.
fn remove_tree(dir: &Path) -> bool {
    for _ in 0..20 {
        match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                make_removable(dir);
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => return true,
        }
    }
    false
}

/// Gives the owner every right on every folder under `dir` (links are not followed), so
/// that a folder a process made unreadable or unwritable can be removed.
fn make_removable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&folder) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let mode = meta.permissions().mode();
        if mode & 0o700 != 0o700 {
            let _ =
                std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(mode | 0o700));
        }
        if let Ok(entries) = std::fs::read_dir(&folder) {
            folders.extend(entries.flatten().map(|e| e.path()));
        }
    }
}

/// Arms (or re-arms) the expiry of `core` at its record's `expires_at`.
pub fn arm(core: &Arc<Core>) {
    let at = lock(&core.stored).expires_at();
    let weak = Arc::downgrade(core);
    core.life.arm(at, async move {
        if let Some(core) = weak.upgrade() {
            tracing::info!(sandbox = %core.id, "the sandbox expired");
            let _ = end(&core, false).await;
        }
    });
}

/// How often an isolated sandbox's machine is looked at where its init's exit cannot be
/// waited for ([`watch_machine`]).
const MACHINE_WATCH: Duration = Duration::from_secs(1);

/// Ends an isolated sandbox whose machine ended underneath it (its init killed from
/// outside, or by the kernel): its processes died with the machine, and a command entering
/// by the dead init's pid would one day enter whatever process was given that pid. From
/// then on every call answers `E2009`, as after a kill. The init's exit is waited for on a
/// pidfd (free while the machine runs; an adopted machine too, which no process of this
/// engine waits for); where the kernel gives none, it is looked at every [`MACHINE_WATCH`].
pub fn watch_machine(core: &Arc<Core>) {
    let Some(isolated) = &core.isolated else {
        return;
    };
    let machine = isolated.machine.clone();
    let mut ended = core.life.ended.subscribe();
    let weak = Arc::downgrade(core);
    tokio::spawn(async move {
        // `new` is deprecated because some `T` could answer another descriptor later; an
        // `OwnedFd` keeps its one for its life, and `register` would need `unsafe`.
        #[allow(deprecated)]
        let exit = machine
            .exit_fd()
            .and_then(|fd| tokio::io::unix::AsyncFd::new(fd).ok());
        let machine_ended = async {
            match &exit {
                // Readable once the init has exited.
                Some(exit) => drop(exit.readable().await),
                None => {
                    while machine.alive() {
                        tokio::time::sleep(MACHINE_WATCH).await;
                    }
                }
            }
        };
        tokio::select! {
            () = machine_ended => {}
            _ = ended.changed() => return,
        }
        let Some(core) = weak.upgrade() else { return };
        if core.life.is_gone() || machine.alive() {
            return;
        }
        tracing::warn!(sandbox = %core.id, "the sandbox's machine ended: the sandbox is ended");
        let _ = end(&core, true).await;
    });
}

/// Ends the sandbox (a kill, or its expiry); answers its last record, `stopped`.
pub async fn end(core: &Arc<Core>, from_kill: bool) -> ProviderResult<SandboxRecord> {
    let _turn = core.lifecycle.lock().await;
    core.life.alive()?;
    let _gate = core.gate.write().await;
    let mut last = core.update(|s| s.record.status = SandboxStatus::Stopping)?;
    // The registry and the terminals start nothing more; everything dies by KILL below
    // (their TERM and grace would only slow the end).
    let registry = core.registry.shutdown();
    let terminals = core.terminals.shutdown();
    core.contexts.close_owner(&core.id);
    let killed = async {
        let all_gone = processes::kill_all(core).await;
        if !all_gone {
            tracing::warn!(sandbox = %core.id, "processes of the sandbox survived KILL");
        }
    };
    tokio::join!(registry, terminals, killed);
    let removed = core.clone();
    let _ = tokio::task::spawn_blocking(move || remove(&removed)).await;
    core.life.set_gone();
    if let Some(table) = core.table.upgrade() {
        table.remove(&core.id);
    }
    // The expiry ends the sandbox from its own timer, which must not abort itself.
    if from_kill {
        core.life.disarm();
    }
    last.status = SandboxStatus::Stopped;
    Ok(last)
}

pub async fn pause(core: &Core) -> ProviderResult<SandboxRecord> {
    let _turn = core.lifecycle.lock().await;
    core.life.alive()?;
    match core.status() {
        SandboxStatus::Paused => return Ok(core.record()),
        SandboxStatus::Running => {}
        _ => return Err(core.running().err().unwrap_or_else(|| not_found(&core.id))),
    }
    let _gate = core.gate.write().await;
    if let Err(e) = processes::stop_all(core).await {
        // Never half paused: what stopped goes on.
        processes::continue_all(core).await;
        return Err(e);
    }
    core.update(|s| s.record.status = SandboxStatus::Paused)
}

pub async fn resume(core: &Core) -> ProviderResult<SandboxRecord> {
    let _turn = core.lifecycle.lock().await;
    core.life.alive()?;
    match core.status() {
        SandboxStatus::Running => return Ok(core.record()),
        SandboxStatus::Paused => {}
        _ => return Err(core.running().err().unwrap_or_else(|| not_found(&core.id))),
    }
    processes::continue_all(core).await;
    core.update(|s| s.record.status = SandboxStatus::Running)
}

/// The sandbox ends `seconds` from now (1..=86400).
pub async fn set_timeout(core: &Arc<Core>, seconds: u64) -> ProviderResult<SandboxRecord> {
    let seconds = crate::engine::provider::check_timeout(seconds)?;
    let _turn = core.lifecycle.lock().await;
    core.life.alive()?;
    let record = core.update(|s| s.set_expiry(SystemTime::now() + Duration::from_secs(seconds)))?;
    arm(core);
    Ok(record)
}
