//! The system group (issue 13): what the machine is, how busy, how full a disk, what
//! listens, and the environment children start from, read and changed.

mod env;
mod machine;

use crate::Case;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(machine::cases());
    all.extend(env::cases());
    all
}

/// A check of one member's shape.
type Check = fn(&serde_json::Value) -> bool;

/// `value` with each listed member checked by `ok` and replaced by `[name]`, so a snapshot
/// keeps the shape of a reading that differs from machine to machine.
pub(crate) fn redact_checked(
    value: &serde_json::Value,
    members: &[(&str, Check)],
) -> anyhow::Result<serde_json::Value> {
    let mut out = value.clone();
    for (name, ok) in members {
        let v = out
            .get(*name)
            .ok_or_else(|| anyhow::anyhow!("`{name}` is missing: {value}"))?;
        anyhow::ensure!(ok(v), "`{name}` has the wrong shape: {v}");
        out[*name] = serde_json::Value::from(format!("[{name}]"));
    }
    Ok(out)
}
