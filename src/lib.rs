//! `svc`: an in-sandbox agent server. One policy-guarded HTTP API (118 endpoints, see
//! [`endpoints::ENDPOINTS`]) for coding agents, files, processes and terminals.

pub mod agents;
pub mod audit;
pub mod auth;
pub mod capabilities;
pub mod config;
pub mod docs;
pub mod endpoints;
pub mod error;
pub mod extract;
pub mod pipeline;
pub mod policy;
pub mod routes;
pub mod server;
pub mod services;

pub use routes::{app, terminal_app};
pub use server::{AppState, SharedState};
