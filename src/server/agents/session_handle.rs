//! One session as every part of the agents group holds it: its owner, its state behind a
//! lock that a panic cannot poison for good, and its replayable event log; and the two ways
//! its turns are cancelled. Kept apart from `Agents` (the registry of sessions) so that the
//! turn worker, the mapper and the routes need the session without needing the registry.

use crate::server::agents::model::{SessionState, TurnStatus};
use crate::services::event_log::EventLog;
use crate::services::ids;
use serde_json::{Value, json};
use std::sync::{Mutex, MutexGuard};

pub struct SessionHandle {
    pub id: String,
    /// Creation order, which timestamps in whole seconds cannot give.
    pub serial: u64,
    pub owner: String,
    pub state: Mutex<SessionState>,
    pub log: EventLog,
}

/// The session's log, for the seats of its followers (`event_log::seats`), whose writer
/// holds the session while any is seated.
impl AsRef<EventLog> for SessionHandle {
    fn as_ref(&self) -> &EventLog {
        &self.log
    }
}

impl SessionHandle {
    pub fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn snapshot(&self) -> Value {
        self.lock().to_json(&self.id)
    }
}

pub fn cancel_queued(handle: &SessionHandle, state: &mut SessionState) {
    let queued: Vec<String> = state.queue.drain(..).collect();
    for id in queued {
        let now = ids::now();
        if let Some(turn) = state.turn_mut(&id) {
            turn.status = TurnStatus::Cancelled;
            turn.completed_at = Some(now);
        }
        if let Some(turn) = state.turn(&id) {
            let json = turn.to_json(&handle.id, &state.agent);
            handle.log.push(
                "agent.session.turn.cancelled",
                json!({"turn_id": id, "turn": json}),
            );
        }
    }
}

/// Cancels every queued turn and asks the running one to stop.
pub fn cancel_all(handle: &SessionHandle) {
    let mut state = handle.lock();
    cancel_queued(handle, &mut state);
    if let Some((_, stop)) = &state.running {
        let _ = stop.send(true);
    }
}
