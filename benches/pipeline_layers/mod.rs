//! What each layer of svc's pipeline costs one `GET /health`, timed in-process with
//! `oneshot` (no socket, no client, one thread): the same handler behind one more layer at
//! each step, from a bare axum route to the router a connection is served, so a difference
//! between two steps is that layer's cost per request and nothing else's.

use super::counting::allocations;
use super::median;
use axum::Router;
use axum::body::Body;
use axum::routing::{MethodFilter, get};
use std::time::Instant;
use svc::error::Shape;
use svc::server::config::Settings;
use svc::server::endpoints::{ENDPOINTS, EndpointId, Port};
use svc::server::front::Front;
use svc::server::groups::core::health;
use svc::server::pipeline::{Admit, RouteState};
use svc::server::{AppState, SharedState};
use svc::zero_copy::{FileChannel, WithChannel};
use tower::ServiceExt;

/// The steps, each the one before with one layer more.
fn steps(state: &SharedState) -> Vec<(&'static str, Router)> {
    let (index, endpoint) = ENDPOINTS
        .iter()
        .enumerate()
        .find(|(_, e)| e.key == EndpointId::Health)
        .expect("the health row");
    let route = RouteState {
        app: state.clone(),
        endpoint,
        index,
        shape: Shape::Flat,
    };
    let bare = Router::new()
        .route("/health", get(health))
        .with_state(state.clone());
    // Admitted as the router admits a row: the layer around the handler itself.
    let admitted = Router::new()
        .route(
            "/health",
            svc::server::route::on(MethodFilter::GET, health).admitted(Admit(route)),
        )
        .with_state(state.clone());
    let part = svc::server::router::part(state, Port::Main, Shape::Flat);
    vec![
        ("the handler on a bare axum route", bare),
        ("+ admission (auth, policy, limits, query, body)", admitted),
        ("+ the shape's router (all rows, unmatched answers)", part),
    ]
}

/// The last steps: the front over both shapes' routers, then what `zero_copy::with_channel`
/// makes of it for each connection (what `svc serve` serves).
fn front(state: &SharedState) -> Front {
    svc::server::router::front(state, Port::Main)
}

fn served(front: Front) -> WithChannel<Front> {
    WithChannel::new(front, FileChannel::default())
}

/// Nanoseconds and allocations per request.
async fn time<S>(service: &S, iterations: u32) -> (f64, f64)
where
    S: tower::Service<http::Request<Body>, Response = axum::response::Response> + Clone,
    S::Error: std::fmt::Debug,
{
    let allocated = allocations();
    let started = Instant::now();
    for _ in 0..iterations {
        let request = http::Request::get("/health").body(Body::empty()).unwrap();
        let response = service.clone().oneshot(request).await.unwrap();
        assert!(response.status().is_success());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        std::hint::black_box(body);
    }
    let ns = started.elapsed().as_nanos() as f64 / f64::from(iterations);
    (
        ns,
        (allocations() - allocated) as f64 / f64::from(iterations),
    )
}

/// Prints each step's nanoseconds per request (the median of `rounds` interleaved rounds of
/// `iterations` requests) and what its layer added.
pub fn run(rounds: usize, iterations: u32) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Built as the load's was, inside a runtime.
        let state = AppState::with_settings(Settings::defaults());
        let steps = steps(&state);
        let front = front(&state);
        let served = served(front.clone());
        let last = steps.len() + 1;
        // Each step's time: the routers, then the front, then a connection's service.
        let step = async |i: usize, n: u32| match steps.get(i) {
            Some((_, router)) => time(router, n).await,
            None if i == steps.len() => time(&front, n).await,
            None => time(&served, n).await,
        };
        for i in 0..=last {
            step(i, iterations / 10).await;
        }
        let mut figures: Vec<Vec<(f64, f64)>> = (0..=last).map(|_| Vec::new()).collect();
        for round in 0..rounds {
            for k in 0..=last {
                let i = (round + k) % (last + 1);
                figures[i].push(step(i, iterations).await);
            }
        }
        let names = steps
            .iter()
            .map(|(name, _)| *name)
            .chain([
                "+ the front (size limits, split by shape, shaped errors, audit)",
                "+ the connection's file channel (as served)",
            ]);
        println!(
            "per layer, in-process oneshot GET /health, {rounds} rounds of {iterations} requests, one thread (allocations per request, the request's building and reading included):"
        );
        let mut before = None;
        for (name, runs) in names.zip(figures) {
            let ns = median(runs.iter().map(|r| r.0).collect());
            let allocs = median(runs.iter().map(|r| r.1).collect());
            let added = before.map_or(String::new(), |(b, a): (f64, f64)| {
                format!("  (+{:.0} ns, {:+.0} allocations)", ns - b, allocs - a)
            });
            println!("  {ns:>7.0} ns {allocs:>4.0} allocations  {name}{added}");
            before = Some((ns, allocs));
        }
    });
}
