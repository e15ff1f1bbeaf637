//! `just bench` (sessions part): the server's cost per turn, SSE fan-out, and memory per
//! idle session, with the fake runtimes (built in release by the recipe, found on PATH).
//!
//! - overhead per turn: POST events to the turn's last SSE frame (`agent.session.idle`),
//!   minus the same fake runtime run directly; medians over `--turns N` (default 30).
//! - fan-out: SSE followers of one session; the time from POST to each subscriber receiving
//!   the `turn.created` frame. Raw-socket subscribers as a curve, 100, 1,000 and 5,000
//!   (`--subscribers N` for one point), reqwest subscribers at 1,000 (or N); median of
//!   `--rounds N` (default 5) rounds per point.
//! - memory: heap growth over idle sessions (counting allocator), per session, at 1,000 and
//!   10,000 sessions (`--sessions N` for one point).
//!
//! Lines starting `scale:` are the curves ("How cost grows" in the README). `--quick`: one
//! round, 3 turns, each curve at its smallest point.
//!
//! Targets: overhead < 5 ms per turn; fan-out p99 < 50 ms at 1,000; < 64 KiB per idle session.

// The only unsafe code of the workspace: a counting global allocator, for exact memory figures.
#![allow(unsafe_code)]

// Shared with the other benches; this one uses only part of it.
#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;
// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;

use futures::StreamExt;
use server::serve_with_connections;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{
    arg, arg_quick, curve, median, open_descriptors, percentile, raise_descriptor_limit,
};

/// Counts live heap bytes, so memory per session is measured exactly rather than through
/// RSS (which the allocator's reuse of freed memory hides).
struct Counting;

static LIVE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
/// Counting only while memory is measured: a counter every thread writes on every
/// allocation is a contended cache line, which would slow the latency figures down.
static COUNTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

// SAFETY: every call is passed on unchanged to the system allocator, which upholds
// `GlobalAlloc`'s contract; the counting beside it only reads the layout.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as i64, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` received it.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        if COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as i64, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: `ptr` came from `alloc` above (the system allocator) with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_bytes() -> i64 {
    LIVE.load(std::sync::atomic::Ordering::Relaxed)
}

fn direct_turn(workspace: &PathBuf) -> f64 {
    let started = Instant::now();
    let out = Command::new("rt-one")
        .args(["exec", "--json", "--skip-git-repo-check", "-C"])
        .arg(workspace)
        .arg("bench prompt")
        .output()
        .expect("rt-one on PATH: run `just bench`, which builds the fake runtimes");
    assert!(
        out.status.success(),
        "rt-one failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed().as_secs_f64() * 1000.0
}

async fn create(client: &reqwest::Client, base: &str) -> String {
    let s: serde_json::Value = client
        .post(format!("{base}/v1/agents/sessions"))
        .json(&serde_json::json!({"agent": {"model": "rt-one"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    s["id"].as_str().expect("session id").to_owned()
}

/// Reads SSE bytes until a frame of `kind` arrives.
async fn until(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    kind: &str,
) {
    let needle = format!("event: {kind}\n");
    let mut seen = String::new();
    while let Some(chunk) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if seen.contains(&needle) {
            return;
        }
    }
    panic!("stream ended before {kind}");
}

async fn svc_turn(client: &reqwest::Client, base: &str) -> f64 {
    let id = create(client, base).await;
    let response = client
        .get(format!("{base}/v1/agents/sessions/{id}/events"))
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream();
    let started = Instant::now();
    client
        .post(format!("{base}/v1/agents/sessions/{id}/events"))
        .json(&serde_json::json!({"input": "bench prompt"}))
        .send()
        .await
        .unwrap();
    until(&mut stream, "agent.session.idle").await;
    started.elapsed().as_secs_f64() * 1000.0
}

type Ready = tokio::sync::oneshot::Sender<()>;
type Go = tokio::sync::oneshot::Receiver<Instant>;

/// One fan-out round. `follow` runs on a thread and runtime of its own, as separate client
/// processes would (sharing the server's runtime would measure the clients' scheduling):
/// it connects its subscribers, says so on `Ready`, gets the start time on `Go`, and
/// returns when each saw `turn.created`. Then the input that makes the turn is posted.
async fn round<F, Fut>(client: &reqwest::Client, base: &str, follow: F) -> Vec<f64>
where
    F: FnOnce(String, Ready, Go) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Vec<f64>>,
{
    let id = create(client, base).await;
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel();
    let path = format!("/v1/agents/sessions/{id}/events");
    let clients = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(follow(path, ready_tx, go_rx))
    });
    ready_rx.await.unwrap();
    go_tx.send(Instant::now()).unwrap();
    client
        .post(format!("{base}/v1/agents/sessions/{id}/events"))
        .json(&serde_json::json!({"input": "fan-out"}))
        .send()
        .await
        .unwrap();
    tokio::task::spawn_blocking(move || clients.join().unwrap())
        .await
        .unwrap()
}

async fn all(waits: Vec<tokio::task::JoinHandle<f64>>) -> Vec<f64> {
    let mut times = Vec::new();
    for w in waits {
        times.push(w.await.unwrap());
    }
    times
}

/// SSE followers using reqwest.
async fn fan_out(client: &reqwest::Client, base: &str, subscribers: usize) -> Vec<f64> {
    let url_base = base.to_owned();
    round(client, base, move |path, ready, go| async move {
        let followers = reqwest::Client::builder()
            .pool_max_idle_per_host(subscribers)
            .build()
            .unwrap();
        let mut streams = Vec::with_capacity(subscribers);
        for _ in 0..subscribers {
            let r = followers
                .get(format!("{url_base}{path}"))
                .send()
                .await
                .unwrap();
            streams.push(r.bytes_stream());
        }
        ready.send(()).unwrap();
        let started = go.await.unwrap();
        all(streams
            .into_iter()
            .map(|mut s| {
                tokio::spawn(async move {
                    until(&mut s, "agent.session.turn.created").await;
                    started.elapsed().as_secs_f64() * 1000.0
                })
            })
            .collect())
        .await
    })
    .await
}

/// The same with minimal subscribers (a socket and a substring search): the figure is then
/// about the server rather than about an HTTP client library.
async fn fan_out_raw(client: &reqwest::Client, base: &str, subscribers: usize) -> Vec<f64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = base.trim_start_matches("http://").to_owned();
    round(client, base, move |path, ready, go| async move {
        let mut sockets = Vec::with_capacity(subscribers);
        for _ in 0..subscribers {
            let mut tcp = tokio::net::TcpStream::connect(&authority).await.unwrap();
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
            sockets.push(tcp);
        }
        ready.send(()).unwrap();
        let started = go.await.unwrap();
        all(sockets
            .into_iter()
            .map(|mut tcp| {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut seen = Vec::new();
                    loop {
                        let n = tcp.read(&mut buf).await.unwrap();
                        assert!(n > 0, "stream closed early");
                        seen.extend_from_slice(&buf[..n]);
                        const NEEDLE: &[u8] = b"event: agent.session.turn.created\n";
                        if seen.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
                            return started.elapsed().as_secs_f64() * 1000.0;
                        }
                    }
                })
            })
            .collect())
        .await
    })
    .await
}

fn main() {
    let turns = arg_quick("--turns", 30, 3) as usize;
    let (fan_out_points, subscribers) = match arg("--subscribers", 0) as usize {
        0 => (curve(&[100, 1000, 5000]), 1000),
        n => (vec![n], n),
    };
    let session_points = match arg("--sessions", 0) as usize {
        0 => curve(&[1000, 10_000]),
        n => vec![n],
    };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        // The server's connection cap (`server.connections.max`, default 1,024) would answer
        // the subscribers past it 503: raised as a template would, to the largest point, and
        // the descriptors for both ends of every connection with it.
        let largest = fan_out_points.iter().copied().max().unwrap_or(0).max(subscribers);
        raise_descriptor_limit(2 * largest as u64 + 1024);
        let cap = (largest + 100).max(svc::connections::default_max_connections());
        let (base, _) = serve_with_connections(dir.path(), &[], Some(cap)).await;
        let client = reqwest::Client::builder().pool_max_idle_per_host(2000).build().unwrap();

        direct_turn(&workspace);
        svc_turn(&client, &base).await;
        let mut direct = Vec::new();
        let mut served = Vec::new();
        for _ in 0..turns {
            direct.push(direct_turn(&workspace));
            served.push(svc_turn(&client, &base).await);
        }
        let (d, s) = (median(direct), median(served));
        println!("sessions benchmark (release build, fake runtime rt-one)");
        println!("turn, fake runtime alone      median {d:>8.2} ms  ({turns} runs)");
        println!("turn, through svc (POST..idle) median {s:>8.2} ms");
        println!("server overhead per turn       {:>8.2} ms  (target < 5 ms)", s - d);
        responses_figures(&client, &base, &workspace, turns).await;

        // The 2-core VM's scheduler makes single rounds noisy: median of the rounds.
        let rounds = arg_quick("--rounds", 5, 1).max(1) as usize;
        let raw = fan_out_points.iter().map(|&n| ("raw-socket", n));
        for (kind, count) in raw.chain([("reqwest", subscribers)]) {
            // Both ends of every subscriber's connection are in this process.
            let need = 2 * count as u64 + 1024;
            let limit = raise_descriptor_limit(need);
            if limit < need {
                println!(
                    "scale: SSE fan-out ({kind}) {count:>5} subscribers: STOPPED, needs about {need} open descriptors (both ends in this process) and the hard limit is {limit}"
                );
                continue;
            }
            let (mut p50s, mut p99s) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                let times = if kind == "raw-socket" {
                    fan_out_raw(&client, &base, count).await
                } else {
                    fan_out(&client, &base, count).await
                };
                p50s.push(percentile(times.clone(), 0.50));
                p99s.push(percentile(times, 0.99));
            }
            let worst = p99s.iter().cloned().fold(0.0, f64::max);
            let (p50, p99) = (median(p50s), median(p99s));
            println!(
                "SSE fan-out to {count} {kind} subscribers, median of {rounds} rounds: p50 {p50:.2} ms, p99 {p99:.2} ms (worst round p99 {worst:.2} ms)  (target p99 < 50 ms at 1,000)",
            );
            if kind == "raw-socket" {
                println!(
                    "scale: SSE fan-out (raw sockets) {count:>5} subscribers: p50 {p50:7.2} ms, p99 {p99:7.2} ms, p99 per 1,000 subscribers {:.2} ms",
                    p99 * 1000.0 / count as f64
                );
            }
        }

        // Settle the fan-out's connections first, then count what idle sessions keep.
        drop(client);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let client = reqwest::Client::new();
        create(&client, &base).await;
        // From here every allocation and free is counted: the sessions' net growth.
        COUNTING.store(true, std::sync::atomic::Ordering::SeqCst);
        let before = live_bytes();
        let descriptors_before = open_descriptors(std::process::id());
        let mut made = 0;
        for sessions in session_points {
            while made < sessions {
                create(&client, &base).await;
                made += 1;
            }
            let grown = (live_bytes() - before).max(0) as f64;
            let per = grown / sessions as f64 / 1024.0;
            println!(
                "memory: {sessions} idle sessions hold {:.2} MiB of heap: {per:.1} KiB per session  (target < 64 KiB)",
                grown / 1024.0 / 1024.0,
            );
            // What else an idle session could run out of: descriptors (this process is the
            // server; the one client keeps one connection).
            let descriptors =
                open_descriptors(std::process::id()) as i64 - descriptors_before as i64;
            println!(
                "scale: heap per idle session at {sessions:>6} sessions: {per:.2} KiB ({:.1} MiB in all); descriptors {descriptors:+} in all",
                grown / 1024.0 / 1024.0
            );
        }
    });
}

/// Time to the first streamed text and to the end, for rt-two run directly (first
/// `text_delta` line, exit) and for a streamed response (first `response.output_text.delta`
/// frame, end of stream).
fn direct_stream(workspace: &PathBuf, prompt: &str) -> (f64, f64) {
    use std::io::{BufRead, BufReader};
    let started = Instant::now();
    let mut child = Command::new("rt-two")
        .args([
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--",
            prompt,
        ])
        .current_dir(workspace)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("rt-two on PATH");
    let mut first = None;
    for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
        let line = line.unwrap_or_default();
        if first.is_none() && line.contains("text_delta") {
            first = Some(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    child.wait().expect("rt-two exits");
    (
        first.unwrap_or(f64::NAN),
        started.elapsed().as_secs_f64() * 1000.0,
    )
}

async fn served_stream(client: &reqwest::Client, base: &str, prompt: &str) -> (f64, f64) {
    let started = Instant::now();
    let response = client
        .post(format!("{base}/v1/responses"))
        .json(&serde_json::json!({"model": "rt-two", "input": prompt, "stream": true}))
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream();
    let mut first = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        if first.is_none()
            && String::from_utf8_lossy(&chunk).contains("event: response.output_text.delta")
        {
            first = Some(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    (
        first.unwrap_or(f64::NAN),
        started.elapsed().as_secs_f64() * 1000.0,
    )
}

async fn responses_figures(client: &reqwest::Client, base: &str, workspace: &PathBuf, runs: usize) {
    let prompt = "bench [[scenario:stream:5]]";
    direct_stream(workspace, prompt);
    served_stream(client, base, prompt).await;
    let (mut d_first, mut d_total, mut s_first, mut s_total) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let (f, t) = direct_stream(workspace, prompt);
        d_first.push(f);
        d_total.push(t);
        let (f, t) = served_stream(client, base, prompt).await;
        s_first.push(f);
        s_total.push(t);
    }
    let (df, dt, sf, st) = (
        median(d_first),
        median(d_total),
        median(s_first),
        median(s_total),
    );
    println!("streamed response (rt-two, 5 deltas 5 ms apart), medians of {runs}:");
    println!(
        "  first text delta: fake alone {df:.2} ms, through svc {sf:.2} ms: +{:.2} ms  (target < 5 ms)",
        sf - df
    );
    println!(
        "  whole response:   fake alone {dt:.2} ms, through svc {st:.2} ms: +{:.2} ms  (target < 5 ms)",
        st - dt
    );
}
