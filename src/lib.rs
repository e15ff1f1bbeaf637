//! `svc`: an in-sandbox agent server and, next, its local engine. The layers (see
//! `docs/architecture.md`): the command line ([`cli`]) starts the server ([`server`]: the
//! endpoint table, the admission pipeline, the groups and the agents domain), which stands on
//! services that know nothing of HTTP ([`services`]); [`error`] holds the error tables;
//! [`zero_copy`] is the listener whose connections send files with `sendfile`, under the
//! server and the engine.

pub mod cli;
pub mod client;
pub mod engine;
pub mod error;
pub mod server;
pub mod services;
pub mod sse_schema;
pub mod zero_copy;

pub use server::{AppState, SharedState, app, terminal_app};
