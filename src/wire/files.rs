//! Files of a sandbox: the queries and bodies of the file routes, and entry info, the shape
//! every file route answers about a file, directory or link (the server's file_ops shape).

use crate::services::files::{Entry, EntryKind, Metadata};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The events of `files/watch` besides `error` (their data: [`watch_events`]).
pub const WATCH_EVENTS: [&str; 5] = ["create", "modify", "delete", "rename", "overflow"];

/// `files/list`: how deep a listing goes (1-10, default 1).
pub const LIST_DEPTH_MAX: u32 = 10;

/// `GET .../files/content|list|info|exists|watch` and `DELETE .../files`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathQuery {
    #[serde(default)]
    pub path: Option<String>,
    /// list: 1-10, default 1.
    #[schemars(range(min = 1, max = 10), extend("default" = 1))]
    #[serde(default)]
    pub depth: Option<u32>,
    /// watch: follow sub-directories; remove: a non-empty directory too.
    #[serde(default)]
    pub recursive: Option<bool>,
}

/// `PUT .../files/content?path=[&overwrite=][&parents=][&metadata=]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteQuery {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub overwrite: Option<bool>,
    #[serde(default)]
    pub parents: Option<bool>,
    /// Metadata to keep with the file: a JSON object of string values (in the query, that
    /// object's JSON text, e.g. `{"owner":"me"}` URL-encoded). Keys of 1 to 246 bytes,
    /// keys and values printable ASCII, at most 4096 bytes in all (each key counted with
    /// the 9 bytes of `user.e2b.`). The file's metadata is exactly this: a write without
    /// it leaves the file none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub metadata: Option<Metadata>,
}

impl Serialize for Metadata {
    /// The object of its pairs (a plugin's `files_write` params, a test's body); the query
    /// of `PUT files/content` carries its JSON text ([`WriteQuery::metadata`]).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.pairs().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Metadata {
    /// An object of string values, or a string holding one as JSON (a query's value is
    /// always a string); checked against the rules of [`Metadata::new`].
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Metadata, D::Error> {
        let pairs: BTreeMap<String, String> = super::json_text::value_or_text(d).map_err(|e| {
            serde::de::Error::custom(format!(
                "`metadata` must be a JSON object of string values: {e}"
            ))
        })?;
        Metadata::new(pairs).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MkdirBody {
    pub path: String,
    #[serde(default)]
    pub parents: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveBody {
    pub from: String,
    pub to: String,
    #[serde(default)]
    pub overwrite: Option<bool>,
}

/// Entry info: what every file route answers about an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntryInfo {
    pub name: String,
    /// Absolute, inside the sandbox.
    pub path: String,
    /// `file`, `dir`, `symlink` or `other`.
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["file", "dir", "symlink", "other"]))]
    pub type_: String,
    pub size: u64,
    /// Permission bits in octal, e.g. `"0644"`.
    pub mode: String,
    /// RFC 3339 UTC.
    #[schemars(extend("format" = "date-time"))]
    pub modified_at: String,
    /// Only for a symbolic link: where it points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<String>,
    /// The metadata the file was written with (`PUT .../files/content?metadata=`); absent
    /// when it has none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// The owner's name as the sandbox sees it (`user` or `root` in an isolated sandbox,
    /// `nobody` for an id it does not map; the host's name without isolation, or the uid
    /// as a number when it has none); absent where files have no owner (`memory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The group's name, as `owner` is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl EntryInfo {
    pub fn is_dir(&self) -> bool {
        self.type_ == "dir"
    }
}

/// `GET .../files/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntryList {
    pub entries: Vec<EntryInfo>,
}

/// `GET .../files/exists`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Exists {
    pub exists: bool,
}

/// `DELETE .../files`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Removed {
    pub path: String,
    #[schemars(extend("const" = true))]
    pub deleted: bool,
}

/// The data of a `create`, `modify` or `rename` event of `files/watch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub path: String,
    /// `rename` only: the old name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["file", "dir", "symlink", "other"]))]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<EntryInfo>,
}

/// The data of a `delete` event of `files/watch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deleted {
    pub path: String,
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["file", "dir", "symlink", "other"]))]
    pub type_: String,
}

/// The data of an `overflow` event: events were lost, list the path again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Overflow {
    pub path: String,
    pub message: String,
}

/// One event of `files/watch` with its data: the only place an event's name meets the
/// shape of its data (every stream that relays a watch writes these, `wire::watch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchChange {
    Create(Change),
    Modify(Change),
    Delete(Deleted),
    Rename(Change),
    Overflow(Overflow),
}

impl WatchChange {
    /// The event's name, from [`WATCH_EVENTS`].
    pub fn name(&self) -> &'static str {
        WATCH_EVENTS[match self {
            WatchChange::Create(_) => 0,
            WatchChange::Modify(_) => 1,
            WatchChange::Delete(_) => 2,
            WatchChange::Rename(_) => 3,
            WatchChange::Overflow(_) => 4,
        }]
    }

    /// The event's data as the stream writes it.
    pub fn data(&self) -> serde_json::Value {
        let data = match self {
            WatchChange::Create(c) | WatchChange::Modify(c) | WatchChange::Rename(c) => {
                serde_json::to_value(c)
            }
            WatchChange::Delete(d) => serde_json::to_value(d),
            WatchChange::Overflow(o) => serde_json::to_value(o),
        };
        // Strings, numbers and an optional nested struct: serializing cannot fail.
        data.unwrap_or_default()
    }
}

impl Change {
    /// `path` changed (`from` its old name for a rename); `entry` is its entry info as it
    /// is now, when it is there and may be described.
    pub fn new(path: &Path, from: Option<&Path>, kind: EntryKind, entry: Option<&Entry>) -> Self {
        Change {
            path: path.to_string_lossy().into_owned(),
            from: from.map(|f| f.to_string_lossy().into_owned()),
            type_: kind.as_str().to_owned(),
            entry: entry.map(EntryInfo::from),
        }
    }
}

impl Deleted {
    pub fn new(path: &Path, kind: EntryKind) -> Self {
        Deleted {
            path: path.to_string_lossy().into_owned(),
            type_: kind.as_str().to_owned(),
        }
    }
}

impl Overflow {
    /// Events of the watch on `path` were lost; `message` says why.
    pub fn new(path: &Path, message: &str) -> Self {
        Overflow {
            path: path.to_string_lossy().into_owned(),
            message: message.to_owned(),
        }
    }
}

/// The events of `files/watch` with what each means and the schema of its data, for the
/// OpenAPI document (`error` last: the engine error body).
pub fn watch_events(
    g: &mut schemars::SchemaGenerator,
) -> Vec<(&'static str, &'static str, serde_json::Value)> {
    let schema = |s: schemars::Schema| serde_json::to_value(s).unwrap_or_default();
    let change = schema(g.subschema_for::<Change>());
    let [create, modify, delete, rename, overflow] = WATCH_EVENTS;
    vec![
        (create, "A path was created.", change.clone()),
        (modify, "A file was written.", change.clone()),
        (
            delete,
            "A path was removed.",
            schema(g.subschema_for::<Deleted>()),
        ),
        (
            rename,
            "A path was renamed: `path` the new name, `from` the old.",
            change,
        ),
        (
            overflow,
            "Events were lost; list the path again.",
            schema(g.subschema_for::<Overflow>()),
        ),
    ]
}

impl From<&Entry> for EntryInfo {
    /// An entry of the file service as the wire shows it (the same form the entry's own
    /// `Serialize` writes for the server's file routes).
    fn from(entry: &Entry) -> Self {
        EntryInfo {
            name: entry.name.clone(),
            path: entry.path.to_string_lossy().into_owned(),
            type_: entry.kind.as_str().to_owned(),
            size: entry.size,
            mode: entry.mode_octal(),
            modified_at: entry.modified_rfc3339(),
            symlink_target: entry
                .symlink_target
                .as_ref()
                .map(|t| t.to_string_lossy().into_owned()),
            metadata: entry.metadata.clone(),
            // Who the ids are depends on where the entry is shown: the provider names them.
            owner: None,
            group: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(raw: &str) -> Result<WriteQuery, String> {
        serde_urlencoded::from_str(raw).map_err(|e| e.to_string())
    }

    #[test]
    fn a_write_s_metadata_is_json_text_in_the_query_and_an_object_elsewhere() {
        let asked = query("path=a.txt&metadata=%7B%22owner%22%3A%22me%22%7D").unwrap();
        let pairs = BTreeMap::from([("owner".to_owned(), "me".to_owned())]);
        assert_eq!(asked.metadata.as_ref().map(Metadata::pairs), Some(&pairs));
        // A plugin's params carry the object, and read back the same.
        let params = serde_json::to_value(&asked).unwrap();
        assert_eq!(params["metadata"], serde_json::json!({"owner": "me"}));
        assert_eq!(serde_json::from_value::<WriteQuery>(params).unwrap(), asked);
        assert!(query("path=a.txt").unwrap().metadata.is_none());
        assert!(
            query("path=a&metadata=%5B1%5D")
                .unwrap_err()
                .contains("JSON object")
        );
        assert!(
            query("path=a&metadata=%7B%22%22%3A%22v%22%7D")
                .unwrap_err()
                .contains("empty")
        );
    }

    #[test]
    fn an_entry_s_metadata_and_owners_are_left_out_when_there_are_none() {
        let mut info = EntryInfo {
            name: "a".into(),
            path: "/a".into(),
            type_: "file".into(),
            size: 0,
            mode: "0644".into(),
            modified_at: "2024-01-01T00:00:00Z".into(),
            symlink_target: None,
            metadata: BTreeMap::new(),
            owner: None,
            group: None,
        };
        let json = serde_json::to_value(&info).unwrap();
        assert!(json.get("metadata").is_none() && json.get("owner").is_none());
        info.owner = Some("user".into());
        info.group = Some("user".into());
        info.metadata.insert("k".into(), "v".into());
        let json = serde_json::to_value(&info).unwrap();
        assert_eq!(json["owner"], "user");
        assert_eq!(json["metadata"], serde_json::json!({"k": "v"}));
    }
}
