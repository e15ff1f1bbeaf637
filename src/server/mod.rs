//! The in-sandbox server: the endpoint table, the admission pipeline and policy, the groups'
//! handlers and the agents domain, over the shared services (`crate::services`).

pub mod agents;
pub mod audit;
pub mod auth;
pub mod capabilities;
pub mod children;
pub mod config;
pub mod docs;
pub mod endpoints;
pub mod error_docs;
pub mod example;
#[cfg(test)]
pub(crate) mod example_run;
pub mod extract;
pub mod front;
pub mod groups;
pub mod launch;
pub mod openapi;
pub mod pipeline;
pub mod policy;
pub mod registry;
pub mod route;
pub mod router;
#[cfg(test)]
mod seated_stream_tests;
mod serve;
mod state;
#[cfg(test)]
mod zero_copy_tests;
#[cfg(test)]
mod zero_copy_upload_tests;

pub use router::{app, terminal_app};
pub use serve::{Listeners, SHUTDOWN_GRACE, StopSignal, run, serve_main, url_of};
pub use state::{AppState, SharedState};
