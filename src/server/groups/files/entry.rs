//! Entry info on the wire: `{name, path, type, size, mode, modified_at, symlink_target}`
//! (`symlink_target` only for links; the server keeps no file metadata, so its entries
//! never carry the engine's `metadata`). Every file route that answers entries writes it as
//! the engine does, through `wire::EntryInfo`; this file holds
//! the server document's schema of it, which says more than the engine's (the mode's
//! pattern, no other keys) and keeps its name `FileEntry`.

use crate::server::openapi::op::component;

// The shape `wire::EntryInfo` writes, for the server's OpenAPI document.
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
    use crate::services::files::{Entry, EntryKind};
    use crate::wire::EntryInfo;
    use serde_json::json;
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
            metadata: Default::default(),
            uid: Some(1000),
            gid: Some(1000),
        };
        let shown = |entry: &Entry| serde_json::to_string(&EntryInfo::from(entry)).unwrap();
        assert_eq!(
            shown(&entry),
            json!({"name": "a.txt", "path": "/w/a.txt", "type": "file", "size": 3,
                   "mode": "0644", "modified_at": "2023-11-14T22:13:20Z"})
            .to_string()
        );
        entry.metadata.insert("owner".into(), "me".into());
        assert!(shown(&entry).ends_with(r#""metadata":{"owner":"me"}}"#));
        entry.metadata.clear();
        entry.kind = EntryKind::Symlink;
        entry.symlink_target = Some(PathBuf::from("../b"));
        assert!(shown(&entry).ends_with(r#""symlink_target":"../b"}"#));
    }
}
