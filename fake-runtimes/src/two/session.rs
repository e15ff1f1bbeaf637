//! Which conversation a run continues: `--resume`, `--continue`,
//! `--session-id`, `--fork-session`, or a new one.

use super::argv::Args;
use crate::ids::looks_like_uuid;
use crate::store::{Store, Thread};

/// A resume that names no known session; printed as an error result.
pub struct NotFound {
    pub requested: String,
    pub message: String,
}

pub fn resolve(
    args: &Args,
    store: &Store,
    model: &str,
    cwd: &str,
) -> Result<Result<Thread, NotFound>, String> {
    if let Some(requested) = args.value("resume") {
        let Some(found) = store.load(requested)? else {
            let message = if looks_like_uuid(requested) {
                format!("No conversation found with session ID: {requested}")
            } else {
                format!(
                    "Error: --resume requires a valid session ID or session title when used with --print. \
                     Usage: claude -p --resume <session-id|title>. Provided value \"{requested}\" is not a UUID \
                     and does not match any session title."
                )
            };
            return Ok(Err(NotFound {
                requested: requested.to_string(),
                message,
            }));
        };
        if !args.flag("fork-session") {
            return Ok(Ok(found));
        }
        let mut fork = store.create(4, args.value("session-id"), model, cwd)?;
        fork.turns = found.turns;
        fork.usage = found.usage;
        store.save(&fork)?;
        return Ok(Ok(fork));
    }
    if args.flag("resume") {
        return Err(
            "Error: --resume requires a valid session ID or session title when used with --print. \
                    Usage: claude -p --resume <session-id|title>."
                .into(),
        );
    }
    if args.flag("continue")
        && let Some(id) = store.latest()
        && let Some(thread) = store.load(&id)?
    {
        return Ok(Ok(thread));
    }
    if let Some(id) = args.value("session-id")
        && !looks_like_uuid(id)
    {
        return Err("Error: Invalid session ID. Must be a valid UUID.".into());
    }
    Ok(Ok(store.create(4, args.value("session-id"), model, cwd)?))
}
