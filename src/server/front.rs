//! The front of a listener: the first and last step of every request, before any route.
//! It answers the HTTP layer's size limits, sends the request to the router of its body
//! shape (the `/v1` prefix is where the agents group, the OpenAI-style shape, lives),
//! renders in that shape every error no route rendered (unmatched paths and methods, a
//! caught panic, a framework rejection), marks every answer as local and writes the audit
//! entry (step 7 of [`pipeline`](super::pipeline)).
//!
//! One hand-written service rather than a middleware per step: each `from_fn` layer boxes
//! its inner service and its future on every request, and `just bench`'s layer timing
//! showed the outer steps costing more than the admission itself.

use super::SharedState;
use super::pipeline::{over_http_limits, safety_net};
use crate::error::{ApiError, Code, ErrorMeta, PendingError, Shape};
use axum::Router;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use futures::future::{CatchUnwind, Either};
use http::{HeaderName, HeaderValue};
use std::convert::Infallible;
use std::future::{Future, Ready};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;
use tower::Service;

/// A listener's two routers, one per body shape, and the state its audit writes to.
#[derive(Clone)]
pub struct Front {
    app: SharedState,
    openai: Router,
    flat: Router,
}

/// A handler's panic (the default hook has logged it), as the typed 500.
fn panic_answer(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::new(
        Code::Internal,
        "internal error; the server log has the details",
    )
    .into_response()
}

impl Front {
    pub fn new(app: SharedState, openai: Router, flat: Router) -> Front {
        Front { app, openai, flat }
    }
}

/// Which of a listener's routers a request goes to (a test checks every row's path agrees
/// with its shape).
pub fn under_v1(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

impl Service<Request> for Front {
    type Response = Response;
    type Error = Infallible;
    type Future = Answering<<Router as Service<Request>>::Future>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Routers are always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // What only the audit needs is kept only for an audit that writes.
        let audited = self.app.audit.records().then(|| Audited {
            app: self.app.clone(),
            method: req.method().clone(),
            started: Instant::now(),
        });
        // A `Uri` shares the request's bytes: kept without copying the path.
        let uri = req.uri().clone();
        let (router, shape) = if under_v1(uri.path()) {
            (&mut self.openai, Shape::OpenAi)
        } else {
            (&mut self.flat, Shape::Flat)
        };
        // The panic net: around the routing and admission, which run here, and around the
        // handler's future (tower-http's `CatchPanic` would box every answer's body).
        let answer = match over_http_limits(&req) {
            Some(error) => Either::Right(std::future::ready(Ok(Ok(error.into_response())))),
            None => match std::panic::catch_unwind(AssertUnwindSafe(|| router.call(req))) {
                Ok(future) => Either::Left(AssertUnwindSafe(future).catch_unwind()),
                Err(panic) => Either::Right(std::future::ready(Err(panic))),
            },
        };
        Answering {
            answer,
            ending: Ending {
                uri,
                shape,
                audited,
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's answer on its way: the router's future under the panic net, or what
    /// was known at once (an answer, or the router's panic); then [`finish`]ed. A type of
    /// its own rather than a boxed `async` block, which cost an allocation and a copy of
    /// the router's future per request.
    pub struct Answering<F> {
        #[pin]
        answer: Either<CatchUnwind<AssertUnwindSafe<F>>, Ready<Caught>>,
        ending: Ending,
    }
}

/// A handler's answer, or its panic.
type Caught = std::thread::Result<Result<Response, Infallible>>;

/// What the answer's end needs of its request.
struct Ending {
    uri: http::Uri,
    shape: Shape,
    audited: Option<Audited>,
}

/// What the audit entry needs besides the path (with the audit off, neither a clone of the
/// shared state, whose count every request would touch, nor a clock read).
struct Audited {
    app: SharedState,
    method: http::Method,
    started: Instant,
}

impl<F> Future for Answering<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let ending = &*this.ending;
        let response = match ready!(this.answer.poll(cx)) {
            Ok(Ok(response)) => response,
            Ok(Err(never)) => match never {},
            Err(panic) => panic_answer(panic),
        };
        let response = shaped(response, ending.shape, &ending.uri);
        Poll::Ready(Ok(finish(ending, response)))
    }
}

/// An answer in the request's body shape: an error a route left pending rendered, and an
/// error no route typed (a framework rejection) given a typed body.
fn shaped(response: Response, shape: Shape, uri: &http::Uri) -> Response {
    let response = PendingError::render_in(response, shape);
    let status = response.status();
    if (status.is_client_error() || status.is_server_error())
        && response.extensions().get::<ErrorMeta>().is_none()
    {
        safety_net(status, uri.path()).render(shape)
    } else {
        response
    }
}

/// The spec's local marker, its name checked when compiled rather than parsed per answer.
const X_SVC_LOCAL: HeaderName = HeaderName::from_static("x-svc-local");

/// The spec's local marker, on every answer (errors included), and the audit entry.
fn finish(ending: &Ending, mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(X_SVC_LOCAL, HeaderValue::from_static("1"));
    if let Some(audited) = &ending.audited {
        let audit = response
            .extensions_mut()
            .remove::<super::audit::AuditInfo>();
        audited.app.audit.record(
            &audited.method,
            ending.uri.path(),
            audit.as_ref(),
            &response,
            audited.started.elapsed(),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::AppState;
    use crate::server::config::Settings;
    use axum::body::Body;
    use axum::routing::get;
    use serde_json::Value;
    use tower::ServiceExt;

    /// A handler that panics while it runs, one that panics when it is called (before any
    /// future exists), and a framework rejection no route typed.
    fn routes() -> Router {
        #[allow(clippy::unused_async)]
        async fn panics_in_future() -> &'static str {
            panic!("a handler's bug")
        }
        let panics_in_call = tower::service_fn(
            |_: Request| -> std::future::Ready<Result<Response, Infallible>> {
                panic!("a service's bug")
            },
        );
        Router::new()
            .route("/later", get(panics_in_future))
            .route("/v1/later", get(panics_in_future))
            .route_service("/now", panics_in_call)
            .route("/rejected", get(|| async { http::StatusCode::BAD_REQUEST }))
    }

    async fn call(path: &str) -> (http::StatusCode, http::HeaderMap, Value) {
        let front = Front::new(
            AppState::with_settings(Settings::defaults()),
            routes(),
            routes(),
        );
        let response = front
            .oneshot(http::Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        (
            parts.status,
            parts.headers,
            serde_json::from_slice(&bytes).unwrap(),
        )
    }

    #[tokio::test]
    async fn a_panic_in_a_handler_is_the_typed_500_of_its_shape() {
        let (status, headers, body) = call("/later").await;
        assert_eq!(status, 500);
        assert_eq!(body["code"], "internal_error", "{body}");
        assert_eq!(headers["x-svc-local"], "1");
        let (status, _, body) = call("/v1/later").await;
        assert_eq!(status, 500);
        assert_eq!(body["error"]["code"], "internal_error", "{body}");
    }

    #[tokio::test]
    async fn a_panic_before_any_future_is_the_typed_500_too() {
        let (status, _, body) = call("/now").await;
        assert_eq!(status, 500);
        assert_eq!(body["code"], "internal_error", "{body}");
    }

    #[tokio::test]
    async fn an_untyped_rejection_leaves_as_a_typed_body() {
        let (status, _, body) = call("/rejected").await;
        assert_eq!(status, 400);
        assert_eq!(body["code"], "invalid_request", "{body}");
    }
}
