//! Zero-copy file answers and uploads: over HTTP/1 the bytes of a file read (the server's
//! `GET /files/content` and `GET /files/download`, the engine's `files/content` of a `local`
//! sandbox) go from the page cache to the socket with `sendfile(2)`, never through the
//! process's memory (a read and a copy less per byte than a streaming reader;
//! `benches/files.rs` measures it against `cp`), and the bytes of a file write go from the
//! socket into the file with `splice(2)` ([`upload`] says how the handover with hyper stays
//! exact). The server's main listener and the engine's listener are both a [`Listener`];
//! nothing of the crate but the file service is imported here.
//!
//! hyper writes the body, and hyper takes bytes, not files. So the connection's stream is
//! ours: [`Listener`] hands out [`Stream`]s, and each connection's [`FileChannel`] reaches the
//! handlers that want it as a [`Channel`]. A file answer registers its file on its connection
//! ([`FileChannel::body`]) and gives hyper a body of the same length cut from one static
//! placeholder; when hyper writes placeholder bytes, the stream sends as many bytes of the
//! file instead. hyper's HTTP/1 writer queues body chunks and writes them with `writev` when
//! the stream says it writes vectored (ours does), so placeholder bytes reach the stream by
//! their address, never copied; the tests (`tests.rs` here, and the server's
//! `zero_copy_tests.rs` through a real listener) check every byte, so a hyper that copied
//! them would fail there.
//!
//! Only HTTP/1 answers use it (HTTP/2 interleaves many answers on one connection and frames
//! the data itself); elsewhere, and without a channel (`oneshot` tests), [`file_body`] falls
//! back to the file service's streaming reader. HTTP/1 answers one request at a time per
//! connection, so a connection holds at most one file. A file that shrinks under `sendfile`
//! ends the answer with an error, as the reader does; placeholder bytes without a file are an
//! error too, never zeros on the wire. `sendfile` of cached pages is a copy in the kernel. An
//! answer longer than [`MAX_SEND`] is sent from a thread of its own ([`send`]), which neither
//! goes back through the runtime each time the socket's buffer fills nor reads a cold file
//! on a thread other connections share; a shorter one inline, on the runtime's thread.

use crate::services::files::ReadFile;
use axum::body::Body;
use axum::response::IntoResponse;
use bytes::Bytes;
use http::Version;
use std::fs::File;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// The bytes one placeholder chunk covers (a static buffer of zeros that is never sent, nor
/// ever touched, so it takes no memory). As large as one `sendfile` may be ([`MAX_SEND`]):
/// hyper flushes after each chunk larger than its write buffer, so with 1 MiB chunks every
/// `sendfile` was at most 1 MiB, and a 100 MiB read ran at 0.78 of the file-over-TCP floor
/// where 4 MiB chunks bring it to 0.83-1.00.
pub(crate) const PLACEHOLDER_LEN: usize = 4 * 1024 * 1024;
static PLACEHOLDER: [u8; PLACEHOLDER_LEN] = [0; PLACEHOLDER_LEN];

/// Bytes one `sendfile` call sends at most (it blocks the thread while it reads a cold
/// file's pages).
pub const MAX_SEND: usize = 4 * 1024 * 1024;

/// Whether `slice` lies in the placeholder (by address: its contents mean nothing).
fn is_placeholder(slice: &[u8]) -> bool {
    let start = PLACEHOLDER.as_ptr() as usize;
    let at = slice.as_ptr() as usize;
    !slice.is_empty() && at >= start && at + slice.len() <= start + PLACEHOLDER_LEN
}

/// The file a connection is sending: `left` bytes from `offset`.
#[derive(Debug)]
struct Job {
    file: File,
    offset: i64,
    left: u64,
    /// Who sends it: decided at hyper's first offer of its bytes.
    sending: Sending,
}

#[derive(Debug)]
enum Sending {
    /// Nothing offered yet.
    Undecided,
    /// A thread of its own ([`send`]: a large answer).
    Thread(send::Sender),
    /// The connection's stream, on the runtime (a short answer, or no thread to be had).
    Inline,
}

/// One connection's file slot, shared by its [`Stream`] and the handlers of its requests.
#[derive(Debug, Clone, Default)]
pub struct FileChannel {
    job: Arc<Mutex<Option<Job>>>,
    /// The request body being received into a file, if any (see [`upload`]).
    intake: upload::IntakeSlot,
    /// The answer body being passed on from another socket, if any (see [`socket`]).
    splice: socket::Slot,
    /// Chunks written from outside hyper (see [`direct`]).
    direct: direct::Slot,
}

impl FileChannel {
    /// A body of `len` placeholder bytes that this connection's stream replaces by `len`
    /// bytes of `file` from `start`. Replaces a file an earlier answer registered and never
    /// sent (a HEAD, a dropped answer).
    pub fn body(&self, file: File, start: u64, len: u64) -> Body {
        let Ok(offset) = i64::try_from(start) else {
            return Body::empty();
        };
        // One body per connection at a time: placeholder bytes must find this file.
        *self.splice.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.job.lock().unwrap_or_else(|e| e.into_inner()) = Some(Job {
            file,
            offset,
            left: len,
            sending: Sending::Undecided,
        });
        let chunks = (0..len.div_ceil(PLACEHOLDER_LEN as u64)).map(move |i| {
            let n = (len - i * PLACEHOLDER_LEN as u64).min(PLACEHOLDER_LEN as u64) as usize;
            Ok::<_, io::Error>(Bytes::from_static(&PLACEHOLDER[..n]))
        });
        Body::from_stream(futures::stream::iter(chunks))
    }

    /// The connection's slot for chunks written from outside hyper ([`direct`]).
    pub fn direct(&self) -> &direct::Slot {
        &self.direct
    }

    /// Whether the connection closes after the current answer: an upload on it took its
    /// body past hyper ([`upload::BYPASS_FROM`]) or went out of step, so hyper's framing
    /// cannot go on to a next request.
    pub fn closing(&self) -> bool {
        upload::broken(&self.intake)
    }
}

/// The answer to a file write whose body came as an [`upload_body`] on `channel`, marked as
/// its connection's last (`Connection: close`) when the upload left the connection closing
/// ([`FileChannel::closing`]). hyper closes such a connection after the answer anyway, but
/// says so in the answer only when it noticed before writing the head, which depends on
/// the order its tasks ran in; a client told opens a new connection rather than find this
/// one closed under its next request.
pub fn upload_answer(
    channel: Option<&FileChannel>,
    written: Result<impl IntoResponse, impl IntoResponse>,
) -> axum::response::Response {
    let mut answer = match written {
        Ok(done) => done.into_response(),
        Err(refused) => refused.into_response(),
    };
    if channel.is_some_and(FileChannel::closing) {
        answer.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
    answer
}

tokio::task_local! {
    /// The connection's channel, while its service answers a request ([`WithChannel`]).
    static CHANNEL: FileChannel;
}

/// The connection's file channel when an answer can use it (HTTP/1, over a [`Listener`]);
/// `None` elsewhere (HTTP/2, `oneshot` tests). An extractor, read from the connection's
/// task, where [`WithChannel`] put it for the request's answer.
pub struct Channel(pub Option<FileChannel>);

impl<S: Sync> axum::extract::FromRequestParts<S> for Channel {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        _: &S,
    ) -> Result<Channel, Self::Rejection> {
        let http1 = parts.version == Version::HTTP_11 || parts.version == Version::HTTP_10;
        let channel = http1.then(|| CHANNEL.try_with(FileChannel::clone).ok());
        Ok(Channel(channel.flatten()))
    }
}

/// A request body to write into a file: over a channel, with a declared length and no
/// transfer coding, the connection places its rest in the file itself (see [`upload`]);
/// otherwise it is passed on as it comes.
pub fn upload_body<B>(
    channel: Option<FileChannel>,
    headers: &http::HeaderMap,
    body: B,
) -> Upload<B> {
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let coded = headers.contains_key(http::header::TRANSFER_ENCODING);
    match (channel, declared) {
        (Some(channel), Some(len)) if !coded && len > 0 => channel.upload(body, len),
        _ => Upload::plain(body, declared.filter(|_| !coded)),
    }
}

/// The body of a file answer: sent by the connection from the file (`channel`), else
/// streamed by the file service's reader.
pub fn file_body(channel: Option<FileChannel>, file: ReadFile) -> Body {
    match channel {
        Some(channel) if file.len > 0 => channel.body(file.file, file.start, file.len),
        _ => Body::from_stream(file.into_stream()),
    }
}

/// What a listener's `service_for` gives each [`Stream`]'s connection: `service` (the
/// server's front, the engine's router) answering with the connection's [`FileChannel`]
/// at hand ([`crate::connections::serve`]).
pub fn with_channel<S: Clone>(service: S) -> impl FnMut(&Stream) -> WithChannel<S> {
    move |io: &Stream| WithChannel::new(service.clone(), io.channel().clone())
}

/// A service that answers each request with one connection's [`FileChannel`] in reach of
/// its handlers ([`Channel`]). A task-local rather than a request extension, which cost
/// two allocations on every request (the extension map and the boxed value) where a few
/// routes use it; the answer is polled in the connection's task, where the scope holds.
/// Not `Router::layer` either, which would rebuild every route for each connection and box
/// each request once more.
#[derive(Clone)]
pub struct WithChannel<S = axum::Router> {
    service: S,
    channel: FileChannel,
}

impl<S> WithChannel<S> {
    pub fn new(service: S, channel: FileChannel) -> WithChannel<S> {
        WithChannel { service, channel }
    }
}

impl<S> tower::Service<axum::extract::Request> for WithChannel<S>
where
    S: tower::Service<axum::extract::Request>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = tokio::task::futures::TaskLocalFuture<FileChannel, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, req: axum::extract::Request) -> Self::Future {
        CHANNEL.scope(self.channel.clone(), self.service.call(req))
    }
}

/// A TCP listener whose connections can send files with `sendfile` (TCP_NODELAY set: streams
/// write many small frames, and each could wait on the peer's delayed ACK).
pub struct Listener(pub TcpListener);

impl axum::serve::Listener for Listener {
    type Io = Stream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Stream, SocketAddr) {
        loop {
            match self.0.accept().await {
                Ok((tcp, addr)) => {
                    if let Err(e) = tcp.set_nodelay(true) {
                        tracing::debug!("cannot set TCP_NODELAY: {e}");
                    }
                    let channel = FileChannel::default();
                    return (Stream::new(tcp, channel), addr);
                }
                // A connection that died before it was accepted: take the next.
                Err(e) if is_connection_error(&e) => {}
                // Out of descriptors or memory: wait rather than spin (as axum's own does).
                Err(e) => {
                    tracing::error!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// A connection: reads and writes pass through to TCP, except placeholder bytes, which are
/// sent from the connection's file (or spliced from its other socket, [`socket`]).
#[derive(Debug)]
pub struct Stream {
    tcp: TcpStream,
    channel: FileChannel,
}

impl Stream {
    fn new(tcp: TcpStream, channel: FileChannel) -> Stream {
        channel.direct.open(std::os::fd::AsRawFd::as_raw_fd(&tcp));
        Stream { tcp, channel }
    }

    /// The channel of this connection's requests.
    pub fn channel(&self) -> &FileChannel {
        &self.channel
    }

    /// Sends up to `want` bytes of the registered file.
    fn poll_send_file(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<io::Result<usize>> {
        let mut slot = self.channel.job.lock().unwrap_or_else(|e| e.into_inner());
        let Some(job) = slot.as_mut() else {
            return Poll::Ready(Err(io::Error::other(
                "a file answer's bytes came without its file",
            )));
        };
        let want = want.min(job.left as usize);
        if want == 0 {
            return Poll::Ready(Err(io::Error::other(
                "a file answer is longer than its file",
            )));
        }
        if let Sending::Undecided = job.sending {
            let socket = std::os::fd::AsFd::as_fd(&self.tcp);
            job.sending = send::Sender::start(socket, &job.file, job.offset, job.left)
                .map_or(Sending::Inline, Sending::Thread);
        }
        let sent = match &mut job.sending {
            Sending::Thread(sender) => ready!(sender.poll_send(cx, want)),
            Sending::Undecided | Sending::Inline => match ready!(poll_sendfile(
                &self.tcp,
                cx,
                &job.file,
                &mut job.offset,
                want
            )) {
                Ok(0) => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file shrank while it was sent",
                )),
                other => other,
            },
        };
        match sent {
            Ok(n) => {
                #[cfg(test)]
                SENT_HERE.set(SENT_HERE.get() + n as u64);
                job.left -= n as u64;
                if job.left == 0 {
                    *slot = None;
                }
                Poll::Ready(Ok(n))
            }
            // The answer is over: hyper closes the connection (a sending thread is told,
            // as the job goes).
            Err(e) => {
                *slot = None;
                Poll::Ready(Err(e))
            }
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Bytes file answers sent with `sendfile` on this thread: the tests' proof that the
    /// path was taken (per thread, as `upload::PLACED_HERE`).
    static SENT_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bytes file answers sent on this thread so far (see `SENT_HERE`).
#[cfg(test)]
pub(crate) fn sent_here() -> u64 {
    SENT_HERE.get()
}

/// One `sendfile(2)` of up to `want` bytes of `file` from `offset` (moved on by what was
/// sent) to `tcp`, once it is writable; at most [`MAX_SEND`]. Ready with the bytes sent, 0
/// when the file has none left there. Shared by a connection's file answers and the
/// engine's client, which sends an upload's file the same way (`client::raw_files`).
pub(crate) fn poll_sendfile(
    tcp: &TcpStream,
    cx: &mut Context<'_>,
    file: &File,
    offset: &mut i64,
    want: usize,
) -> Poll<io::Result<usize>> {
    let want = want.min(MAX_SEND);
    loop {
        ready!(tcp.poll_write_ready(cx))?;
        let sent = tcp.try_io(Interest::WRITABLE, || {
            nix::sys::sendfile::sendfile64(tcp, file, Some(&mut *offset), want)
                .map_err(io::Error::from)
        });
        match sent {
            // Not writable after all: `try_io` cleared the readiness; wait again.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            other => return Poll::Ready(other),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match upload::poll_read_into_file(&this.channel.intake, &this.tcp, cx, buf) {
            Some(placed) => placed,
            None => Pin::new(&mut this.tcp).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    /// Leading plain slices go out in one `writev`; leading placeholder slices are one
    /// `sendfile` of as many file bytes.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let bufs = match bufs.iter().position(|b| !b.is_empty()) {
            Some(first) => &bufs[first..],
            None => return Poll::Ready(Ok(0)),
        };
        ready!(this.channel.direct.poll_before_write(&mut this.tcp, cx))?;
        if is_placeholder(&bufs[0]) {
            let want = bufs
                .iter()
                .take_while(|b| is_placeholder(b))
                .map(|b| b.len())
                .sum();
            if let Some(sent) = socket::poll_send(&this.channel.splice, &this.tcp, cx, want) {
                return sent;
            }
            return this.poll_send_file(cx, want);
        }
        let plain = bufs
            .iter()
            .position(|b| is_placeholder(b))
            .unwrap_or(bufs.len());
        Pin::new(&mut this.tcp).poll_write_vectored(cx, &bufs[..plain])
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.channel.direct.poll_flush(&mut this.tcp, cx))?;
        Pin::new(&mut this.tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.channel.direct.close();
        Pin::new(&mut this.tcp).poll_shutdown(cx)
    }
}

impl Drop for Stream {
    /// The slot lets go of the socket before it is closed, and a file still being sent
    /// stops (its thread holds a descriptor of the socket of its own).
    fn drop(&mut self) {
        self.channel.direct.close();
        self.channel
            .job
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

/// Chunks written into a streamed answer from outside hyper's task.
pub mod direct;
#[cfg(test)]
mod direct_tests;
/// Shared with the engine's client, which receives a downloaded file the same way.
pub(crate) mod drain;
/// The HTTP/1.1 framing around a body the engine's client or the `rest` provider moves
/// with `sendfile` or `splice` itself.
pub(crate) mod http1;
/// A thread's error for every waiter.
mod kept_error;
/// The socket's low-water mark while a drain waits on it.
mod low_water;
/// The pipe both splices go through.
mod pipe;
/// A large file answer's own sending thread; the engine's client sends an upload with it.
pub(crate) mod send;
/// A file answer whose bytes come from another socket (the `rest` provider's remote).
mod socket;
#[cfg(test)]
pub(crate) mod tests;
mod upload;
#[cfg(test)]
pub(crate) use socket::spliced_here;
pub use socket::{SocketBody, socket_body};
#[cfg(test)]
pub(crate) use upload::placed_here;
pub use upload::{Arming, Upload};
