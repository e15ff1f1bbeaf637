//! `just bench`: requests per second and p50/p99 latency of GET /health and
//! GET /capabilities through the full svc pipeline as `svc serve` serves it (its own
//! connection loop, the front, the zero-copy stream), against a bare axum hello-world served
//! and loaded the same way in the same run, and a second bare axum server for the measure's
//! noise; `svc::app` under axum's loop beside them; then what each layer costs a request
//! ([`layers`]). Target: /health as served at >= 0.95 of bare axum.
//!
//! The targets are measured in interleaved rounds (order rotating each round) and the
//! medians reported, so drift on a shared machine hits every target alike. The rounds are
//! short and many: on a machine whose neighbours come and go, two targets measured half a
//! second apart see the same machine, where 2-second rounds gave ratios from 0.87 to 1.22
//! between identical servers.
//!
//! Options (after `--`): `--round-ms N` per measurement (default 500), `--rounds N`
//! (default 16), `--concurrency N` (default 32), `--layer-requests N` per round of the layer
//! timing (default 200,000), `--layer-rounds N` (default 5), `--layers-only` (the layer timing
//! alone, as to profile it); `--quick`: one round of 500 ms, one of 20,000 layer requests.

// Each layer's allocations per request (`layers`).
#[path = "support/counting.rs"]
#[allow(dead_code)]
mod counting;
// Shared with the other benches; this one uses only part of it.
#[path = "pipeline_layers/mod.rs"]
mod layers;
#[allow(dead_code)]
mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{arg, arg_quick, median};
use svc::server::AppState;
use svc::server::config::Settings;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

struct Figures {
    rps: f64,
    p50_us: u64,
    p99_us: u64,
    errors: u64,
}

async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

async fn load(url: String, concurrency: u64, duration: Duration) -> Figures {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency as usize)
        .build()
        .unwrap();
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let client = client.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(100_000);
            let mut errors = 0u64;
            while Instant::now() < deadline {
                let started = Instant::now();
                match client.get(&url).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        latencies.push(started.elapsed().as_micros() as u64);
                    }
                    _ => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (l, e) = task.await.unwrap();
        all.extend(l);
        errors += e;
    }
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Figures {
        rps: all.len() as f64 / duration.as_secs_f64(),
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        errors,
    }
}

fn main() {
    let round_length = Duration::from_millis(arg_quick("--round-ms", 500, 500));
    let rounds = arg_quick("--rounds", 16, 1).max(1) as usize;
    let concurrency = arg("--concurrency", 32);
    let requests = arg_quick("--layer-requests", 200_000, 20_000) as u32;
    let layer_rounds = arg_quick("--layer-rounds", 5, 1).max(1) as usize;
    if std::env::args().any(|a| a == "--layers-only") {
        layers::run(layer_rounds, requests);
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let bare = axum::Router::new().route(
            "/health",
            axum::routing::get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        );
        let bare_addr = serve(bare.clone()).await;
        // The same again on a second server: how far two identical servers differ in one
        // run is this measure's noise, to read the ratio against.
        let bare_again = serve(bare).await;
        let state = AppState::with_settings(Settings::defaults());
        let svc_addr = serve(svc::app(Arc::clone(&state))).await;
        let served = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let served_addr = served.local_addr().unwrap();
        tokio::spawn(svc::server::serve_main(served, Arc::clone(&state)));

        // The ratio's target is svc as `svc serve` serves it (its connection loop, the
        // front, the zero-copy stream); `svc::app` under axum's own loop is what tests drive.
        let targets = [
            ("bare axum GET /health", format!("http://{bare_addr}/health")),
            ("svc GET /health as served", format!("http://{served_addr}/health")),
            ("svc::app GET /health", format!("http://{svc_addr}/health")),
            ("svc GET /capabilities", format!("http://{served_addr}/capabilities")),
            ("bare axum again", format!("http://{bare_again}/health")),
        ];
        println!(
            "pipeline benchmark: {concurrency} concurrent clients, {rounds} rounds of {round_length:?} per target, release build, same process"
        );
        for (_, url) in &targets {
            load(url.clone(), concurrency, Duration::from_millis(500)).await;
        }
        let mut figures: Vec<Vec<Figures>> = targets.iter().map(|_| Vec::new()).collect();
        for round in 0..rounds {
            for k in 0..targets.len() {
                let i = (round + k) % targets.len();
                let f = load(targets[i].1.clone(), concurrency, round_length).await;
                figures[i].push(f);
            }
        }
        println!("{:<26} {:>10} {:>9} {:>9} {:>7}", "target (median)", "req/s", "p50 us", "p99 us", "errors");
        for ((name, _), runs) in targets.iter().zip(&figures) {
            println!(
                "{name:<26} {:>10.0} {:>9.0} {:>9.0} {:>7}",
                median(runs.iter().map(|f| f.rps).collect()),
                median(runs.iter().map(|f| f.p50_us as f64).collect()),
                median(runs.iter().map(|f| f.p99_us as f64).collect()),
                runs.iter().map(|f| f.errors).sum::<u64>()
            );
        }
        let ratio_of = |i: usize| {
            let ratios: Vec<f64> =
                figures[i].iter().zip(&figures[0]).map(|(s, b)| s.rps / b.rps).collect();
            let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            (median(ratios), shown.join(", "))
        };
        let (ratio, rounds_shown) = ratio_of(1);
        println!("ratio svc /health (as served) to bare axum: {ratio:.2} median of rounds [{rounds_shown}] (target >= 0.95)");
        if ratio < 0.95 {
            println!("BELOW TARGET");
        }
        let (noise, noise_shown) = ratio_of(4);
        println!("  the noise: a second bare axum server to the first {noise:.2} [{noise_shown}]");
        println!("  svc::app (tests' router, axum's connection loop) to bare axum: {:.2}", ratio_of(2).0);
    });
    layers::run(layer_rounds, requests);
}
