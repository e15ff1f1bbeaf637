//! The engine's router, built from the route table and nothing else: every row gets its
//! handler (layered with its own row, so the feature gate and the docs know it), every
//! request passes the door (`guard`) and is counted for the idle exit; anything else is
//! 404 `E2000` with the engine body.

use super::extract::Matched;
use super::handlers;
use super::routes::ROUTES;
use crate::error::engine::{Code, EngineError};
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

use super::state::Shared;

/// The router of `state`.
pub fn app(state: Shared) -> Router {
    let mut router = Router::new();
    for route in ROUTES {
        let bind = handlers::op(route.id)
            .unwrap_or_else(|| panic!("route `{}` has no handler", route.id))
            .bind;
        let method = axum::routing::MethodFilter::try_from(route.method.clone())
            .unwrap_or_else(|_| panic!("route `{}`: no method filter", route.id));
        let method_router = bind(method).layer(axum::Extension(Matched(route)));
        router = router.route(&format!("/v1{}", route.path), method_router);
    }
    router
        .fallback(not_found)
        .method_not_allowed_fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), door))
        .with_state(state)
}

async fn not_found(request: Request) -> EngineError {
    EngineError::new(
        Code::NotFound,
        format!("Not found: {} {}", request.method(), request.uri().path()),
    )
}

/// The door of every request (the guard), then the activity count for the idle exit.
async fn door(State(state): State<Shared>, request: Request, next: Next) -> Response {
    if let Some(refusal) = super::guard::check(request.uri(), request.headers(), &state.token) {
        return refusal.into_response();
    }
    // Held while the answer's head is made; a stream or terminal holds its own for its
    // life, so a long terminal session is not idle.
    let _open = state.activity.open();
    next.run(request).await
}
