//! What a plugin answers where the route's answer carries bytes (as base64) or is read only
//! in part: the shapes `ops` reads them as.

use super::child::failed;
use super::protocol;
use crate::engine::provider::{ProcessInfo, ProviderResult};
use crate::wire::EntryInfo;
use serde::Deserialize;

/// `commands/run`'s result: the output as base64.
#[derive(Deserialize)]
pub(super) struct RunResult {
    pub(super) pid: u32,
    pub(super) stdout_b64: String,
    pub(super) stderr_b64: String,
    pub(super) exit_code: i32,
    pub(super) timed_out: bool,
}

#[derive(Deserialize)]
pub(super) struct CodeResult {
    pub(super) stdout_b64: String,
    pub(super) stderr_b64: String,
    pub(super) exit_code: Option<i32>,
    pub(super) timed_out: bool,
    pub(super) duration_ms: u64,
}

#[derive(Deserialize)]
pub(super) struct Processes {
    pub(super) processes: Vec<ProcessInfo>,
}

#[derive(Deserialize)]
pub(super) struct Size {
    pub(super) size: u64,
}

pub(super) fn decode(plugin: &str, field: &str, b64: &str) -> ProviderResult<Vec<u8>> {
    protocol::bytes(plugin, field, b64)
}

/// The entry types an answer may name (`EntryInfo::type_`).
const ENTRY_TYPES: [&str; 4] = ["file", "dir", "symlink", "other"];

/// A plugin's file entries, checked before they reach a client: each name one path
/// component (not empty, `.` or `..`, no `/` or NUL), its path absolute and ending in that
/// name, its type one of [`ENTRY_TYPES`] (a size below zero is already no `u64`). A plugin
/// that answers `../../etc/passwd` as a name is broken, and a client must never be handed
/// a name that walks out of the directory it listed: `provider_failed` naming the entry.
pub(super) fn entries(
    plugin: &str,
    op: &str,
    entries: Vec<EntryInfo>,
) -> ProviderResult<Vec<EntryInfo>> {
    for (i, e) in entries.iter().enumerate() {
        if let Some(why) = entry_fault(e) {
            let at = format!("entry {i} of its `{op}` answer");
            return Err(failed(plugin, &format!("{at} {why}")));
        }
    }
    Ok(entries)
}

/// A `files_write` answer, which must carry the metadata the write asked for: a plugin that
/// does not know the param (or keeps none) would otherwise drop it without a word.
pub(super) fn kept_metadata(
    plugin: &str,
    asked: &std::collections::BTreeMap<String, String>,
    written: EntryInfo,
) -> ProviderResult<EntryInfo> {
    if &written.metadata != asked {
        return Err(failed(
            plugin,
            &format!(
                "its `files_write` answer has the metadata {:?}, not the {asked:?} the write \
                 asked for: the plugin keeps no file metadata",
                written.metadata
            ),
        ));
    }
    Ok(written)
}

/// One entry, checked as [`entries`] checks each.
pub(super) fn entry(plugin: &str, op: &str, entry: EntryInfo) -> ProviderResult<EntryInfo> {
    if let Some(why) = entry_fault(&entry) {
        return Err(failed(plugin, &format!("its `{op}` answer {why}")));
    }
    Ok(entry)
}

fn entry_fault(e: &EntryInfo) -> Option<String> {
    let name = &e.name;
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Some(format!("has the name {name:?}, which is not one file name"));
    }
    let components = e.path.split('/').skip(1);
    let plain = components.clone().all(|c| c != "." && c != "..");
    if !e.path.starts_with('/') || e.path.contains('\0') || !plain {
        return Some(format!(
            "has the path {:?}, which is not absolute and plain",
            e.path
        ));
    }
    if components.last() != Some(name.as_str()) {
        return Some(format!(
            "has the path {:?}, which does not end in its name",
            e.path
        ));
    }
    if !ENTRY_TYPES.contains(&e.type_.as_str()) {
        return Some(format!(
            "has the type {:?}, not one of {ENTRY_TYPES:?}",
            e.type_
        ));
    }
    None
}
