//! A sandbox's record on disk, `<state>/sandboxes/<id>/sandbox.json`: what the wire shows
//! and what the provider needs to adopt the sandbox after an engine restart (whose it is,
//! the values of its variables, the process groups and sessions it started, its cgroup,
//! its clock). Written whole and atomically (a temp file, then a rename), mode 0600: it
//! holds the values of `envs`, which are never echoed.

use crate::wire::SandboxRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const RECORD_FILE: &str = "sandbox.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    pub record: SandboxRecord,
    /// The fingerprint of the connection that created it: only that account sees it.
    pub owner: String,
    /// The variables given at create, values included: every process of the sandbox gets
    /// them, after an engine restart too.
    pub envs: BTreeMap<String, String>,
    /// Milliseconds since the epoch (the record's RFC 3339 fields are to the second).
    pub created_ms: u64,
    pub expires_ms: u64,
    /// Process groups the sandbox's commands started (pruned when empty).
    pub groups: Vec<u32>,
    /// Sessions its terminals started (pruned when empty).
    pub sessions: Vec<u32>,
    /// Its cgroup, when the machine gave it one.
    pub cgroup: Option<PathBuf>,
    /// Its machine (`isolation: namespaces`), by which the next engine finds it again.
    #[serde(default)]
    pub machine: Option<crate::services::namespaces::Machine>,
    /// Where its home, `/tmp` and `/etc` are when not in its own folder (a root engine's
    /// machines: `services::namespaces::MACHINES_ROOT`).
    #[serde(default)]
    pub data: Option<PathBuf>,
}

impl Stored {
    pub fn expires_at(&self) -> SystemTime {
        at_ms(self.expires_ms)
    }

    /// Sets the expiry to `at` (the record's field too).
    pub fn set_expiry(&mut self, at: SystemTime) {
        self.expires_ms = ms(at);
        self.record.expires_at = crate::services::files::rfc3339(at);
    }
}

pub fn ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub fn at_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// How a record is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// On the disk before the answer (`fdatasync`): what a restart after a power loss must
    /// find (the record, its status, its expiry).
    Synced,
    /// Left to the page cache, which an engine that crashes or restarts still reads: facts
    /// about running processes (their groups and sessions), which a power loss ends with
    /// the processes. Saves each command the sync (about 1 ms).
    Cached,
}

/// Writes `stored` to `dir/sandbox.json` atomically, mode 0600.
pub fn save(dir: &Path, stored: &Stored) -> std::io::Result<()> {
    save_with(dir, stored, Flush::Synced)
}

/// [`save`], flushed as `flush` says.
pub fn save_with(dir: &Path, stored: &Stored, flush: Flush) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(stored).map_err(std::io::Error::other)?;
    let temp = dir.join(format!(".{RECORD_FILE}.{}", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(&json)?;
        if flush == Flush::Synced {
            file.sync_data()?;
        }
        std::fs::rename(&temp, dir.join(RECORD_FILE))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// The record in `dir`, or why there is none.
pub fn load(dir: &Path) -> Result<Stored, String> {
    let path = dir.join(RECORD_FILE);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::SandboxStatus;
    use std::os::unix::fs::PermissionsExt;

    fn stored() -> Stored {
        Stored {
            record: SandboxRecord {
                sandbox_id: "sb_1".into(),
                provider: "local".into(),
                template: "base".into(),
                status: SandboxStatus::Running,
                created_at: "2026-01-01T00:00:00Z".into(),
                expires_at: String::new(),
                metadata: BTreeMap::new(),
                envs_keys: vec!["TOKEN".into()],
                cpu: None,
                memory: None,
                disk: None,
                secure: true,
                limits_enforced: BTreeMap::new(),
                isolation: None,
                allow_internet_access: None,
                max_processes: None,
            },
            owner: "fp".into(),
            envs: [("TOKEN".to_owned(), "secret".to_owned())].into(),
            created_ms: 1,
            expires_ms: 0,
            groups: vec![42],
            sessions: vec![],
            cgroup: None,
            machine: None,
            data: None,
        }
    }

    #[test]
    fn a_record_round_trips_privately_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = stored();
        s.set_expiry(at_ms(1_700_000_000_000));
        assert_eq!(s.record.expires_at, "2023-11-14T22:13:20Z");
        save(dir.path(), &s).unwrap();
        save(dir.path(), &s).unwrap();
        assert_eq!(load(dir.path()).unwrap(), s);
        let mode = std::fs::metadata(dir.path().join(RECORD_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(RECORD_FILE)]);
        assert_eq!(s.expires_at(), at_ms(1_700_000_000_000));
    }

    #[test]
    fn a_missing_or_broken_record_is_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).is_err());
        std::fs::write(dir.path().join(RECORD_FILE), "{").unwrap();
        assert!(load(dir.path()).unwrap_err().contains(RECORD_FILE));
    }
}
