//! `svc`: an in-sandbox agent server and, next, its local engine. The layers (see
//! `docs/architecture.md`): the command line ([`cli`]) starts the server ([`server`]: the
//! endpoint table, the admission pipeline, the groups and the agents domain), which stands on
//! services that know nothing of HTTP ([`services`]); [`error`] holds the error tables.

pub mod cli;
pub mod client;
pub mod engine;
pub mod error;
pub mod server;
pub mod services;

pub use server::{AppState, SharedState, app, terminal_app};
