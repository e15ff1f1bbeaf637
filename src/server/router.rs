//! The router, built from the endpoint table and nothing else: one route per row, each
//! behind its own admission pipeline. Unmatched paths and methods get the typed 404.
//!
//! The body shape of errors is fixed here: each row's routes render in the shape of their
//! row ([`shape_of`]), and a listener is split into one router per shape, each answering
//! what no route matched in its own shape. Requests are sent to a router by the `/v1`
//! prefix, which is where the agents group (the OpenAI-style shape) lives.

use super::groups::agents;

use crate::error::{ApiError, Code, Shape};
use crate::server::SharedState;
use crate::server::endpoints::{ENDPOINTS, Endpoint, Group, Method, Port, Status};
use crate::server::front::Front;
use crate::server::pipeline::{Admit, RouteState};
use crate::server::route::{Bound, on};
use axum::Router;
use axum::routing::MethodFilter;
use http::Uri;

/// The main listener's routes.
pub fn app(state: SharedState) -> Router {
    build(state, Port::Main)
}

/// The terminal listener's routes (the PTY WebSocket).
pub fn terminal_app(state: SharedState) -> Router {
    build(state, Port::Terminal)
}

fn build(state: SharedState, port: Port) -> Router {
    let front = front(&state, port);
    Router::new().fallback_service(front).with_state(state)
}

/// A listener's whole service: what `svc serve` serves on each connection of its main
/// listener, without the outer [`Router`] of [`app`] (which a test drives with `oneshot`),
/// whose fallback step cost a clone and a box per request.
pub fn front(state: &SharedState, port: Port) -> Front {
    Front::new(
        state.clone(),
        part(state, port, Shape::OpenAi),
        part(state, port, Shape::Flat),
    )
}

/// The body shape of a row's errors: the agents group answers the OpenAI-style object of
/// its document, every other group the flat server body.
pub fn shape_of(endpoint: &Endpoint) -> Shape {
    match endpoint.group {
        Group::Agents => Shape::OpenAi,
        _ => Shape::Flat,
    }
}

/// The router of one body shape: the rows of that shape, and the typed answers for what
/// none of them matched, rendered in that shape. Public for the pipeline benchmark, which
/// times it without the listener's outer layer.
pub fn part(state: &SharedState, port: Port, shape: Shape) -> Router {
    let mut router = Router::new();
    let rows = ENDPOINTS
        .iter()
        .enumerate()
        .filter(|(_, e)| e.port == port && shape_of(e) == shape);
    for (index, endpoint) in rows {
        let route_state = RouteState {
            app: state.clone(),
            endpoint,
            index,
            shape,
        };
        let method_router = handler(endpoint).admitted(Admit(route_state));
        router = router.route(endpoint.path, method_router);
    }
    // The panic net is put around it by the listener's front; axum's body limit is turned
    // off by each route's admission where a request has a body.
    router
        .fallback(unmatched)
        .method_not_allowed_fallback(unmatched)
        .with_state(state.clone())
}

fn filter(method: Method) -> MethodFilter {
    match method {
        Method::Get => MethodFilter::GET,
        Method::Post => MethodFilter::POST,
        Method::Put => MethodFilter::PUT,
        Method::Delete => MethodFilter::DELETE,
    }
}

/// The handler of a row: its group binds it by the row's checked name; a refusal row
/// answers its typed refusal; a row no group binds yet answers one typed 501.
fn handler(endpoint: &'static Endpoint) -> Bound {
    let f = filter(endpoint.method);
    if let Status::Refusal(why) = endpoint.status {
        return on(f, move || agents::refusal(endpoint, why));
    }
    crate::server::registry::handler(endpoint, f)
        .unwrap_or_else(|| on(f, move || not_implemented(endpoint)))
}

async fn not_implemented(endpoint: &'static Endpoint) -> ApiError {
    let by = match endpoint.status {
        Status::Pending(by) => by,
        _ => "a later version",
    };
    ApiError::new(
        Code::NotImplemented,
        format!("`{}` is not implemented yet (planned: {by})", endpoint.id),
    )
    .with_endpoint(endpoint.id)
}

async fn unmatched(uri: Uri) -> ApiError {
    ApiError::not_found(uri.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_routed_to_the_router_of_its_shape() {
        use crate::server::front::under_v1;
        for endpoint in ENDPOINTS {
            assert_eq!(
                under_v1(endpoint.path),
                shape_of(endpoint) == Shape::OpenAi,
                "{} {}",
                endpoint.id,
                endpoint.path
            );
        }
    }

    #[test]
    fn every_implemented_row_has_a_handler_and_no_other_does() {
        for endpoint in ENDPOINTS {
            assert_eq!(
                crate::server::registry::handler(endpoint, filter(endpoint.method)).is_some(),
                endpoint.status == Status::Implemented,
                "{}",
                endpoint.id
            );
        }
    }

    /// A row no group serves yet answers one typed 501 naming it and the work that builds
    /// it. Proven here since every row of the table is served (the conformance suite has
    /// no pending endpoint left to call).
    #[tokio::test]
    async fn a_pending_row_answers_not_implemented() {
        static PENDING: Endpoint = Endpoint {
            status: Status::Pending("a later issue"),
            ..ENDPOINTS[0]
        };
        let error = not_implemented(&PENDING).await;
        assert_eq!(error.code, Code::NotImplemented);
        assert_eq!(error.code.status().as_u16(), 501);
        assert!(
            error.message.contains("planned: a later issue"),
            "{}",
            error.message
        );
    }
}
