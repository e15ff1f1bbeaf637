//! Entry info: what every file operation answers about a file, directory or link. Its wire
//! form (`type` one of `file`, `dir`, `symlink`, `other`, `mode` an octal string (`"0644"`),
//! `modified_at` RFC 3339 UTC to the second, `symlink_target` only for links, `metadata`
//! only when there is some) is `wire::EntryInfo`, built from it there: the services know no
//! wire. The owner's ids stay numbers here: who they are depends on where the entry is shown
//! (a sandbox has its own `/etc/passwd`), which the layer that shows it knows.

use nix::sys::stat::{FileStat, SFlag};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "dir",
            EntryKind::Symlink => "symlink",
            EntryKind::Other => "other",
        }
    }

    pub(crate) fn of_mode(mode: u32) -> EntryKind {
        match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
            SFlag::S_IFREG => EntryKind::File,
            SFlag::S_IFDIR => EntryKind::Dir,
            SFlag::S_IFLNK => EntryKind::Symlink,
            _ => EntryKind::Other,
        }
    }
}

/// One file, directory or link, as `lstat` sees it (a link is described, never followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The last component of `path` (`/` for the root).
    pub name: String,
    /// Absolute and normalized: the path the caller named, or under which the entry was found.
    pub path: PathBuf,
    pub kind: EntryKind,
    /// Bytes (a link's own length for a link).
    pub size: u64,
    /// Permission bits with setuid, setgid and sticky (`st_mode & 0o7777`).
    pub mode: u32,
    pub modified_at: SystemTime,
    /// What a link points to, as written in it; `None` for anything but a link.
    pub symlink_target: Option<PathBuf>,
    /// The file's metadata (`metadata.rs`); empty when it has none.
    pub metadata: BTreeMap<String, String>,
    /// The owner's and the group's ids, as the filesystem holds them; `None` where the
    /// entry has no owner (a memory sandbox's file).
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

impl Entry {
    pub(crate) fn from_stat(
        path: &Path,
        stat: &FileStat,
        symlink_target: Option<PathBuf>,
        metadata: BTreeMap<String, String>,
    ) -> Entry {
        let mode = stat.st_mode;
        let kind = EntryKind::of_mode(mode);
        Entry {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "/".into()),
            path: path.to_path_buf(),
            kind,
            size: stat.st_size.max(0) as u64,
            mode: mode & 0o7777,
            modified_at: system_time(stat.st_mtime, stat.st_mtime_nsec),
            symlink_target: if kind == EntryKind::Symlink {
                symlink_target
            } else {
                None
            },
            metadata,
            uid: Some(stat.st_uid),
            gid: Some(stat.st_gid),
        }
    }

    /// `mode` as the wire writes it: at least four octal digits (`"0644"`, `"4755"`).
    pub fn mode_octal(&self) -> String {
        format!("{:04o}", self.mode)
    }

    /// `modified_at` as the wire writes it: RFC 3339 UTC to the second
    /// (`"2024-05-01T12:00:00Z"`); times before 1970 or after 9999 are clamped.
    pub fn modified_rfc3339(&self) -> String {
        rfc3339(self.modified_at)
    }
}

/// RFC 3339 UTC to the second, clamped to 1970..=9999.
pub fn rfc3339(time: SystemTime) -> String {
    const MAX_SECS: u64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        .min(MAX_SECS);
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(secs)).to_string()
}

fn system_time(secs: i64, nanos: i64) -> SystemTime {
    let nanos = nanos.clamp(0, 999_999_999) as u32;
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nanos.into())
    }
}
