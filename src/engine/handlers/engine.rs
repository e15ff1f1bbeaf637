//! The engine's own routes: health, shutdown, providers.

use super::super::state::Shared;
use super::super::wire::{Health, PROTOCOL};
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

pub async fn health(State(state): State<Shared>) -> Json<Health> {
    Json(Health {
        protocol: PROTOCOL.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        pid: std::process::id(),
        uptime_s: state.started.elapsed().as_secs(),
        sessions: state.sessions.len(),
    })
}

/// Answers first, then the daemon stops (its sandboxes live on for the next engine).
pub async fn shutdown(State(state): State<Shared>) -> Json<Value> {
    state.shutdown.send_replace(true);
    Json(json!({ "stopping": true, "pid": std::process::id() }))
}

pub async fn providers(State(state): State<Shared>) -> Json<Value> {
    let records: Vec<_> = state.providers.iter().map(|p| p.record()).collect();
    Json(json!({ "providers": records }))
}
