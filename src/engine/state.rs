//! What the engine's handlers share: the token, the providers, the sessions, the activity
//! count of the idle exit and the shutdown switch. A leaf under the router (`app.rs`) and
//! the handlers, so neither imports the other through it.

use super::provider::Provider;
use super::routes::Route;
use super::sessions::Sessions;
use crate::error::engine::{Code, EngineError};
use crate::wire::Connection;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What every handler shares.
pub struct EngineState {
    pub token: String,
    pub started: Instant,
    pub providers: Vec<Arc<dyn Provider>>,
    pub sessions: Sessions,
    pub activity: Arc<Activity>,
    /// Set to `true` by `POST /v1/shutdown`.
    pub shutdown: watch::Sender<bool>,
}

pub type Shared = Arc<EngineState>;

impl EngineState {
    pub fn new(token: String, providers: Vec<Arc<dyn Provider>>, session_idle: Duration) -> Self {
        EngineState {
            token,
            started: Instant::now(),
            providers,
            sessions: Sessions::new(session_idle),
            activity: Arc::new(Activity::default()),
            shutdown: watch::Sender::new(false),
        }
    }

    /// The connection's provider, once it has declared the route's feature.
    pub fn provider(
        &self,
        route: &Route,
        conn: &Connection,
    ) -> Result<Arc<dyn Provider>, EngineError> {
        let id = conn.provider_id();
        // One record per provider, read once: it says the id, the error and the features.
        let (provider, record) = self
            .providers
            .iter()
            .map(|p| (p, p.record()))
            .find(|(_, record)| record.id == id)
            .ok_or_else(|| {
                EngineError::new(
                    Code::Configuration,
                    format!("no provider `{id}` is installed (GET /v1/providers lists them)"),
                )
            })?;
        let provider = provider.clone();
        if let Some(error) = &record.error {
            return Err(EngineError::new(
                Code::ProviderFailed,
                format!("provider `{id}` cannot serve: {error}"),
            ));
        }
        if let Some(feature) = route.feature
            && !record.features.contains(&feature)
        {
            return Err(EngineError::new(
                Code::FeatureNotSupported,
                format!(
                    "provider `{id}` does not declare `{}`, which `{}` needs",
                    feature.name(),
                    route.id
                ),
            ));
        }
        Ok(provider)
    }
}

/// When the last request arrived and how many are still open (a terminal or a stream
/// counts until it ends), for the idle exit.
#[derive(Default)]
pub struct Activity {
    last_ms: AtomicU64,
    open: AtomicUsize,
    origin: std::sync::OnceLock<Instant>,
}

impl Activity {
    fn origin(&self) -> Instant {
        *self.origin.get_or_init(Instant::now)
    }

    fn touch(&self) {
        let ms = self.origin().elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// How long nothing has happened; zero while a request is open.
    pub fn idle_for(&self) -> Duration {
        if self.open.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        let now = self.origin().elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }

    /// Marks a request open until the guard is dropped (streams hold it in their body).
    pub fn open(self: &Arc<Self>) -> OpenGuard {
        self.touch();
        self.open.fetch_add(1, Ordering::Relaxed);
        OpenGuard(self.clone())
    }
}

pub struct OpenGuard(Arc<Activity>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.touch();
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}
