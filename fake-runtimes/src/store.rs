//! Conversation store: one JSON file per thread holding the prompts so far,
//! so `resume` continues the same thread across processes.

use crate::script::Tokens;
use serde_json::{Value, json};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub prompt: String,
    /// None while the turn runs, or when it never finished (crash, hang, fail).
    pub reply: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    pub id: String,
    pub model: String,
    pub cwd: String,
    pub turns: Vec<Turn>,
    /// Running totals, because codex reports thread-cumulative usage.
    pub usage: Tokens,
}

impl Thread {
    /// 1-based number of the turn about to run.
    pub fn next_turn(&self) -> usize {
        self.turns.len() + 1
    }
}

#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    runtime: &'static str,
}

impl Store {
    pub fn new(dir: PathBuf, runtime: &'static str) -> Self {
        Store { dir, runtime }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn ensure_dir(&self) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create state dir {}: {e}", self.dir.display()))
    }

    /// Creates a new thread. Without `explicit_id` the id is the first free
    /// one of the deterministic sequence; the file is claimed with
    /// `create_new` so concurrent processes never share an id.
    pub fn create(
        &self,
        uuid_version: u8,
        explicit_id: Option<&str>,
        model: &str,
        cwd: &str,
    ) -> Result<Thread, String> {
        self.ensure_dir()?;
        let seed = crate::env::seed();
        let claim = |id: &str| {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.path(id))
        };
        let id = match explicit_id {
            Some(id) => {
                if !safe_id(id) {
                    return Err(format!("invalid session id {id:?}"));
                }
                claim(id).map_err(|_| format!("Session ID {id} is already in use."))?;
                id.to_string()
            }
            None => {
                let mut n: u64 = 0;
                loop {
                    let id = crate::ids::uuid(uuid_version, &[&seed, self.runtime, &n.to_string()]);
                    match claim(&id) {
                        Ok(_) => break id,
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                        Err(e) => {
                            return Err(format!(
                                "cannot create thread file in {}: {e}",
                                self.dir.display()
                            ));
                        }
                    }
                }
            }
        };
        let thread = Thread {
            id,
            model: model.to_string(),
            cwd: cwd.to_string(),
            turns: Vec::new(),
            usage: Tokens::default(),
        };
        self.save(&thread)?;
        Ok(thread)
    }

    /// Loads a thread; `Ok(None)` when no such thread exists.
    pub fn load(&self, id: &str) -> Result<Option<Thread>, String> {
        if !safe_id(id) {
            return Ok(None);
        }
        let path = self.path(id);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| format!("thread file {} is corrupt: {e}", path.display()))?;
        Ok(Some(from_json(&v, id)))
    }

    /// Writes the thread via a temp file and rename so readers never see half a file.
    pub fn save(&self, thread: &Thread) -> Result<(), String> {
        self.ensure_dir()?;
        let path = self.path(&thread.id);
        let tmp = self
            .dir
            .join(format!(".{}.{}.tmp", thread.id, std::process::id()));
        let text = serde_json::to_string_pretty(&to_json(thread, self.runtime))
            .map_err(|e| format!("cannot encode thread: {e}"))?;
        std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Id of the most recently written thread (for `resume --last`).
    pub fn latest(&self) -> Option<String> {
        let entries = std::fs::read_dir(&self.dir).ok()?;
        entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?.to_string();
                let modified = e.metadata().ok()?.modified().ok()?;
                Some((modified, id))
            })
            .max()
            .map(|(_, id)| id)
    }
}

/// Ids come from argv; only plain names may become file names.
fn safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn to_json(t: &Thread, runtime: &str) -> Value {
    json!({
        "id": t.id,
        "runtime": runtime,
        "model": t.model,
        "cwd": t.cwd,
        "turns": t.turns.iter().map(|turn| json!({"prompt": turn.prompt, "reply": turn.reply})).collect::<Vec<_>>(),
        "usage": {
            "input_tokens": t.usage.input,
            "cached_input_tokens": t.usage.cached_input,
            "cache_creation_input_tokens": t.usage.cache_creation,
            "output_tokens": t.usage.output,
            "reasoning_output_tokens": t.usage.reasoning_output,
        },
    })
}

fn from_json(v: &Value, id: &str) -> Thread {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let u = |k: &str| {
        v.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let turns = v
        .get("turns")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|t| Turn {
                    prompt: t
                        .get("prompt")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    reply: t.get("reply").and_then(Value::as_str).map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default();
    Thread {
        id: id.to_string(),
        model: s("model"),
        cwd: s("cwd"),
        turns,
        usage: Tokens {
            input: u("input_tokens"),
            output: u("output_tokens"),
            cached_input: u("cached_input_tokens"),
            cache_creation: u("cache_creation_input_tokens"),
            reasoning_output: u("reasoning_output_tokens"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_load_roundtrip() {
        let dir = std::env::temp_dir().join(format!("rt-store-test-{}", std::process::id()));
        let store = Store::new(dir.clone(), "rt-test");
        let mut a = store.create(7, None, "m", "/w").unwrap();
        let b = store.create(7, None, "m", "/w").unwrap();
        assert_ne!(a.id, b.id);
        a.turns.push(Turn {
            prompt: "p".into(),
            reply: Some("r".into()),
        });
        a.usage.input = 5;
        store.save(&a).unwrap();
        assert_eq!(store.load(&a.id).unwrap().unwrap(), a);
        assert!(store.load("../etc/passwd").unwrap().is_none());
        assert!(store.load("missing").unwrap().is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
