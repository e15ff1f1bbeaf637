//! A memory sandbox's life: paused and resumed, given a new lifetime, and ended by a kill
//! or at its expiry (a tokio timer). The end lets every file go, stops the watches (each
//! ends with `E2009`), and every handle answers `E2009` from then on. As with `local`, the
//! expiry counts while a sandbox is paused too.

use super::super::provider::ProviderResult;
use super::sandbox::{Core, lock};
use crate::error::engine::{Code, EngineError};
use crate::wire::{SandboxRecord, SandboxStatus};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Arms (or re-arms) the expiry of `core` at its `expires`.
pub fn arm(core: &Arc<Core>) {
    let at = lock(&core.state).expires;
    let weak = Arc::downgrade(core);
    core.life.arm(at, async move {
        if let Some(core) = weak.upgrade() {
            tracing::info!(sandbox = %core.id, "the memory sandbox expired");
            let _ = end(&core, false);
        }
    });
}

/// Ends the sandbox (a kill, or its expiry); answers its last record, `stopped`.
pub fn end(core: &Core, from_kill: bool) -> ProviderResult<SandboxRecord> {
    let last = {
        let mut state = lock(&core.state);
        core.life.alive()?;
        core.life.set_gone();
        state.record.status = SandboxStatus::Stopped;
        state.record.clone()
    };
    lock(&core.tree).clear();
    if let Some(table) = core.table.upgrade() {
        table.remove(&core.id);
    }
    // The expiry ends the sandbox from its own timer, which must not abort itself.
    if from_kill {
        core.life.disarm();
    }
    Ok(last)
}

/// `E4003` naming the status, for a sandbox neither running nor paused.
fn not_running(core: &Core, status: SandboxStatus) -> EngineError {
    let status = match status {
        SandboxStatus::Creating => "creating",
        SandboxStatus::Stopping => "stopping",
        SandboxStatus::Stopped => "stopped",
        SandboxStatus::Error => "in error",
        SandboxStatus::Running => "running",
        SandboxStatus::Paused => "paused",
    };
    EngineError::new(
        Code::SandboxNotRunning,
        format!(
            "sandbox `{}` is {status}: nothing runs in it until it is resumed",
            core.id
        ),
    )
}

/// Moves a sandbox from `from` to `to` (already `to`: nothing to do).
fn turn(core: &Core, from: SandboxStatus, to: SandboxStatus) -> ProviderResult<SandboxRecord> {
    let mut state = lock(&core.state);
    core.life.alive()?;
    match state.record.status {
        status if status == to => {}
        status if status == from => state.record.status = to,
        status => return Err(not_running(core, status)),
    }
    Ok(state.record.clone())
}

/// Nothing runs in a memory sandbox, so a pause stops nothing; its files still work, as a
/// paused `local` sandbox's do.
pub fn pause(core: &Core) -> ProviderResult<SandboxRecord> {
    turn(core, SandboxStatus::Running, SandboxStatus::Paused)
}

pub fn resume(core: &Core) -> ProviderResult<SandboxRecord> {
    turn(core, SandboxStatus::Paused, SandboxStatus::Running)
}

/// The sandbox ends `seconds` from now (1..=86400).
pub fn set_timeout(core: &Arc<Core>, seconds: u64) -> ProviderResult<SandboxRecord> {
    let seconds = crate::engine::provider::check_timeout(seconds)?;
    let record = {
        let mut state = lock(&core.state);
        core.life.alive()?;
        state.set_expiry(SystemTime::now() + Duration::from_secs(seconds));
        state.record.clone()
    };
    arm(core);
    Ok(record)
}

/// Answers `E2009` when the sandbox is gone (the handle's first look).
pub fn info(core: &Core) -> ProviderResult<SandboxRecord> {
    let state = lock(&core.state);
    core.life.alive()?;
    Ok(state.record.clone())
}
