//! The engine's own routes: health, shutdown, providers.

use super::super::routes::RouteId;
use super::super::state::Shared;
use super::{Op, schema};
use crate::wire::{Health, IsolationSupport, PROTOCOL, ProviderList, Stopping};
use axum::Json;
use axum::extract::State;
use axum::routing::on;

pub async fn health(State(state): State<Shared>) -> Json<Health> {
    Json(Health {
        protocol: PROTOCOL.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        pid: std::process::id(),
        uptime_s: state.started.elapsed().as_secs(),
        sessions: state.sessions.len(),
        isolation: Some(match crate::services::namespaces::support().await {
            crate::services::namespaces::Support::Available(_) => IsolationSupport {
                available: true,
                reason: None,
            },
            crate::services::namespaces::Support::Unavailable(why) => IsolationSupport {
                available: false,
                reason: Some(why.clone()),
            },
        }),
    })
}

/// Answers first, then the daemon stops (its sandboxes live on for the next engine).
pub async fn shutdown(State(state): State<Shared>) -> Json<Stopping> {
    state.shutdown.send_replace(true);
    Json(Stopping {
        stopping: true,
        pid: std::process::id(),
    })
}

pub async fn providers(State(state): State<Shared>) -> Json<ProviderList> {
    let providers = state.providers.iter().map(|p| p.record()).collect();
    Json(ProviderList { providers })
}

pub const OPS: &[Op] = &[
    Op {
        answer: Some(schema::<Health>),
        ..Op::new(RouteId::Health, |m| on(m, health))
    },
    Op {
        answer: Some(schema::<Stopping>),
        ..Op::new(RouteId::Shutdown, |m| on(m, shutdown))
    },
    Op {
        answer: Some(schema::<ProviderList>),
        ..Op::new(RouteId::ProvidersList, |m| on(m, providers))
    },
];
