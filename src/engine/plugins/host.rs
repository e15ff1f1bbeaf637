//! One plugin as the engine keeps it: where it came from, who it said it is, and whether
//! it runs. A plugin that failed (never handshook, exited, broke the protocol) is listed
//! with its `error`; once it has been down for the restart pause, the next look at its
//! record (a call naming it, or the provider list) starts it again in the background.

use super::child::{self, Conn, failed, lock};
use super::protocol::Hello;
use crate::error::engine::EngineError;
use crate::wire::{Feature, ProviderKind, ProviderRecord};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// A plugin file found by discovery.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    /// Its file name: its id until it says one, and the name of its data folder.
    pub name: String,
    /// `user` (the plugins folder) or `environment` (`SVC_ENGINE_PLUGINS`).
    pub trust: &'static str,
    /// Why it cannot be started at all (missing, not executable).
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// A call is abandoned (E9002) after this long without a word from the plugin.
    pub idle: Duration,
    pub hello_wait: Duration,
    /// A failed plugin is started again at most once per this.
    pub restart_pause: Duration,
}

/// Who the plugin said it is, at its first good hello.
#[derive(Debug, Clone)]
struct Identity {
    id: String,
    name: String,
    version: String,
    features: Vec<Feature>,
}

enum State {
    Up(Arc<Conn>),
    Down { error: String, since: Instant },
    Starting { error: String },
}

pub struct Host {
    me: Weak<Host>,
    source: Source,
    data_dir: PathBuf,
    settings: Settings,
    identity: OnceLock<Identity>,
    /// Another id to list it under, when its own is taken.
    listed_as: OnceLock<String>,
    /// Why it is never started again (its id is another plugin's).
    retired: OnceLock<String>,
    state: Mutex<State>,
}

impl Host {
    /// Starts the plugin and waits for its hello (a failure is kept as its error).
    pub async fn start(source: Source, state_dir: &Path, settings: Settings) -> Arc<Host> {
        let data_dir = state_dir.join("plugin-data").join(&source.name);
        let host = Arc::new_cyclic(|me| Host {
            me: me.clone(),
            source,
            data_dir,
            settings,
            identity: OnceLock::new(),
            listed_as: OnceLock::new(),
            retired: OnceLock::new(),
            state: Mutex::new(State::Starting {
                error: "it is starting".into(),
            }),
        });
        host.attempt().await;
        host
    }

    async fn attempt(&self) {
        let started = match &self.source.problem {
            Some(problem) => Err(problem.clone()),
            None => match private_dir(&self.data_dir) {
                Err(e) => Err(format!(
                    "its data folder {} cannot be made: {e}",
                    self.data_dir.display()
                )),
                Ok(()) => {
                    child::start(
                        &self.source.path,
                        &self.source.name,
                        &self.data_dir,
                        self.settings.idle,
                        self.settings.hello_wait,
                    )
                    .await
                }
            },
        };
        let next = match started.and_then(|(conn, hello)| self.adopt(conn, hello)) {
            Ok(conn) => State::Up(Arc::new(conn)),
            Err(error) => {
                tracing::warn!(plugin = %self.source.path.display(), %error, "plugin not started");
                State::Down {
                    error,
                    since: Instant::now(),
                }
            }
        };
        if self.retired.get().is_none() {
            *lock(&self.state) = next;
        }
    }

    /// Keeps the hello's identity; a restarted plugin must say the same id.
    fn adopt(&self, conn: Conn, hello: Hello) -> Result<Conn, String> {
        let identity = self.identity.get_or_init(|| identity(&hello));
        if identity.id != hello.id {
            return Err(format!(
                "it now says its id is `{}`, not `{}`",
                hello.id, identity.id
            ));
        }
        tracing::info!(plugin = %hello.id, path = %self.source.path.display(), "plugin ready");
        Ok(conn)
    }

    /// The id it is listed and called by.
    pub fn id(&self) -> String {
        if let Some(id) = self.listed_as.get() {
            return id.clone();
        }
        self.identity
            .get()
            .map_or_else(|| self.source.name.clone(), |i| i.id.clone())
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Never serves again: another plugin has its id. It is listed as `listed_as`.
    pub fn retire(&self, why: String, listed_as: String) {
        let _ = self.listed_as.set(listed_as);
        let _ = self.retired.set(why.clone());
        // Dropping the connection stops the process.
        *lock(&self.state) = State::Down {
            error: why,
            since: Instant::now(),
        };
    }

    /// Why it cannot serve now, or `None`. A plugin down for the restart pause is started
    /// again in the background (the caller is still told it is down).
    pub fn error(&self) -> Option<String> {
        if let Some(why) = self.retired.get() {
            return Some(why.clone());
        }
        let mut state = lock(&self.state);
        if let State::Up(conn) = &*state {
            match conn.dead() {
                None => return None,
                Some(reason) => {
                    *state = State::Down {
                        error: reason,
                        since: Instant::now(),
                    }
                }
            }
        }
        match &*state {
            State::Up(_) => None,
            State::Starting { error } => Some(format!("{error}; it is being started again")),
            State::Down { error, since } => {
                let due = since.elapsed() >= self.settings.restart_pause;
                let runtime = tokio::runtime::Handle::try_current();
                match (due, runtime, self.me.upgrade()) {
                    (true, Ok(runtime), Some(me)) => {
                        let error = error.clone();
                        *state = State::Starting {
                            error: error.clone(),
                        };
                        runtime.spawn(async move { me.attempt().await });
                        Some(format!("{error}; it is being started again"))
                    }
                    _ => Some(error.clone()),
                }
            }
        }
    }

    /// The running connection, or E9001 saying why there is none.
    pub fn conn(&self) -> Result<Arc<Conn>, EngineError> {
        match &*lock(&self.state) {
            State::Up(conn) if conn.dead().is_none() => return Ok(conn.clone()),
            _ => {}
        }
        let why = self.error().unwrap_or_else(|| "it is not running".into());
        Err(failed(&self.id(), &why))
    }

    pub fn record(&self) -> ProviderRecord {
        let error = self.error();
        let identity = self.identity.get();
        ProviderRecord {
            id: self.id(),
            name: identity.map_or_else(|| self.source.name.clone(), |i| i.name.clone()),
            version: identity.map_or_else(|| "unknown".into(), |i| i.version.clone()),
            kind: ProviderKind::Exec,
            trust: self.source.trust.into(),
            features: identity.map(|i| i.features.clone()).unwrap_or_default(),
            error,
        }
    }

    pub fn me(&self) -> Option<Arc<Host>> {
        self.me.upgrade()
    }
}

fn identity(hello: &Hello) -> Identity {
    let or = |value: &str, fallback: &str| {
        if value.trim().is_empty() {
            fallback.to_owned()
        } else {
            value.to_owned()
        }
    };
    let mut features = Vec::new();
    for name in &hello.features {
        match serde_json::from_value::<Feature>(serde_json::Value::from(name.as_str())) {
            // The terminal is a WebSocket of raw bytes: protocol 1 does not carry it.
            Ok(Feature::Terminal) => {
                tracing::info!(plugin = %hello.id, "`terminal` is not carried by plugin protocol 1: left out")
            }
            Ok(feature) if !features.contains(&feature) => features.push(feature),
            Ok(_) => {}
            Err(_) => {
                tracing::info!(plugin = %hello.id, feature = %name, "an unknown feature: left out")
            }
        }
    }
    features.sort();
    Identity {
        id: hello.id.clone(),
        name: or(&hello.name, &hello.id),
        version: or(&hello.version, "unknown"),
        features,
    }
}

/// Makes `dir` (and its parent) private to the engine's user.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for d in [dir, dir.parent().unwrap_or(dir)] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}
