//! The sessions bench's SSE fan-out: the time from the POST that makes a turn to each
//! follower of the session receiving its `agent.session.turn.created` frame, and the same
//! measured against a floor in the same run.
//!
//! The floor is a bare axum server with one route whose body waits on a watch and then
//! yields one fixed frame of the size of svc's (572 bytes), and one route that sends on the
//! watch: what any tokio/hyper server pays to wake a thousand streams and write to them,
//! with nothing of svc's; and the same route starting the turn's runtime as svc's POST
//! does (rt-one, its output read to the end), the work of the trigger without svc's
//! writing. Under them the physical floor ([`raw_floor_server`]): no HTTP
//! framework, one task writing the frame to every socket in a loop. All are followed by the
//! same clients in the same way.
//!
//! The followers run on a thread and runtime of their own, as separate client processes
//! would. Each follower's reader is started, its buffer allocated, before the POST: a
//! client's own set-up is not the server's cost (an earlier version spawned the readers
//! and zeroed 64 MiB of buffers after the clock started, which the figures then included).
//! Each follower stays connected until every one has seen its frame, and every server's
//! stream stays open after the frame: until the fourteenth session each follower hung up
//! as soon as it saw the frame, so svc and bare axum handled a thousand closes while still
//! writing to the rest (the physical floor, which closed its own sockets, did not), and the
//! figures measured that storm as much as the fan-out.

use futures::StreamExt;
use std::time::Instant;

/// The line every follower waits for.
pub const NEEDLE: &[u8] = b"event: agent.session.turn.created\n";

/// What one round is run against: where the followers connect and what makes the frame.
pub struct Target {
    /// `host:port`.
    pub authority: String,
    pub path: String,
    /// The request that makes the frame (not sent until awaited).
    pub trigger: reqwest::RequestBuilder,
}

/// A follower's connection, held open until the round's end.
type Held = Box<dyn Send>;

/// The pause after a round's followers hang up, for the server to close their connections.
const SETTLE_MS: u64 = 100;

/// Which client follows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Followers {
    /// A socket and a substring search: the figure is about the server, not a client library.
    RawSocket,
    Reqwest,
}

impl Followers {
    pub fn name(self) -> &'static str {
        match self {
            Followers::RawSocket => "raw-socket",
            Followers::Reqwest => "reqwest",
        }
    }
}

/// One round: `count` followers connect and start reading, then the trigger is sent; the
/// milliseconds from just before the trigger to each follower seeing the frame.
pub async fn round(target: Target, followers: Followers, count: usize) -> Vec<f64> {
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let (authority, path) = (target.authority.clone(), target.path.clone());
    let clients = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let readers = match followers {
                    Followers::RawSocket => raw_readers(&authority, &path, count).await,
                    Followers::Reqwest => reqwest_readers(&authority, &path, count).await,
                };
                ready_tx.send(()).unwrap();
                let mut seen = Vec::with_capacity(readers.len());
                let mut held = Vec::with_capacity(readers.len());
                for reader in readers {
                    let (at, connection) = reader.await.unwrap();
                    seen.push(at);
                    held.push(connection);
                }
                // Every follower stays connected until all have been seen, as a live
                // follower would: a follower that hung up on its frame made the server
                // handle its close while it still wrote to the others.
                drop(held);
                seen
            })
    });
    ready_rx.await.unwrap();
    let started = Instant::now();
    let answer = target.trigger.send().await.unwrap();
    assert!(answer.status().is_success(), "trigger: {}", answer.status());
    let seen = tokio::task::spawn_blocking(move || clients.join().unwrap())
        .await
        .unwrap();
    // The thousand closes are the server's to handle before the next round's clock starts.
    tokio::time::sleep(std::time::Duration::from_millis(SETTLE_MS)).await;
    seen.into_iter()
        .map(|at| at.saturating_duration_since(started).as_secs_f64() * 1000.0)
        .collect()
}

/// Connected followers, each already waiting in its own task; each returns when it saw
/// [`NEEDLE`].
async fn raw_readers(
    authority: &str,
    path: &str,
    count: usize,
) -> Vec<tokio::task::JoinHandle<(Instant, Held)>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut readers = Vec::with_capacity(count);
    for _ in 0..count {
        let mut tcp = tokio::net::TcpStream::connect(authority).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: text/event-stream\r\n\r\n"
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut head = vec![0u8; 4096];
        let n = tcp.read(&mut head).await.unwrap();
        assert!(
            head[..n].starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&head[..n])
        );
        let mut seen = head[..n].to_vec();
        readers.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                if seen.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
                    return (Instant::now(), Box::new(tcp) as Held);
                }
                let n = tcp.read(&mut buf).await.unwrap();
                assert!(n > 0, "stream closed early");
                seen.extend_from_slice(&buf[..n]);
            }
        }));
    }
    // Every reader reaches its first read before the trigger.
    tokio::task::yield_now().await;
    readers
}

async fn reqwest_readers(
    authority: &str,
    path: &str,
    count: usize,
) -> Vec<tokio::task::JoinHandle<(Instant, Held)>> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(count)
        .build()
        .unwrap();
    let mut readers = Vec::with_capacity(count);
    for _ in 0..count {
        let response = client
            .get(format!("http://{authority}{path}"))
            .send()
            .await
            .unwrap();
        let mut stream = response.bytes_stream();
        readers.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            while let Some(chunk) = stream.next().await {
                seen.extend_from_slice(&chunk.unwrap());
                if seen.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
                    return (Instant::now(), Box::new(stream) as Held);
                }
            }
            panic!("stream ended before the frame");
        }));
    }
    tokio::task::yield_now().await;
    readers
}

/// The floor: a bare axum server on this runtime; its base URL. `/go` wakes the streams;
/// `/go-with-turn` also starts the runtime a turn in `workspace` would (see
/// [`start_runtime`]), the work svc's POST does beside the frame.
pub async fn floor_server(workspace: &std::path::Path) -> String {
    let workspace = workspace.to_path_buf();
    use axum::routing::{get, post};
    let (tx, rx) = tokio::sync::watch::channel(0u64);
    let tx = std::sync::Arc::new(tx);
    let frame = bytes::Bytes::from(floor_frame());
    let app = axum::Router::new()
        .route(
            "/events",
            get(move || {
                let (mut rx, frame) = (rx.clone(), frame.clone());
                async move {
                    rx.mark_unchanged();
                    // One frame, then the stream stays open as svc's does (its end would
                    // be one more write, and more work for a reqwest follower); it waits
                    // on the watch once, so a follower of an earlier round is never woken
                    // again.
                    let body = futures::stream::once(async move {
                        let _ = rx.changed().await;
                        Ok::<_, std::convert::Infallible>(frame)
                    })
                    .chain(futures::stream::pending());
                    (
                        [(http::header::CONTENT_TYPE, "text/event-stream")],
                        axum::body::Body::from_stream(body),
                    )
                }
            }),
        )
        .route(
            "/go",
            post({
                let tx = tx.clone();
                move || {
                    let tx = tx.clone();
                    async move {
                        tx.send_modify(|n| *n += 1);
                    }
                }
            }),
        )
        .route(
            "/go-with-turn",
            post(move || {
                let (tx, workspace) = (tx.clone(), workspace.clone());
                async move {
                    tx.send_modify(|n| *n += 1);
                    start_runtime(&workspace);
                }
            }),
        );
    crate::server::serve_bare(app).await
}

/// What svc's POST starts beside its frame: rt-one on a prompt in `workspace`, its output
/// read to the end by a task of its own (as a turn's worker reads it), on the server's
/// runtime. The followers' frame is sent first, as svc tells `turn.created` first.
fn start_runtime(workspace: &std::path::Path) {
    let mut child = tokio::process::Command::from(crate::rt_one_turn(workspace, "fan-out"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("rt-one on PATH");
    let mut out = child.stdout.take().expect("a piped stdout");
    tokio::spawn(async move {
        let mut lines = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut out, &mut lines).await;
        let _ = child.wait().await;
    });
}

/// An SSE frame the size of svc's `turn.created` (572 bytes), ending in the needle's event.
fn floor_frame() -> Vec<u8> {
    let mut frame = b"id: 2\n".to_vec();
    frame.extend_from_slice(NEEDLE);
    frame.extend_from_slice(b"data: {\"pad\":\"");
    frame.resize(572 - 4, b'x');
    frame.extend_from_slice(b"\"}\n\n");
    frame
}

/// The physical floor under the bare server: no HTTP framework at all. Each follower's
/// request head is read and a fixed response head written when it connects; the trigger
/// then writes the same frame to every socket in one loop on one task, one `send` each.
/// What the kernel and the followers cost for a thousand writes on this machine, which no
/// server built on per-connection tasks can go under. Returns `(events authority, trigger
/// URL)`; the trigger takes the round's number of followers (`?followers=N`).
pub async fn raw_floor_server() -> (String, String) {
    use axum::routing::post;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let followers = std::sync::Arc::new(std::sync::Mutex::new(Vec::<tokio::net::TcpStream>::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let authority = listener.local_addr().unwrap().to_string();
    let waiting = followers.clone();
    tokio::spawn(async move {
        loop {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let waiting = waiting.clone();
            tokio::spawn(async move {
                tcp.set_nodelay(true).unwrap();
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = tcp.read(&mut buf).await.unwrap();
                    assert!(n > 0, "follower left before its request head");
                    head.extend_from_slice(&buf[..n]);
                }
                tcp.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
                    .await
                    .unwrap();
                waiting.lock().unwrap().push(tcp);
            });
        }
    });
    let frame = floor_frame();
    let app = axum::Router::new().route(
        "/go",
        post(move |axum::extract::Query(go): axum::extract::Query<Go>| {
            let (followers, frame) = (followers.clone(), frame.clone());
            async move {
                // A follower reads its head a moment before its socket is listed: wait for
                // every one of the round's (never more than that moment).
                while followers.lock().unwrap().len() < go.followers {
                    tokio::task::yield_now().await;
                }
                let mut sockets = std::mem::take(&mut *followers.lock().unwrap());
                for tcp in &mut sockets {
                    // An empty socket buffer takes 572 bytes at once; the await is a fallback.
                    let sent = tcp.try_write(&frame).unwrap_or(0);
                    if sent < frame.len() {
                        tcp.write_all(&frame[sent..]).await.unwrap();
                    }
                }
                // Each socket is closed when its follower hangs up (at the round's end), as
                // svc and bare axum close theirs, not while the others are being written.
                tokio::spawn(async move {
                    for mut tcp in sockets {
                        let _ = tcp.read(&mut [0u8; 1]).await;
                    }
                });
            }
        }),
    );
    let trigger = format!("{}/go", crate::server::serve_bare(app).await);
    (authority, trigger)
}

/// The raw floor's trigger: how many followers the round has (`/go?followers=N`).
#[derive(serde::Deserialize)]
struct Go {
    followers: usize,
}
