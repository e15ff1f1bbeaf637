//! Sandboxes on disk: each a folder `sandboxes/<id>/` under the plugin's working folder
//! (the engine gives every plugin a private one), holding its record `sandbox.json` and its
//! home `home/`, where commands start and relative paths begin. The record keeps the owner
//! (the request's `account`), so one account never sees another's sandboxes. Every process
//! a command starts carries `DIR_SANDBOX=<id>` in its environment: that mark is how the end
//! of a sandbox finds what it left running.

use crate::plugin::Fault;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The mark of a sandbox's processes.
pub const MARK: &str = "DIR_SANDBOX";
const TIMEOUT_MAX_S: u64 = 86_400;

/// The record the engine's sandbox routes answer with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub sandbox_id: String,
    pub provider: String,
    pub template: String,
    pub status: String,
    pub created_at: String,
    pub expires_at: String,
    pub metadata: BTreeMap<String, String>,
    pub envs_keys: Vec<String>,
    pub cpu: Option<u32>,
    pub memory: Option<u64>,
    pub disk: Option<u64>,
    pub secure: bool,
    pub limits_enforced: BTreeMap<String, bool>,
}

/// What is kept on disk: the record, and what only the plugin sees.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stored {
    pub record: Record,
    pub owner: String,
    pub envs: BTreeMap<String, String>,
    pub created_ms: u64,
    pub expires_ms: u64,
}

/// The create body (the engine has checked its fields).
#[derive(Debug, Default, Deserialize)]
pub struct Create {
    pub template: Option<String>,
    pub timeout: Option<u64>,
    pub envs: Option<BTreeMap<String, String>>,
    pub metadata: Option<BTreeMap<String, String>>,
    pub cpu: Option<u32>,
    pub memory: Option<u64>,
    pub disk: Option<u64>,
    pub gpu: Option<String>,
    pub secure: Option<bool>,
}

pub struct Store {
    /// `<cwd>/sandboxes`, canonical.
    pub root: PathBuf,
    /// One change at a time: records are read, changed and written whole.
    changes: Mutex<()>,
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// RFC 3339 UTC to the second.
pub fn rfc3339(ms: u64) -> String {
    let text = crate::clock::rfc3339(ms / 1000 * 1000);
    text.replace(".000Z", "Z")
}

pub fn not_found(id: &str) -> Fault {
    Fault::new(
        "E2009",
        format!("no sandbox `{id}` (it was killed, it expired, or it is another account's)"),
    )
}

fn io(what: &str, e: std::io::Error) -> Fault {
    Fault::new("E9001", format!("cannot {what}: {e}"))
}

pub fn check_timeout(seconds: u64) -> Result<u64, Fault> {
    if (1..=TIMEOUT_MAX_S).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(Fault::new(
            "E4001",
            format!("`timeout` must be 1 to {TIMEOUT_MAX_S} seconds, not {seconds}"),
        ))
    }
}

impl Store {
    pub fn open(root: PathBuf) -> std::io::Result<Store> {
        std::fs::create_dir_all(&root)?;
        Ok(Store {
            root: root.canonicalize()?,
            changes: Mutex::new(()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn home(&self, id: &str) -> PathBuf {
        self.root.join(id).join("home")
    }

    fn load_any(&self, id: &str) -> Option<Stored> {
        let text = std::fs::read(self.root.join(id).join("sandbox.json")).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn save(&self, stored: &Stored) -> Result<(), Fault> {
        let dir = self.root.join(&stored.record.sandbox_id);
        let text =
            serde_json::to_vec_pretty(stored).map_err(|e| Fault::new("E9001", e.to_string()))?;
        let temp = dir.join(".sandbox.json.new");
        std::fs::write(&temp, text).map_err(|e| io("write the record", e))?;
        std::fs::rename(&temp, dir.join("sandbox.json")).map_err(|e| io("write the record", e))
    }

    /// This account's live sandbox `id`, or `E2009`.
    pub fn get(&self, account: &str, id: &str) -> Result<Stored, Fault> {
        let valid = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        match self.load_any(id).filter(|_| valid) {
            Some(s) if s.owner == account && s.expires_ms > now_ms() => Ok(s),
            _ => Err(not_found(id)),
        }
    }

    pub fn create(&self, account: &str, body: Create) -> Result<Record, Fault> {
        let template = body.template.unwrap_or_else(|| "base".into());
        if template != "base" {
            return Err(Fault::new(
                "E2010",
                format!(
                    "the dir provider has no template `{template}`: its one template is `base`"
                ),
            )
            .suggest("create the sandbox from template `base`"));
        }
        if let Some(gpu) = body.gpu {
            return Err(Fault::new(
                "E8004",
                format!(
                    "the dir provider has no GPU: create the sandbox without `gpu` (asked: `{gpu}`)"
                ),
            ));
        }
        let timeout = check_timeout(body.timeout.unwrap_or(300))?;
        let now = now_ms();
        let seed = [
            now.to_string(),
            std::process::id().to_string(),
            next().to_string(),
        ];
        let id = format!(
            "sb_{}",
            crate::ids::hex(20, &seed.each_ref().map(String::as_str))
        );
        let envs = body.envs.unwrap_or_default();
        // Only the lifetime is enforced: the rest is recorded, and the record says so.
        let mut limits = BTreeMap::from([("timeout".to_owned(), true)]);
        for (name, asked) in [
            ("cpu", body.cpu.is_some()),
            ("memory", body.memory.is_some()),
            ("disk", body.disk.is_some()),
        ] {
            if asked {
                limits.insert(name.into(), false);
            }
        }
        let expires_ms = now + timeout * 1000;
        let stored = Stored {
            record: Record {
                sandbox_id: id.clone(),
                provider: "dir".into(),
                template,
                status: "running".into(),
                created_at: rfc3339(now),
                expires_at: rfc3339(expires_ms),
                metadata: body.metadata.unwrap_or_default(),
                envs_keys: envs.keys().cloned().collect(),
                cpu: body.cpu,
                memory: body.memory,
                disk: body.disk,
                secure: body.secure.unwrap_or(true),
                limits_enforced: limits,
            },
            owner: account.to_owned(),
            envs,
            created_ms: now,
            expires_ms,
        };
        std::fs::create_dir_all(self.home(&id)).map_err(|e| io("make the sandbox folder", e))?;
        self.save(&stored)?;
        Ok(stored.record)
    }

    /// This account's sandboxes, newest first, filtered by `status`, paged.
    pub fn list(&self, account: &str, params: &Value) -> Result<Value, Fault> {
        let limit = params["limit"].as_u64().unwrap_or(100) as usize;
        let offset = params["offset"].as_u64().unwrap_or(0) as usize;
        let status = params["status"].as_str();
        let mut mine: Vec<Stored> = std::fs::read_dir(&self.root)
            .map_err(|e| io("list the sandboxes", e))?
            .flatten()
            .filter_map(|e| self.get(account, &e.file_name().to_string_lossy()).ok())
            .filter(|s| status.is_none_or(|st| s.record.status == st))
            .collect();
        mine.sort_by(|a, b| {
            (b.created_ms, &b.record.sandbox_id).cmp(&(a.created_ms, &a.record.sandbox_id))
        });
        let page: Vec<&Record> = mine
            .iter()
            .skip(offset)
            .take(limit)
            .map(|s| &s.record)
            .collect();
        Ok(serde_json::json!({ "sandboxes": page }))
    }

    /// The sandbox ends `seconds` from now.
    pub fn set_timeout(&self, account: &str, id: &str, seconds: u64) -> Result<Record, Fault> {
        let seconds = check_timeout(seconds)?;
        let _turn = self.lock();
        let mut stored = self.get(account, id)?;
        stored.expires_ms = now_ms() + seconds * 1000;
        stored.record.expires_at = rfc3339(stored.expires_ms);
        self.save(&stored)?;
        Ok(stored.record)
    }

    /// Ends the sandbox: its processes killed, its folder removed; its last record.
    pub fn kill(&self, account: &str, id: &str) -> Result<Record, Fault> {
        let _turn = self.lock();
        let stored = self.get(account, id)?;
        self.end(&stored.record.sandbox_id);
        let mut record = stored.record;
        record.status = "stopped".into();
        Ok(record)
    }

    fn end(&self, id: &str) {
        kill_marked(id);
        let _ = std::fs::remove_dir_all(self.root.join(id));
    }

    /// Ends every sandbox whose lifetime is over (called every few hundred ms).
    pub fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return;
        };
        let _turn = self.lock();
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            if let Some(stored) = self.load_any(&id)
                && stored.expires_ms <= now_ms()
            {
                eprintln!("sandbox {id} expired");
                self.end(&id);
            }
        }
    }
}

/// A counter for ids made in the same millisecond.
fn next() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// KILLs every process carrying the sandbox's mark, again until none is left (a dying
/// shell may still fork).
pub fn kill_marked(id: &str) {
    let mark = format!("{MARK}={id}");
    for _ in 0..50 {
        let pids = marked(&mark);
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The processes whose environment holds `mark` (a zombie's is empty: it is not counted).
fn marked(mark: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(Path::new("/proc").join(pid.to_string()).join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == mark.as_bytes()))
        })
        .collect()
}
