//! What a case tests, apart from how the runner reaches it.
//!
//! A [`Contract`] is one documented interface: the HTTP server, and the local
//! engine (`svc-engine/1`, spec part B). Every
//! case folder under `cases/` belongs to one contract (see `cases::GROUPS`),
//! and every [`Profile`](crate::Profile) configures an implementation of one,
//! so a case's contract is its profile's. How each contract's implementation
//! is reached (launched per profile, or already running) is the run's
//! [`Target`](crate::Target); a case whose contract the target does not reach
//! is skipped, saying which flag would reach it.

/// A documented interface the suite checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Contract {
    /// The server (`svc serve`): HTTP, SSE and WebSocket on a base URL.
    Server,
    /// The local engine (`svc-engine/1`): a loopback daemon found through its
    /// descriptor (`<state_dir>/engine.json`, which names its port and token).
    Engine,
}

impl Contract {
    /// Every contract.
    pub const ALL: &[Contract] = &[Contract::Server, Contract::Engine];

    /// What is tested, as skip reasons say it: `server`, `engine`.
    pub fn name(self) -> &'static str {
        match self {
            Contract::Server => "server",
            Contract::Engine => "engine",
        }
    }

    /// The runner flag that launches an implementation per profile.
    pub fn launch_flag(self) -> &'static str {
        match self {
            Contract::Server => "--server-cmd",
            Contract::Engine => "--engine-cmd",
        }
    }

    /// Every runner flag that reaches an implementation, for skip reasons.
    pub fn reach_flags(self) -> &'static str {
        match self {
            Contract::Server => "--server-cmd CMD or --base-url URL",
            Contract::Engine => "--engine-cmd CMD or --engine-url URL --engine-token TOKEN",
        }
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
