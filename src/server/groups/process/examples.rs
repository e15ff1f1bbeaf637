//! What the process examples need of their own (the runner is `server::example_run`): a
//! server of its own per example (what one starts is not in another's list), `/workspace`
//! standing for a temp dir; pids, times and durations vary by run; the streaming examples
//! answer an event stream.

use crate::server::AppState;
use crate::server::config::Settings;
use crate::server::example::EXAMPLE_ROOT;
use crate::server::example_run::{Call, Harness};
use crate::server::route::Route;

pub(crate) struct Examples {
    temp: tempfile::TempDir,
}

impl Harness for Examples {
    const VOLATILE: &'static [&'static str] = &["pid", "started_at", "ended_at", "duration_ms"];
    const STREAMS: bool = true;

    async fn start() -> Result<Self, String> {
        Ok(Self {
            temp: tempfile::tempdir().unwrap(),
        })
    }

    async fn prepare(&mut self, _: &Route) -> Call {
        Call {
            app: crate::server::router::app(AppState::with_settings(Settings::defaults())),
            swaps: vec![(EXAMPLE_ROOT, self.temp.path().display().to_string())],
        }
    }
}
