//! The admission pipeline of every endpoint, in the spec's order: (1) match — done by the
//! router, which only knows table rows; (2) authenticate; (3) policy admission: switch,
//! scopes, rate and concurrency; (4) repeated query parameters; (5) the body limit, before
//! the body is read; (6) the handler; (7) audit, in the listener's
//! [`Front`](super::front::Front).
//!
//! Error bodies are rendered in the [`Shape`] fixed when the router was built: a route's
//! by its endpoint row (in [`Admit`]), anything no route answered in the shape of the router
//! that got the request (in the [`Front`](super::front::Front)).

use crate::error::{ApiError, Code, PendingError, Shape};
use crate::server::SharedState;
use crate::server::audit::AuditInfo;
use crate::server::auth::Identity;
use crate::server::endpoints::{Auth, Endpoint};
use crate::server::policy::limits::Refusal;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use futures::future::Either;
use http_body_util::{BodyExt, Limited};
use std::collections::HashSet;
use std::convert::Infallible;
use std::future::{Future, Ready};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::sync::OwnedSemaphorePermit;

/// The concurrency permit of an admitted call, for handlers that outlive their response: a
/// WebSocket handler moves a clone into its socket task, so the permit is held as long as
/// the socket is open.
#[derive(Clone)]
pub struct ConnectionPermit(pub std::sync::Arc<OwnedSemaphorePermit>);

/// The endpoint a route serves, bound into its pipeline when the router is built.
#[derive(Clone)]
pub struct RouteState {
    pub app: SharedState,
    pub endpoint: &'static Endpoint,
    pub index: usize,
    /// The body shape of the row's errors.
    pub shape: Shape,
}

/// Steps (2) to (5) around one route's handler, as a layer of the route. A service of its
/// own rather than `from_fn`, which boxes the inner service and a future on every request
/// (see [`front`](super::front)).
#[derive(Clone)]
pub struct Admit(pub RouteState);

impl<S> tower::Layer<S> for Admit {
    type Service = Admitted<S>;

    fn layer(&self, inner: S) -> Admitted<S> {
        Admitted {
            route: self.0.clone(),
            inner,
        }
    }
}

/// A route's handler behind its admission.
#[derive(Clone)]
pub struct Admitted<S> {
    route: RouteState,
    inner: S,
}

impl<S> tower::Service<Request> for Admitted<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, Handling<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // Nothing is carried to an audit that writes nothing (an extension costs
        // allocations on every answer).
        let audit = |info| self.route.app.audit.records().then_some(info);
        let shape = self.route.shape;
        let mut info = AuditInfo {
            endpoint: Some(self.route.endpoint.id),
            identity: None,
        };
        match admission(&self.route, req, &mut info) {
            Ok((mut req, permit)) => {
                let permit = permit.map(std::sync::Arc::new);
                if let Some(permit) = &permit {
                    req.extensions_mut()
                        .insert(ConnectionPermit(permit.clone()));
                }
                let after = After {
                    endpoint: self.route.endpoint.id,
                    shape,
                    permit,
                    audit: audit(info),
                };
                Either::Right(Handling {
                    handled: self.inner.call(req),
                    after: Some(after),
                })
            }
            Err(error) => {
                let mut response = error.render(shape);
                if let Some(info) = audit(info) {
                    response.extensions_mut().insert(info);
                }
                Either::Left(std::future::ready(Ok(response)))
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// An admitted call's handler at work, then [`admitted`]. A type of its own rather
    /// than a boxed `async` block, which cost an allocation per request.
    pub struct Handling<F> {
        #[pin]
        handled: F,
        after: Option<After>,
    }
}

/// What an admitted call's answer is given once its handler has answered.
struct After {
    endpoint: &'static str,
    shape: Shape,
    permit: Option<std::sync::Arc<OwnedSemaphorePermit>>,
    audit: Option<AuditInfo>,
}

impl<F> Future for Handling<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(response) = ready!(this.handled.poll(cx));
        match this.after.take() {
            Some(after) => Poll::Ready(Ok(admitted(response, after))),
            None => panic!("an admitted call polled after it answered"),
        }
    }
}

/// An admitted call's answer: a refusal from inside the handler named like the pipeline's,
/// rendered in the row's shape, holding the call's permit while its body lasts.
fn admitted(mut response: Response, after: After) -> Response {
    // A guard or limit that refuses inside the handler (a chunked body over the limit, a
    // path outside the allowed tree) names the endpoint like the pipeline.
    if let Some(PendingError(error)) = response.extensions_mut().get_mut::<PendingError>()
        && error.code.is_denial()
        && error.endpoint.is_none()
    {
        error.endpoint = Some(after.endpoint);
    }
    response = PendingError::render_in(response, after.shape);
    if let Some(permit) = after.permit {
        response = hold_permit(response, permit);
    }
    if let Some(audit) = after.audit {
        response.extensions_mut().insert(audit);
    }
    response
}

fn admission(
    route: &RouteState,
    mut req: Request,
    audit: &mut AuditInfo,
) -> Result<(Request, Option<OwnedSemaphorePermit>), ApiError> {
    let app = &route.app;
    let endpoint = route.endpoint;

    refuse_web_page_socket(&req)?;

    let identity = if endpoint.auth == Auth::Public {
        None
    } else {
        let identity = app.settings.identities.authenticate(req.headers())?;
        audit.identity = Some(identity.id.clone());
        Some(identity)
    };

    let decision = app.policy.decision(route.index);
    if !decision.enabled {
        return Err(ApiError::new(
            Code::EndpointDisabled,
            format!(
                "the endpoint `{}` is disabled by {}",
                endpoint.id, decision.rule
            ),
        )
        .with_endpoint(endpoint.id)
        .with_rule(decision.rule.clone()));
    }
    if let Some(identity) = &identity
        && let Some(scope) = identity.missing_scope(endpoint.scopes)
    {
        return Err(ApiError::new(
            Code::MissingScope,
            format!(
                "the identity `{}` lacks the scope `{scope}` that `{}` needs",
                identity.id, endpoint.id
            ),
        )
        .with_endpoint(endpoint.id));
    }
    let limiter = app.policy.limiter(route.index);
    let permit = if limiter.is_unlimited() {
        None
    } else {
        let key = identity.as_ref().map_or("-", |i| i.id.as_str());
        limiter
            .admit(key)
            .map_err(|refusal| match refusal {
                Refusal::Rate { retry_after_secs } => ApiError::new(
                    Code::RateLimited,
                    format!(
                        "rate limit of `{}` reached; retry after {retry_after_secs} s",
                        endpoint.id
                    ),
                )
                .with_retry_after(retry_after_secs),
                Refusal::Concurrency => ApiError::new(
                    Code::ConcurrencyLimited,
                    format!("`{}` has as many calls in flight as it allows", endpoint.id),
                )
                .with_retry_after(1),
            })
            .map_err(|e| e.with_endpoint(endpoint.id))?
    };

    if let Some(query) = req.uri().query() {
        reject_repeated_parameters(query).map_err(|e| e.with_endpoint(endpoint.id))?;
    }

    let limit = app.settings.limits[route.index].body_bytes;
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(too_large(limit).with_endpoint(endpoint.id));
    }
    // Bodies without a declared length (chunked) are cut off while they are read; a body
    // already at its end (a GET's) has nothing to cut and keeps its own type. The row's
    // limit is the only one: axum's own (2 MiB for its extractors) is turned off, and only
    // where there is a body for it to apply to, since marking it costs an allocation.
    if !http_body::Body::is_end_stream(req.body()) {
        let limit_usize = usize::try_from(limit).unwrap_or(usize::MAX);
        req = req.map(|body| Body::new(Limited::new(body, limit_usize)));
        axum::extract::DefaultBodyLimit::disable().apply(&mut req);
    }

    if let Some(identity) = identity {
        req.extensions_mut().insert::<Identity>(identity);
    }
    Ok((req, permit))
}

/// A browser sends `Origin` on every WebSocket handshake and lets any page open one to any
/// host, so a page the user visits could drive a socket (type into a shell, run a
/// response) with credentials the browser holds; programs send none. Refused on every
/// route, before anything is looked up, as the engine's door does.
fn refuse_web_page_socket(req: &Request) -> Result<(), ApiError> {
    let headers = req.headers();
    let upgrade = headers
        .get_all(http::header::UPGRADE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("websocket"));
    // HTTP/2's extended CONNECT (RFC 8441) opens a WebSocket without an `Upgrade` header.
    let connect = req.method() == http::Method::CONNECT
        && req
            .extensions()
            .get::<hyper::ext::Protocol>()
            .is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"));
    if (upgrade || connect) && headers.contains_key(http::header::ORIGIN) {
        return Err(ApiError::new(
            Code::OriginRefused,
            "a WebSocket handshake with an Origin header (a web page) is refused: connect from a program",
        ));
    }
    Ok(())
}

fn too_large(limit: u64) -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!("the request body is over the limit of {limit} bytes"),
    )
}

fn reject_repeated_parameters(query: &str) -> Result<(), ApiError> {
    let mut seen = HashSet::new();
    for (name, _) in form_urlencoded::parse(query.as_bytes()) {
        if !seen.insert(name.clone()) {
            return Err(ApiError::new(
                Code::DuplicateParameter,
                format!("the query parameter `{name}` is repeated; send it once"),
            )
            .with_param(name.into_owned()));
        }
    }
    Ok(())
}

/// Keeps the concurrency permit until the response body (a stream, or an upgraded socket's
/// response) is finished or dropped.
fn hold_permit<P: Send + Sync + 'static>(response: Response, permit: P) -> Response {
    response.map(move |body| {
        Body::new(body.map_frame(move |frame| {
            let _held = &permit;
            frame
        }))
    })
}

/// The longest request target (path and query) served; a longer one is a typed 414. Well
/// below hyper's own limit (64 KiB), so every answer to a long URI is typed.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most header bytes (names and values) a request may carry; more is a typed 431. Well
/// below hyper's own read buffer (about 400 KiB), past which hyper answers an untyped 431.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The HTTP layer's size limits, answered as typed errors before any routing.
pub(super) fn over_http_limits(req: &Request) -> Option<ApiError> {
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > MAX_URI_BYTES {
        return Some(ApiError::new(
            Code::UriTooLong,
            format!("the request target is {target} bytes, over the limit of {MAX_URI_BYTES}"),
        ));
    }
    let headers: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    (headers > MAX_HEADER_BYTES).then(|| {
        ApiError::new(
            Code::HeadersTooLarge,
            format!(
                "the request headers are {headers} bytes, over the limit of {MAX_HEADER_BYTES}"
            ),
        )
    })
}

/// An error answer that our own code did not build (a framework rejection) still leaves as
/// a typed body.
pub(super) fn safety_net(status: http::StatusCode, path: &str) -> ApiError {
    match status.as_u16() {
        404 | 405 => ApiError::not_found(path),
        413 => ApiError::new(
            Code::PayloadTooLarge,
            "the request body is over the size limit",
        ),
        400..=499 => ApiError::new(
            Code::InvalidRequest,
            format!("the request was refused ({status})"),
        ),
        _ => ApiError::new(
            Code::Internal,
            "internal error; the server log has the details",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_are_named() {
        assert!(reject_repeated_parameters("a=1&b=2").is_ok());
        let e = reject_repeated_parameters("a=1&b=2&a=3").unwrap_err();
        assert_eq!(e.code, Code::DuplicateParameter);
        assert_eq!(e.param.as_deref(), Some("a"));
        // The same name percent-encoded is still the same parameter.
        assert!(reject_repeated_parameters("ab=1&a%62=2").is_err());
    }

    #[test]
    fn a_websocket_handshake_with_an_origin_is_refused() {
        let request = |headers: &[(&str, &str)]| {
            let mut builder = Request::builder().uri("/v1/responses");
            for (name, value) in headers {
                builder = builder.header(*name, *value);
            }
            builder.body(Body::empty()).unwrap()
        };
        let socket = [("upgrade", "WebSocket"), ("connection", "upgrade")];
        let e = refuse_web_page_socket(&request(&[socket[0], socket[1], ("origin", "null")]))
            .unwrap_err();
        assert_eq!(e.code, Code::OriginRefused);
        assert!(refuse_web_page_socket(&request(&socket)).is_ok());
        assert!(refuse_web_page_socket(&request(&[("origin", "https://a.example")])).is_ok());
    }

    /// The row's limit (10 MiB by default) is the only one a body meets: axum's own, 2 MiB
    /// for its extractors, is off for every admitted request that has a body.
    #[tokio::test]
    async fn a_body_over_axums_own_limit_and_under_the_rows_is_read_whole() {
        use crate::server::config::{DEFAULT_MAX_BODY_BYTES, Settings};
        use crate::server::endpoints::ENDPOINTS;
        use tower::ServiceExt;
        let (index, endpoint) = ENDPOINTS
            .iter()
            .enumerate()
            .find(|(_, e)| e.auth == Auth::Public)
            .expect("a public row");
        let route = RouteState {
            app: crate::server::AppState::with_settings(Settings::defaults()),
            endpoint,
            index,
            shape: Shape::Flat,
        };
        let read: axum::routing::MethodRouter<(), Infallible> =
            axum::routing::post(|body: bytes::Bytes| async move { body.len().to_string() })
                .layer(Admit(route));
        let len = 3 * 1024 * 1024;
        assert!(len < DEFAULT_MAX_BODY_BYTES as usize);
        for declared in [true, false] {
            let body = if declared {
                Body::from(vec![b'x'; len])
            } else {
                // Chunked: no declared length, cut off only by the row's limit.
                Body::from_stream(futures::stream::iter(
                    (0..3).map(|_| Ok::<_, std::io::Error>(vec![b'x'; 1024 * 1024])),
                ))
            };
            let mut request = Request::post("/").body(body).unwrap();
            if declared {
                request
                    .headers_mut()
                    .insert(http::header::CONTENT_LENGTH, len.into());
            }
            let response = read.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status(), 200, "declared length: {declared}");
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], len.to_string().as_bytes());
        }
    }

    #[tokio::test]
    async fn a_streaming_body_holds_its_concurrency_permit_until_it_ends() {
        let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(1));
        let permit = semaphore.clone().try_acquire_owned().unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(1);
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        let response = Response::new(Body::from_stream(stream));
        let response = hold_permit(response, permit);
        assert_eq!(
            semaphore.available_permits(),
            0,
            "handler returned, stream still open"
        );
        tx.send(Ok(bytes::Bytes::from_static(b"chunk")))
            .await
            .unwrap();
        drop(tx);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"chunk");
        assert_eq!(
            semaphore.available_permits(),
            1,
            "released when the body ended"
        );
    }
}
