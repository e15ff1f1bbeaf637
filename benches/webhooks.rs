//! `just bench` (webhooks part): webhook delivery with the fake runtimes (release, on PATH)
//! and a receiver in the same process.
//!
//! - latency: POST /v1/agents/sessions to the `agent.session.created` delivery arriving,
//!   and for a turn, how long after the SSE `agent.session.idle` frame its delivery arrives;
//!   medians and p99 over `--sessions N` (default 200) and `--turns N` (default 30).
//! - throughput: `--events N` (default 1000) events per endpoint handed to the sessions'
//!   sink, signed and delivered to 1 and to 4 endpoints; deliveries per second.
//! - a slow receiver (`--slow-ms N`, default 50 per answer): session creation time with
//!   such an endpoint subscribed, against none, and the cost of handing an event to a full
//!   queue (dropped and counted).
//!
//! Each of the first, third and last beside its floor from the same run, a bare server or
//! loop doing the same with none of svc's (`webhook_floor/mod.rs`).
//!
//! `--quick`: 10 sessions, 3 turns, 100 events.

// Shared with the other benches; this one uses only part of it.
#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;
// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;
#[path = "webhook_floor/mod.rs"]
mod webhook_floor;

use futures::StreamExt;
use serde_json::{Value, json};
use server::serve;
use std::time::{Duration, Instant};
use support::{arg, arg_quick, median, ms, percentile};
use svc::server::SharedState;
use tokio::sync::mpsc;

/// `later - earlier` in ms, negative when `later` came first.
fn signed_ms(later: Instant, earlier: Instant) -> f64 {
    ms(later.saturating_duration_since(earlier)) - ms(earlier.saturating_duration_since(later))
}

/// A receiver that answers 200 after `delay`, reporting each arrival (time, body).
async fn receiver(delay: Duration) -> (String, mpsc::UnboundedReceiver<(Instant, Value)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: bytes::Bytes| {
            let at = Instant::now();
            let _ = tx.send((at, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            async move {
                // Even a zero sleep waits for the timer's next 1 ms tick.
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, rx)
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> Value {
    client
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn endpoint(client: &reqwest::Client, base: &str, url: &str, types: &[&str]) -> String {
    let e = post(
        client,
        format!("{base}/v1/webhook_endpoints"),
        json!({"url": url, "event_types": types, "name": "bench"}),
    )
    .await;
    e["id"].as_str().expect("endpoint id").to_owned()
}

async fn remove(client: &reqwest::Client, base: &str, id: &str) {
    client
        .delete(format!("{base}/v1/webhook_endpoints/{id}"))
        .send()
        .await
        .unwrap();
}

async fn session(client: &reqwest::Client, base: &str) -> String {
    let s = post(
        client,
        format!("{base}/v1/agents/sessions"),
        json!({"agent": {"model": "rt-one"}}),
    )
    .await;
    s["id"].as_str().expect("session id").to_owned()
}

/// Arrivals until one of `kind` for `sid`.
async fn arrival(
    rx: &mut mpsc::UnboundedReceiver<(Instant, Value)>,
    kind: &str,
    sid: &str,
) -> Instant {
    loop {
        let (at, body) = rx.recv().await.expect("receiver alive");
        if body["type"] == kind && body["data"]["id"] == sid {
            return at;
        }
    }
}

async fn created_latency(client: &reqwest::Client, base: &str, n: usize) -> Vec<f64> {
    let (url, mut rx) = receiver(Duration::ZERO).await;
    let id = endpoint(client, base, &url, &["agent.session.created"]).await;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let sid = session(client, base).await;
        out.push(ms(
            arrival(&mut rx, "agent.session.created", &sid).await - started
        ));
    }
    remove(client, base, &id).await;
    out
}

/// [`created_latency`]'s floor: a bare server's POST to the delivery of its id arriving.
async fn created_floor(client: &reqwest::Client, n: usize) -> Vec<f64> {
    let (url, mut rx) = receiver(Duration::ZERO).await;
    let base = webhook_floor::serve_creator(url).await;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let created = post(client, format!("{base}/sessions"), json!({})).await;
        let sid = created["id"].as_str().expect("floor id").to_owned();
        out.push(ms(
            arrival(&mut rx, "agent.session.created", &sid).await - started
        ));
    }
    out
}

/// How long after the SSE `agent.session.idle` frame the same change arrives by webhook.
async fn idle_lag(client: &reqwest::Client, base: &str, turns: usize) -> Vec<f64> {
    let (url, mut rx) = receiver(Duration::ZERO).await;
    let id = endpoint(client, base, &url, &["agent.session.idle"]).await;
    let mut out = Vec::with_capacity(turns);
    for _ in 0..turns {
        let sid = session(client, base).await;
        let events = client
            .get(format!("{base}/v1/agents/sessions/{sid}/events"))
            .send()
            .await
            .unwrap();
        let mut stream = events.bytes_stream();
        let accepted = client
            .post(format!("{base}/v1/agents/sessions/{sid}/events"))
            .json(&json!({"input": "bench prompt"}))
            .send()
            .await
            .unwrap();
        assert_eq!(accepted.status(), 202);
        let mut seen = String::new();
        let sse = loop {
            let chunk = stream.next().await.expect("stream open").unwrap();
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("event: agent.session.idle\n") {
                break Instant::now();
            }
        };
        let hook = arrival(&mut rx, "agent.session.idle", &sid).await;
        out.push(signed_ms(hook, sse));
    }
    remove(client, base, &id).await;
    out
}

/// Deliveries per second for `events` events to each of `endpoints` endpoints.
async fn throughput(
    client: &reqwest::Client,
    base: &str,
    state: &SharedState,
    endpoints: usize,
    events: usize,
) -> f64 {
    let (url, mut rx) = receiver(Duration::ZERO).await;
    let mut ids = Vec::new();
    for _ in 0..endpoints {
        ids.push(endpoint(client, base, &url, &["agent.session.idle"]).await);
    }
    let mut sink = state.agents.webhooks.sink("anonymous");
    let event = json!({"session": {"id": "agsess_bench", "environment": {"type": "none"}}});
    let started = Instant::now();
    for _ in 0..events {
        sink.event("agent.session.idle", &event);
    }
    for _ in 0..events * endpoints {
        rx.recv().await.expect("receiver alive");
    }
    let rate = (events * endpoints) as f64 / started.elapsed().as_secs_f64();
    for id in ids {
        remove(client, base, &id).await;
    }
    rate
}

/// [`throughput`]'s floor: the same number of signed POSTs of a body of the same shape,
/// each endpoint's one at a time, to a receiver of the same kind.
async fn throughput_floor(endpoints: usize, events: usize) -> f64 {
    let (url, mut rx) = receiver(Duration::ZERO).await;
    let body = webhook_floor::body("agent.session.idle", "agsess_bench");
    let started = Instant::now();
    webhook_floor::send_signed(&url, endpoints, events, body).await;
    for _ in 0..events * endpoints {
        rx.recv().await.expect("receiver alive");
    }
    (events * endpoints) as f64 / started.elapsed().as_secs_f64()
}

/// Session creation times (ms) with an endpoint on a receiver taking `slow` per answer,
/// and the rate at which that receiver then gets its deliveries (per second, over 20, or
/// over all but the first of `n` when fewer: one delivery per session).
async fn with_slow_receiver(
    client: &reqwest::Client,
    base: &str,
    n: usize,
    slow: Duration,
) -> (Vec<f64>, f64) {
    let (url, mut rx) = receiver(slow).await;
    let id = endpoint(client, base, &url, &["agent.session.created"]).await;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        session(client, base).await;
        times.push(ms(t.elapsed()));
    }
    let counted = n.saturating_sub(1).clamp(1, 20);
    let (first, _) = rx.recv().await.expect("receiver alive");
    let mut last = first;
    for _ in 0..counted {
        last = rx.recv().await.expect("receiver alive").0;
    }
    remove(client, base, &id).await;
    (times, counted as f64 / (last - first).as_secs_f64())
}

fn main() {
    // At least 2: the slow receiver's rate is measured between deliveries.
    let sessions = arg_quick("--sessions", 200, 10).max(2) as usize;
    let turns = arg_quick("--turns", 30, 3) as usize;
    // More than a queue holds would be dropped, and the count never reached.
    let events = (arg_quick("--events", 1000, 100) as usize)
        .min(svc::server::agents::webhooks::QUEUE_CAPACITY);
    let slow = Duration::from_millis(arg("--slow-ms", 50));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let (base, state) = serve(
            dir.path(),
            &[("SVC_AGENTS_WEBHOOK_ALLOW_HTTP", "1"), ("SVC_AGENTS_ALLOW_PRIVATE_URLS", "1")],
        )
        .await;
        let client = reqwest::Client::new();
        println!("webhooks benchmark (release build, receiver in the same process)");

        created_latency(&client, &base, 10).await;
        created_floor(&client, 10).await;
        let created = created_latency(&client, &base, sessions).await;
        let floor = created_floor(&client, sessions).await;
        println!(
            "session create -> created delivery   p50 {:>7.2} ms  p99 {:>7.2} ms  ({sessions} sessions)",
            median(created.clone()),
            percentile(created, 0.99)
        );
        println!(
            "  floor, a bare route answering a POST and handing a delivery to a task: p50 {:.2} ms  p99 {:.2} ms",
            median(floor.clone()),
            percentile(floor, 0.99)
        );
        let lag = idle_lag(&client, &base, turns).await;
        println!(
            "SSE idle frame -> idle delivery      p50 {:>7.2} ms  p99 {:>7.2} ms  ({turns} turns)",
            median(lag.clone()),
            percentile(lag, 0.99)
        );
        for endpoints in [1, 4] {
            let rate = throughput(&client, &base, &state, endpoints, events).await;
            let floor = throughput_floor(endpoints, events).await;
            println!(
                "signed deliveries, {endpoints} endpoint(s)       {rate:>9.0} /s  ({events} events each); floor, bare signed POSTs one at a time per endpoint: {floor:.0} /s, svc at {:.2} of it",
                rate / floor
            );
        }

        let mut baseline = Vec::with_capacity(sessions);
        for _ in 0..sessions {
            let t = Instant::now();
            session(&client, &base).await;
            baseline.push(ms(t.elapsed()));
        }
        let (slowed, drain) = with_slow_receiver(&client, &base, sessions, slow).await;
        println!(
            "session create, no endpoint          p50 {:>7.2} ms  p99 {:>7.2} ms",
            median(baseline.clone()),
            percentile(baseline, 0.99)
        );
        println!(
            "session create, {} ms receiver       p50 {:>7.2} ms  p99 {:>7.2} ms",
            slow.as_millis(),
            median(slowed.clone()),
            percentile(slowed, 0.99)
        );
        println!("deliveries to the {} ms receiver      {drain:>9.1} /s  (one at a time, in order)", slow.as_millis());

        let (url, _rx) = receiver(Duration::from_secs(3600)).await;
        endpoint(&client, &base, &url, &["agent.session.idle"]).await;
        let mut sink = state.agents.webhooks.sink("anonymous");
        let event = json!({"session": {"id": "agsess_bench", "environment": {"type": "none"}}});
        let calls = 20_000;
        let started = Instant::now();
        for _ in 0..calls {
            sink.event("agent.session.idle", &event);
        }
        let per_call = started.elapsed().as_secs_f64() * 1e9 / calls as f64;
        println!(
            "hand-off to a stuck endpoint         {per_call:>7.0} ns per event  ({} of {calls} dropped, queue {})",
            state.agents.webhooks.dropped(),
            svc::server::agents::webhooks::QUEUE_CAPACITY
        );
        let floor = webhook_floor::hand_off(&event, svc::server::agents::webhooks::QUEUE_CAPACITY, calls);
        println!(
            "  floor, rendering the body and a try_send into a full queue, counted: {floor:.0} ns per event"
        );
    });
}
