//! One real Chromium driven over the DevTools protocol, for the browser routes.
//!
//! **The crate.** `chromiumoxide` (tokio, async): the server is tokio, so DevTools calls
//! are futures that a timeout or the browser's exit can cut short with `select!`, with no
//! thread parked per call (`headless_chrome` is synchronous: every call would need
//! `spawn_blocking`, and a hung call would hold a blocking thread). We start Chromium
//! ourselves through the supervisor (its own process group, its exit watched, stopped with
//! the server) and only hand the crate the DevTools address it prints.
//!
//! **The binary.** `SVC_BROWSER_BIN` (a path or a name on `PATH`), else the first of
//! `chromium`, `chromium-browser`, `google-chrome`, `google-chrome-stable` on `PATH`; none
//! is [`Error::BinaryMissing`], naming Debian's `chromium` package.
//!
//! **The URLs.** Navigation takes http and https only. Every request Chromium makes goes
//! through a proxy of ours ([`proxy`]) that resolves the host itself, judges every address
//! with the server's one URL guard (`services::url_guard`) and the operator's lists
//! ([`UrlRules`]), and connects only to the addresses it judged: DNS rebinding, redirects,
//! frames and scripts cannot reach a private, loopback, link-local or metadata address the
//! rules do not admit. UDP (QUIC, WebRTC) is switched off so nothing leaves beside it.
//!
//! **Never a hang.** Every DevTools call has a time limit ([`CALL_TIMEOUT`],
//! [`NAVIGATE_TIMEOUT`]) and races the browser's exit; a browser that died is noticed on
//! the next call or status and reported with how it ended.

mod binary;
mod ops;
pub mod proxy;
pub mod rules;
mod session;

#[cfg(test)]
mod tests;

pub use binary::{CANDIDATES, OVERRIDE_VAR, PACKAGE};
pub use rules::{Block, Refusal, UrlRules};
pub use session::VIEWPORT;

use session::Session;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Starting Chromium until it answers on DevTools.
pub const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);
/// One DevTools call (click, type, content, screenshot).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// A navigation, until the page has loaded.
pub const NAVIGATE_TIMEOUT: Duration = Duration::from_secs(30);

/// How the browser is started and what it may load.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `SVC_BROWSER_BIN`.
    pub binary: Option<String>,
    /// The `PATH` searched for the browser.
    pub path: String,
    /// The server runs as root: Chromium's sandbox cannot, so it runs without it.
    pub as_root: bool,
    pub rules: UrlRules,
}

impl Config {
    /// From the server's environment: `SVC_BROWSER_BIN`, `SVC_BROWSER_URL_ALLOW` and
    /// `SVC_BROWSER_URL_DENY` (comma lists of host patterns, `*.example.com` for
    /// subdomains), `SVC_BROWSER_ALLOW_PRIVATE` (comma list of address blocks admitted
    /// though private, or `loopback`).
    pub fn from_env(env: &BTreeMap<String, String>) -> Result<Config, String> {
        let list = |name: &str| -> Vec<String> {
            env.get(name)
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let private_allowed = match env.get("SVC_BROWSER_ALLOW_PRIVATE") {
            Some(v) => {
                Block::parse_list(v).map_err(|e| format!("SVC_BROWSER_ALLOW_PRIVATE: {e}"))?
            }
            None => Vec::new(),
        };
        Ok(Config {
            binary: env.get(OVERRIDE_VAR).cloned(),
            path: env
                .get("PATH")
                .cloned()
                .unwrap_or_else(|| "/usr/bin:/bin".into()),
            as_root: running_as_root(),
            rules: UrlRules {
                allow: list("SVC_BROWSER_URL_ALLOW"),
                deny: list("SVC_BROWSER_URL_DENY"),
                private_allowed,
            },
        })
    }
}

/// The binary `config` would start, or why there is none (what was tried, the package).
pub fn find_binary(config: &Config) -> Result<std::path::PathBuf, String> {
    binary::find(config.binary.as_deref(), &config.path)
}

/// Whether this process runs as root (the owner of `/proc/self` is its effective user).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// What the browser refuses or fails at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No browser binary: what was tried and the package to install.
    BinaryMissing(String),
    /// The binary is there but did not come up (exited, no display, DevTools silent).
    Launch(String),
    AlreadyRunning {
        pid: u32,
    },
    /// No browser runs; `Some` says how the last one ended when it died.
    NotRunning(Option<String>),
    UrlInvalid(String),
    UrlDenied(String),
    /// The page could not be loaded (no such host, nothing listening, TLS, a net error).
    NavigationFailed(String),
    SelectorInvalid(String),
    SelectorNotFound(String),
    /// A DevTools call passed its time limit.
    Timeout(String),
    /// DevTools answered with an error.
    Devtools(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::BinaryMissing(m) | Error::Launch(m) => f.write_str(m),
            Error::AlreadyRunning { pid } => write!(
                f,
                "a browser is already running (pid {pid}); DELETE /browser stops it"
            ),
            Error::NotRunning(None) => {
                f.write_str("no browser is running; POST /browser starts one")
            }
            Error::NotRunning(Some(why)) => {
                write!(f, "no browser is running ({why}); POST /browser starts one")
            }
            Error::UrlInvalid(m) | Error::UrlDenied(m) | Error::NavigationFailed(m) => {
                f.write_str(m)
            }
            Error::SelectorInvalid(s) => write!(f, "`{s}` is not a valid CSS selector"),
            Error::SelectorNotFound(s) => write!(f, "no element matches the selector `{s}`"),
            Error::Timeout(what) => write!(f, "the browser did not answer {what} in time"),
            Error::Devtools(m) => write!(f, "the browser refused the call: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Error {
        match r {
            Refusal::Invalid(m) => Error::UrlInvalid(m),
            Refusal::Denied(m) => Error::UrlDenied(m),
            Refusal::Unreachable(m) => Error::NavigationFailed(m),
        }
    }
}

/// `GET /browser`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    pub running: bool,
    pub pid: Option<u32>,
    pub url: Option<String>,
    pub title: Option<String>,
    /// How the last browser ended, when it died rather than being stopped.
    pub reason: Option<String>,
}

/// The one browser of the server.
pub struct Browser {
    config: Config,
    /// Held by start and stop, so two starts never launch two browsers.
    lifecycle: tokio::sync::Mutex<()>,
    current: Mutex<Option<Arc<Session>>>,
    /// How the last browser died (cleared by a start or a stop).
    died: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Browser {
    pub fn new(config: Config) -> Browser {
        Browser {
            config,
            lifecycle: tokio::sync::Mutex::new(()),
            current: Mutex::new(None),
            died: Mutex::new(None),
        }
    }

    /// From the server's own environment. A bad `SVC_BROWSER_ALLOW_PRIVATE` is logged and
    /// admits nothing (the rules fail closed: refusing more, never less).
    pub fn from_server_env() -> Browser {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let config = Config::from_env(&env).unwrap_or_else(|e| {
            tracing::error!("{e}: no private address is admitted for the browser");
            let mut env = env;
            env.remove("SVC_BROWSER_ALLOW_PRIVATE");
            Config::from_env(&env).unwrap_or_default()
        });
        Browser::new(config)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Starts Chromium; a running one is [`Error::AlreadyRunning`].
    pub async fn start(&self, headless: bool) -> Result<Status, Error> {
        let _guard = self.lifecycle.lock().await;
        if let Ok(session) = self.live() {
            return Err(Error::AlreadyRunning { pid: session.pid() });
        }
        let session = Arc::new(Session::launch(&self.config, headless).await?);
        *lock(&self.died) = None;
        let pid = session.pid();
        *lock(&self.current) = Some(session);
        Ok(Status {
            running: true,
            pid: Some(pid),
            url: Some("about:blank".into()),
            title: Some(String::new()),
            reason: None,
        })
    }

    /// Stops the browser (its whole process group) and removes its profile.
    pub async fn stop(&self) -> Result<(), Error> {
        let _guard = self.lifecycle.lock().await;
        let session = self.live()?;
        lock(&self.current).take();
        *lock(&self.died) = None;
        session.stop().await;
        Ok(())
    }

    /// Ends the browser when the server stops (nothing to report).
    pub async fn shutdown(&self) {
        let session = lock(&self.current).take();
        if let Some(session) = session {
            session.stop().await;
        }
    }

    /// The running session, or why there is none (a dead one is cleared here, its group
    /// ended in the background).
    fn live(&self) -> Result<Arc<Session>, Error> {
        let mut current = lock(&self.current);
        let Some(session) = current.clone() else {
            return Err(Error::NotRunning(lock(&self.died).clone()));
        };
        if let Some(why) = session.gone() {
            current.take();
            *lock(&self.died) = Some(why.clone());
            tokio::spawn(async move { session.stop().await });
            return Err(Error::NotRunning(Some(why)));
        }
        Ok(session)
    }

    /// Whether it runs, and where its page is (url and title are left out when the page
    /// does not answer quickly, e.g. in the middle of a navigation).
    pub async fn status(&self) -> Status {
        match self.live() {
            Err(Error::NotRunning(reason)) => Status {
                reason,
                ..Status::default()
            },
            Err(_) => Status::default(),
            Ok(session) => {
                let (url, title) = ops::location(&session).await.unzip();
                Status {
                    running: true,
                    pid: Some(session.pid()),
                    url,
                    title,
                    reason: None,
                }
            }
        }
    }

    /// Runs `op` on the page, one at a time, under `limit`, racing the browser's exit: a
    /// browser that dies meanwhile is [`Error::NotRunning`] with how it ended.
    async fn with_page<T, F, Fut>(&self, what: &str, limit: Duration, op: F) -> Result<T, Error>
    where
        F: FnOnce(Arc<Session>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let session = self.live()?;
        let run = async {
            let _one = session.op.lock().await;
            op(session.clone()).await
        };
        let result = tokio::select! {
            r = tokio::time::timeout(limit, run) => r.map_err(|_| Error::Timeout(what.to_owned()))?,
            _ = session.process.wait() => Err(Error::NotRunning(None)),
        };
        match result {
            Err(e) => match self.live() {
                Err(dead @ Error::NotRunning(Some(_))) => Err(dead),
                _ => Err(e),
            },
            ok => ok,
        }
    }
}
