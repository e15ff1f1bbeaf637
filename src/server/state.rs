//! The state every handler shares: the resolved settings, the policy, the audit sink and
//! the agents group's services.

use crate::server::audit::Audit;
use crate::server::config::Settings;
use crate::server::policy::Policy;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

pub struct AppState {
    pub settings: Settings,
    pub policy: Policy,
    pub audit: Audit,
    pub started: Instant,
    /// Unix seconds at start-up (the `created` of runtime models).
    pub started_at: i64,
    /// Relative paths are judged against this directory (the server's working directory).
    pub base_dir: PathBuf,
    pub capabilities: crate::server::capabilities::DocumentCache,
    /// The file service over the operator's path rules, built once: the file routes and
    /// `POST /capabilities/check` decide with the same one.
    pub files: crate::services::files::FileService,
    /// The processes started through `POST /processes`, by owner (the caller's identity).
    pub processes: crate::services::supervisor::Registry,
    /// The terminals started through `POST /pty`, by owner (the caller's identity).
    pub ptys: crate::services::pty::Terminals,
    /// The one Chromium of the browser routes (`SVC_BROWSER_*` in the server's environment).
    pub browser: crate::services::browser::Browser,
    /// The changes `POST /system/env` made to the environment children start from.
    pub env_overlay: crate::services::child_env::Overlay,
    /// The interpreters `code_run` keeps between runs (`context_id`), by owner.
    pub code_contexts: crate::services::code_run::contexts::Contexts,
    /// `http_fetch`'s client under `dev_tools.url_allow` / `url_deny` and the URL guard.
    pub fetcher: crate::services::fetch::Fetcher,
    pub agents: crate::server::agents::Agents,
    pub responses: Arc<crate::server::agents::responses::Responses>,
    /// The terminal listener's bound port, set once it is bound (`--terminal-port 0` picks
    /// one), so `/capabilities` can tell a client where the terminal WebSocket is; unset
    /// for a state without listeners (tests, embedding).
    pub terminal_port: std::sync::OnceLock<u16>,
}

pub type SharedState = Arc<AppState>;

impl AppState {
    /// Ends every child this state's registries keep (processes, terminals, the browser:
    /// TERM, a grace period, KILL, all at once); returns when all are reaped. Only this
    /// state's: several states share a process in tests, and one state's end must not kill
    /// another's children. [`AppState::end_process_children`] ends the rest at shutdown.
    pub async fn end_children(&self) {
        tokio::join!(
            self.processes.shutdown(),
            self.ptys.shutdown(),
            self.browser.shutdown()
        );
    }

    /// [`AppState::end_children`], then every other child of this process (shells, streams,
    /// agent runtimes, named commands the requests still hold). Called when the server
    /// stops: the server is the only thing in its process, so they are all its own.
    pub async fn end_process_children(&self) {
        // The registries first, so they start nothing more.
        self.end_children().await;
        crate::services::supervisor::stop_all(crate::services::supervisor::GRACE).await;
    }
}

impl AppState {
    pub fn new(settings: Settings) -> std::io::Result<SharedState> {
        let audit = Audit::start(settings.audit, settings.audit_file.as_deref())?;
        Ok(AppState::build(settings, audit))
    }

    /// Audit off: for tests, benchmarks and embedding.
    pub fn with_settings(settings: Settings) -> SharedState {
        AppState::build(settings, Audit::off())
    }

    fn build(settings: Settings, audit: Audit) -> SharedState {
        let base_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        Arc::new(AppState {
            files: crate::services::files::FileService::new(
                settings.paths.clone(),
                base_dir.clone(),
            ),
            agents: crate::server::agents::Agents::new(settings.agents.clone())
                .with_paths(settings.paths.clone()),
            responses: Default::default(),
            processes: Default::default(),
            ptys: Default::default(),
            browser: crate::services::browser::Browser::from_server_env(),
            env_overlay: Default::default(),
            code_contexts: Default::default(),
            fetcher: crate::services::fetch::Fetcher::new(settings.dev_tools.urls.clone()),
            policy: Policy::new(&settings),
            settings,
            audit,
            started: Instant::now(),
            started_at: crate::services::ids::now(),
            base_dir,
            capabilities: Default::default(),
            terminal_port: Default::default(),
        })
    }
}
