//! `svc`: an in-sandbox agent server and its local engine. The layers (see
//! `docs/architecture.md`, enforced by `tests/integration/layers.rs`): the command line
//! ([`cli`]) starts the server ([`server`]: the endpoint table, the admission pipeline, the
//! groups and the agents domain) and the engine ([`engine`]: its route table and the
//! providers), and drives the engine through its client ([`client`]); the engine and the
//! client share the protocol's types ([`wire`]); all stand on services that know nothing of
//! HTTP ([`services`]); [`error`] holds the error tables; [`zero_copy`] is the listener
//! whose connections send files with `sendfile`, under the server and the engine.

pub mod cli;
pub mod client;
pub mod connections;
pub mod engine;
pub mod error;
pub mod server;
pub mod services;
pub mod sse_schema;
pub mod wire;
pub mod zero_copy;

pub use server::{AppState, SharedState, app, terminal_app};
