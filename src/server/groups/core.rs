use crate::error::ApiResult;
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::capabilities::{self, CheckRequest};
use crate::server::endpoints::EndpointId;
use crate::server::extract::Json;
use axum::Extension;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::{MethodFilter, MethodRouter, on};
use serde_json::{Value, json};

pub async fn health(State(app): State<SharedState>) -> axum::Json<Value> {
    axum::Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_s": app.started.elapsed().as_secs(),
    }))
}

pub async fn capabilities(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
) -> impl IntoResponse {
    let doc = app.capabilities.get_or_build(&app, &identity);
    ([(http::header::CONTENT_TYPE, "application/json")], doc)
}

pub async fn check(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Json(request): Json<CheckRequest>,
) -> ApiResult<axum::Json<Value>> {
    capabilities::check(&app, &identity, &request).map(axum::Json)
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub fn handler(id: EndpointId, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    use EndpointId::*;
    Some(match id {
        Health => on(f, health),
        Capabilities => on(f, capabilities),
        CapabilitiesCheck => on(f, check),
        _ => return None,
    })
}
