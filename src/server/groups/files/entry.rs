//! Entry info on the wire: `{name, path, type, size, mode, modified_at, symlink_target}`
//! (`symlink_target` only for links). Every file route that answers entries and the watch
//! stream's `entry` render them here; a long list is serialized straight from the
//! service's `Entry`, whose `Serialize` writes the same form (the test below holds them
//! together).

use crate::server::openapi::op::component;
use crate::services::files::Entry;
use serde_json::{Value, json};

/// One entry as the wire shows it.
pub(crate) fn entry_json(entry: &Entry) -> Value {
    let mut out = json!({
        "name": entry.name,
        "path": entry.path.to_string_lossy(),
        "type": entry.kind.as_str(),
        "size": entry.size,
        "mode": entry.mode_octal(),
        "modified_at": entry.modified_rfc3339(),
    });
    if let Some(target) = &entry.symlink_target {
        out["symlink_target"] = json!(target.to_string_lossy());
    }
    out
}

/// A list of entries as the wire shows it.
pub(crate) fn entries_json(entries: &[Entry]) -> Value {
    Value::Array(entries.iter().map(entry_json).collect())
}

// The shape `entry_json` writes (and `Entry`'s `Serialize`), for the OpenAPI document.
component!(pub(crate) FileEntry, {
    "type": "object",
    "required": ["name", "path", "type", "size", "mode", "modified_at"],
    "properties": {
        "name": {"type": "string"},
        "path": {"type": "string", "description": "Absolute."},
        "type": {"type": "string", "enum": ["file", "dir", "symlink", "other"]},
        "size": {"type": "integer", "minimum": 0},
        "mode": {"type": "string", "pattern": "^[0-7]{4,}$", "description": "Permission bits in octal."},
        "modified_at": {"type": "string", "format": "date-time"},
        "symlink_target": {"type": "string", "description": "Only for a symbolic link: where it points."},
    },
    "additionalProperties": false,
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::files::EntryKind;
    use std::path::PathBuf;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn an_entry_has_the_wire_names_and_a_target_only_for_links() {
        let mut entry = Entry {
            name: "a.txt".into(),
            path: PathBuf::from("/w/a.txt"),
            kind: EntryKind::File,
            size: 3,
            mode: 0o644,
            modified_at: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            symlink_target: None,
        };
        assert_eq!(
            entry_json(&entry),
            json!({"name": "a.txt", "path": "/w/a.txt", "type": "file", "size": 3,
                   "mode": "0644", "modified_at": "2023-11-14T22:13:20Z"})
        );
        entry.kind = EntryKind::Symlink;
        entry.symlink_target = Some(PathBuf::from("../b"));
        assert_eq!(entry_json(&entry)["symlink_target"], "../b");
        assert_eq!(entry_json(&entry), serde_json::to_value(&entry).unwrap());
    }
}
