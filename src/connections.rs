//! What every listener (the server's main and terminal ports, the engine's) does for its
//! connections besides HTTP itself, so that one client cannot cost another its requests.
//!
//! [`serve`] is the accept loop: a request head must arrive within the header timeout (a
//! silent, half-sent or idle kept connection ends there), and past the connection cap a new
//! connection is answered `503` with `Retry-After` and closed, so a flood of connections
//! meets the cap rather than the process's descriptor limit (where `accept` itself fails
//! and every client waits).
//!
//! A request refused before its body was read ([`ClosingAfterBody`], around every service
//! [`serve`] serves): hyper cannot go on to a next request on that connection until the
//! rest of the body has gone by, and when it has not arrived yet hyper ends the connection,
//! which a keep-alive client only learns when its next request is lost. So such an answer
//! says `Connection: close`, and that connection (only that one) closes lingering
//! ([`Linger`], around every connection's stream): its sending side first, then the client's
//! unread bytes drained for a moment, so the kernel does not answer them with a reset that
//! would destroy the answer on its way. Being in [`serve`], both hold for every listener
//! (the server's main and terminal ports, the engine's, the E2B front's) whatever its
//! stream.

mod head_timer;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use std::convert::Infallible;
use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::{Semaphore, watch};
use tower::{Service, ServiceExt};

/// Marks an error answer to a request that carries a body as its connection's last: the
/// body may not have been read (a refusal by the pipeline, the path guard, a bad query),
/// and a client told opens a new connection instead of losing its next request. An answer
/// to a request with a body that its handler marked last itself (an upload that left the
/// connection out of step) is the same case. Either sets the connection's [`Linger`].
#[derive(Clone)]
struct ClosingAfterBody<S> {
    inner: S,
    linger: Arc<AtomicBool>,
}

impl<S> Service<Request> for ClosingAfterBody<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    /// A request without a body is answered by the inner service's own future, unboxed
    /// and with no clone of the service: the check below is only for bodies.
    type Future = futures::future::Either<
        S::Future,
        Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // HTTP/2 ends a refused stream on its own (RST_STREAM) and forbids `Connection`:
        // only an HTTP/1 connection is left out of step by an unread body.
        let http1 = request.version() < http::Version::HTTP_2;
        let has_body = http1
            && (request.headers().contains_key(header::TRANSFER_ENCODING)
                || request
                    .headers()
                    .get(header::CONTENT_LENGTH)
                    .is_some_and(|len| len.as_bytes() != b"0"));
        if !has_body {
            return futures::future::Either::Left(self.inner.call(request));
        }
        // The service that was polled ready answers; a fresh clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let linger = self.linger.clone();
        futures::future::Either::Right(Box::pin(async move {
            let mut answer = inner.call(request).await?;
            let refused = answer.status().is_client_error() || answer.status().is_server_error();
            if refused {
                answer
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            let closing = answer
                .headers()
                .get(header::CONNECTION)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
            if closing {
                linger.store(true, Ordering::Relaxed);
            }
            Ok(answer)
        }))
    }
}

/// A connection's service as hyper calls it (by `&self`, one request at a time, from the
/// connection's own task), without the clone of the whole service per request that
/// `hyper_util`'s `TowerToHyperService` makes: ours holds the shared state's and both
/// routers' counts, which every request on every thread would touch twice. A service that
/// is not ready at once (none of ours: routers always are) is called as the adapter
/// would, by a clone that waits for its readiness.
struct Called<S>(std::cell::RefCell<S>);

impl<S> hyper::service::Service<http::Request<Incoming>> for Called<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures::future::Either<S::Future, tower::util::Oneshot<S, Request>>;

    fn call(&self, request: http::Request<Incoming>) -> Self::Future {
        let request = request.map(Body::new);
        // hyper calls from the connection's task and never while a call runs: never
        // borrowed twice.
        let mut service = self.0.borrow_mut();
        let mut now = Context::from_waker(std::task::Waker::noop());
        match service.poll_ready(&mut now) {
            Poll::Ready(Ok(())) => futures::future::Either::Left(service.call(request)),
            Poll::Ready(Err(never)) => match never {},
            Poll::Pending => futures::future::Either::Right(service.clone().oneshot(request)),
        }
    }
}

/// The limits of a listener's connections ([`serve`]).
#[derive(Debug, Clone)]
pub struct Limits {
    /// A request head must arrive whole within this long of the connection opening or of the
    /// previous answer's end: a half-sent head and an idle kept connection both end there.
    header_timeout: Duration,
    /// The connections open at once; the server's two listeners share one count.
    open: Arc<Semaphore>,
    /// The whole HTTP/1.1 answer (`503`, `Retry-After`, `Connection: close`) to a connection
    /// past the cap, rendered by the caller from its error table.
    busy: Bytes,
    /// The refusals being written at once: past these a connection past the cap is closed
    /// unanswered, so a flood costs a bounded number of tasks.
    refusing: Arc<Semaphore>,
}

/// Refusals written at once ([`Limits::refusing`]).
const REFUSING: usize = 64;

impl Limits {
    /// At most `max` connections open at once (one count for every listener given a clone),
    /// a request head within `header_timeout`, and past the cap `status` with `refusal` and
    /// `Retry-After` (the status and JSON body of the caller's error table row).
    pub fn new(max: usize, header_timeout: Duration, status: StatusCode, refusal: &[u8]) -> Limits {
        Limits {
            header_timeout,
            open: Arc::new(Semaphore::new(max)),
            busy: raw_answer(status, BUSY_RETRY_AFTER_SECS, refusal),
            refusing: Arc::new(Semaphore::new(REFUSING)),
        }
    }
}

/// The default of `server.connections.header_timeout_secs`.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Seconds a client is told to wait past the cap.
pub const BUSY_RETRY_AFTER_SECS: u64 = 1;

/// The default connection cap: 1,024, or half the descriptors the process may open when
/// that is less (so the cap, not the descriptor limit, is what a flood meets: the other
/// half stays for files, children and the listener's own accept).
pub fn default_max_connections() -> usize {
    use nix::sys::resource::{Resource, getrlimit};
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(u64::MAX, |(soft, _)| soft);
    usize::try_from(soft / 2)
        .unwrap_or(usize::MAX)
        .clamp(16, 1024)
}

/// An HTTP/1.1 answer as bytes: `status` with a JSON `body`, `Retry-After`, and
/// `Connection: close`.
fn raw_answer(status: StatusCode, retry_after_secs: u64, body: &[u8]) -> Bytes {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         retry-after: {retry_after_secs}\r\nconnection: close\r\n\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    Bytes::from(out)
}

/// Serves `listener`'s connections with `service_for(connection)` until `stop` resolves,
/// then lets open ones finish (the caller bounds how long it waits). Each connection is
/// HTTP/1 or HTTP/2 (upgrades, WebSockets included) under `limits`.
pub async fn serve<L, S>(
    mut listener: L,
    limits: Limits,
    mut service_for: impl FnMut(&L::Io) -> S,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let (stopping_tx, stopping_rx) = watch::channel(false);
    let (done_tx, done_rx) = watch::channel(());
    let mut burst = Burst::default();
    let mut stop = std::pin::pin!(stop);
    loop {
        let (io, _peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let Ok(permit) = limits.open.clone().try_acquire_owned() else {
            burst.refused();
            // Past the refusals being written too: closed unanswered.
            if let Ok(refusing) = limits.refusing.clone().try_acquire_owned() {
                let answer = limits.busy.clone();
                tokio::spawn(async move {
                    refuse(io, answer).await;
                    drop(refusing);
                });
            }
            continue;
        };
        burst.accepted();
        let linger = Arc::new(AtomicBool::new(false));
        let service = ClosingAfterBody {
            inner: service_for(&io),
            linger: linger.clone(),
        };
        let header_timeout = limits.header_timeout;
        let mut stopping = stopping_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let io = TokioIo::new(FirstBytes::new(Linger::new(io, linger), header_timeout));
            let service = Called(std::cell::RefCell::new(service));
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(head_timer::HeadTimer::default())
                .header_read_timeout(header_timeout);
            builder
                .http2()
                .timer(TokioTimer::new())
                .enable_connect_protocol();
            let mut conn = std::pin::pin!(builder.serve_connection_with_upgrades(io, service));
            loop {
                tokio::select! {
                    served = conn.as_mut() => {
                        if let Err(e) = served {
                            tracing::trace!("connection ended: {e}");
                        }
                        break;
                    }
                    _ = stopping.wait_for(|s| *s) => conn.as_mut().graceful_shutdown(),
                }
            }
            drop((permit, done));
        });
    }
    drop(listener);
    let _ = stopping_tx.send(true);
    drop(done_rx);
    done_tx.closed().await;
    Ok(())
}

/// Answers a connection past the cap and closes it, without lingering (a short wait: the
/// answer is small).
async fn refuse<I: AsyncWrite + Unpin>(mut io: I, answer: Bytes) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = io.write_all(&answer).await;
        let _ = io.shutdown().await;
    })
    .await;
}

/// Accepts and refusals, logged once per burst (at most one line every [`BURST_LOG`]).
#[derive(Default)]
struct Burst {
    accepted: u64,
    refused: u64,
    logged: Option<Instant>,
}

const BURST_LOG: Duration = Duration::from_secs(10);

impl Burst {
    fn accepted(&mut self) {
        self.accepted += 1;
        self.log(false);
    }

    fn refused(&mut self) {
        self.refused += 1;
        self.log(true);
    }

    fn log(&mut self, warn: bool) {
        if self.logged.is_some_and(|at| at.elapsed() < BURST_LOG) {
            return;
        }
        if warn || self.refused > 0 {
            tracing::warn!(
                accepted = self.accepted,
                refused = self.refused,
                "connections past the cap are refused (503); raise server.connections.max or find the client holding them"
            );
        } else {
            tracing::debug!(accepted = self.accepted, "connections accepted");
        }
        self.accepted = 0;
        self.refused = 0;
        self.logged = Some(Instant::now());
    }
}

/// The writes of a wrapper that watches only reads (or its own close), passed to its `io`
/// as they are; vectored writes whole, since the zero-copy stream recognises its
/// placeholder slices there.
macro_rules! writes_pass_through {
    () => {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
        }

        fn is_write_vectored(&self) -> bool {
            self.io.is_write_vectored()
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.get_mut().io).poll_flush(cx)
        }
    };
}

/// A connection whose first bytes must come within the header timeout: hyper's own timer
/// starts only once it knows the connection is HTTP/1, and it learns that from the bytes
/// (HTTP/2's preface starts `PRI`), so a silent connection, or one that sent `P` and no
/// more, would wait forever. Past the first byte that cannot start the preface (or the
/// whole preface) the deadline is off, and hyper's header timer and HTTP/2's own rules
/// take over.
struct FirstBytes<I> {
    io: I,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    seen: usize,
}

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl<I> FirstBytes<I> {
    fn new(io: I, timeout: Duration) -> FirstBytes<I> {
        FirstBytes {
            io,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
            seen: 0,
        }
    }

    fn saw(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.seen >= H2_PREFACE.len() || H2_PREFACE[self.seen] != b {
                self.deadline = None;
                return;
            }
            self.seen += 1;
        }
        if self.seen >= H2_PREFACE.len() {
            self.deadline = None;
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for FirstBytes<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if this.deadline.is_some() {
                    let new = buf.filled()[before..].to_vec();
                    this.saw(&new);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                let expired = this
                    .deadline
                    .as_mut()
                    .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready());
                if expired {
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no request within the header timeout",
                    )));
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for FirstBytes<I> {
    writes_pass_through!();

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// A connection that closes lingering when its last answer was marked last because of a
/// body it may not have read ([`ClosingAfterBody`] sets `armed`): its sending side is shut,
/// then what the client still sends is drained until the client closes or [`LINGER`] has
/// passed, since closing with unread bytes makes the kernel send a reset, and a reset
/// arriving before the client has read the answer destroys the answer. Any other close is
/// an ordinary one (a lingering close holds its connection's permit).
struct Linger<I> {
    io: I,
    armed: Arc<AtomicBool>,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// How long a closing connection reads what its client still sends (the rest of a body
/// refused unread) before it closes anyway.
const LINGER: Duration = Duration::from_secs(2);

impl<I> Linger<I> {
    fn new(io: I, armed: Arc<AtomicBool>) -> Linger<I> {
        Linger {
            io,
            armed,
            deadline: None,
        }
    }
}

impl<I: AsyncRead + Unpin> Linger<I> {
    /// Drains what the client sends until it closes its side or the deadline has passed.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut scratch = [0u8; 16 * 1024];
        loop {
            if let Some(deadline) = self.deadline.as_mut()
                && deadline.as_mut().poll(cx).is_ready()
            {
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut self.io).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Linger<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Linger<I> {
    writes_pass_through!();

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.deadline.is_none() {
            std::task::ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            if !this.armed.load(Ordering::Relaxed) {
                return Poll::Ready(Ok(()));
            }
            this.deadline = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        this.poll_drain(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A service not ready when first asked (and ready once woken), which answers 500 to a
    /// call that did not follow its own readiness, as tower's contract requires.
    #[derive(Clone)]
    struct ReadyLater {
        asked: Arc<std::sync::atomic::AtomicUsize>,
        ready: bool,
    }

    impl Service<Request> for ReadyLater {
        type Response = Response;
        type Error = Infallible;
        type Future = std::future::Ready<Result<Response, Infallible>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            if self.asked.fetch_add(1, Ordering::SeqCst) == 0 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.ready = true;
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request) -> Self::Future {
            let status = match std::mem::take(&mut self.ready) {
                true => StatusCode::OK,
                false => StatusCode::INTERNAL_SERVER_ERROR,
            };
            std::future::ready(Ok(status.into_response()))
        }
    }

    use axum::response::IntoResponse;

    #[tokio::test]
    async fn a_service_not_ready_at_once_is_called_once_it_is() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let service = ReadyLater {
            asked: asked.clone(),
            ready: false,
        };
        let limits = Limits::new(
            8,
            DEFAULT_HEADER_TIMEOUT,
            StatusCode::SERVICE_UNAVAILABLE,
            b"{}",
        );
        tokio::spawn(serve(
            listener,
            limits,
            move |_: &tokio::net::TcpStream| service.clone(),
            std::future::pending(),
        ));
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            asked.load(Ordering::SeqCst) >= 2,
            "the first ask was not ready"
        );
    }
}
