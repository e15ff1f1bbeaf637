//! `just bench` (sessions part): the server's cost per turn, SSE fan-out, and memory per
//! idle session, with the fake runtimes (built in release by the recipe, found on PATH).
//!
//! - overhead per turn: POST events to the turn's last SSE frame (`agent.session.idle`),
//!   minus the same fake runtime run directly; medians over `--turns N` (default 30).
//! - streamed response: the first `response.output_text.delta` against rt-two run directly,
//!   against a bare axum server that spawns it and sends its lines as SSE, and against the
//!   physical floor under that, a thread per connection with no framework and no async
//!   runtime (`response_floor/mod.rs`), the same client reading all three.
//! - fan-out: SSE followers of one session; the time from POST to each subscriber receiving
//!   the `turn.created` frame. Raw-socket subscribers as a curve, 100, 1,000 and 5,000
//!   (`--subscribers N` for one point), reqwest subscribers at 1,000 (or N); median of
//!   `--rounds N` (default 5) rounds per point, each beside its floors (bare axum waking as
//!   many streams, the same also starting the turn's runtime as svc's POST does, and one
//!   task writing the frame to as many raw sockets, `fan_out/mod.rs`).
//! - memory: heap growth over idle sessions (counting allocator), per session, at 1,000 and
//!   10,000 sessions (`--sessions N` for one point).
//!
//! Lines starting `scale:` are the curves ("How cost grows" in the README). `--quick`: one
//! round, 3 turns, each curve at its smallest point.
//!
//! Targets: overhead < 5 ms per turn; fan-out p99 < 20 ms at 1,000; < 64 KiB per idle session.

// Memory per session counted exactly rather than through RSS (which the allocator's reuse
// of freed memory hides).
#[path = "support/counting.rs"]
#[allow(dead_code)]
mod counting;
// Shared with the other benches; this one uses only part of it.
#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;
// Shared with the other benches; this one uses only part of it.
#[path = "fan_out/mod.rs"]
mod fan_out;
#[path = "response_floor/mod.rs"]
mod response_floor;
#[allow(dead_code)]
mod support;

use counting::{Counting, live_bytes};
use fan_out::Followers;
use futures::StreamExt;
use server::serve_with_connections;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{
    arg, arg_quick, curve, median, open_descriptors, percentile, raise_descriptor_limit,
};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The p50 and p99 of each round at one point, for their medians over the rounds.
#[derive(Default)]
struct Rounds {
    p50s: Vec<f64>,
    p99s: Vec<f64>,
}

impl Rounds {
    fn push(&mut self, times: Vec<f64>) {
        self.p50s.push(percentile(times.clone(), 0.50));
        self.p99s.push(percentile(times, 0.99));
    }

    fn medians(self) -> (f64, f64) {
        (median(self.p50s), median(self.p99s))
    }
}

/// rt-one run on `prompt` in `workspace` as svc runs it for a turn (the fake copies the
/// Codex CLI's `exec` argv): the direct turn, and what the fan-out's floor with a turn starts.
pub fn rt_one_turn(workspace: &std::path::Path, prompt: &str) -> Command {
    let mut command = Command::new("rt-one");
    command
        .args(["exec", "--json", "--skip-git-repo-check", "-C"])
        .arg(workspace)
        .arg(prompt);
    command
}

fn direct_turn(workspace: &std::path::Path) -> f64 {
    let started = Instant::now();
    let out = rt_one_turn(workspace, "bench prompt")
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
        let floor = fan_out::floor_server(&workspace).await;
        let (raw_floor, raw_trigger) = fan_out::raw_floor_server().await;
        let raw = fan_out_points.iter().map(|&n| (Followers::RawSocket, n));
        for (followers, count) in raw.chain([(Followers::Reqwest, subscribers)]) {
            let kind = followers.name();
            // Both ends of every subscriber's connection are in this process.
            let need = 2 * count as u64 + 1024;
            let limit = raise_descriptor_limit(need);
            if limit < need {
                println!(
                    "scale: SSE fan-out ({kind}) {count:>5} subscribers: STOPPED, needs about {need} open descriptors (both ends in this process) and the hard limit is {limit}"
                );
                continue;
            }
            // svc and the floors in turns, round by round, so all see the same machine.
            let (mut svc, mut bare, mut bare_turn, mut raw) = Default::default();
            for _ in 0..rounds {
                let id = create(&client, &base).await;
                let target = fan_out::Target {
                    authority: base.trim_start_matches("http://").to_owned(),
                    path: format!("/v1/agents/sessions/{id}/events"),
                    trigger: client
                        .post(format!("{base}/v1/agents/sessions/{id}/events"))
                        .json(&serde_json::json!({"input": "fan-out"})),
                };
                Rounds::push(&mut svc, fan_out::round(target, followers, count).await);
                for (go, into) in [("go", &mut bare), ("go-with-turn", &mut bare_turn)] {
                    let target = fan_out::Target {
                        authority: floor.trim_start_matches("http://").to_owned(),
                        path: "/events".to_owned(),
                        trigger: client.post(format!("{floor}/{go}")),
                    };
                    Rounds::push(into, fan_out::round(target, followers, count).await);
                }
                let target = fan_out::Target {
                    authority: raw_floor.clone(),
                    path: "/events".to_owned(),
                    trigger: client.post(format!("{raw_trigger}?followers={count}")),
                };
                Rounds::push(&mut raw, fan_out::round(target, followers, count).await);
            }
            let worst = svc.p99s.iter().cloned().fold(0.0, f64::max);
            let (p50, p99) = svc.medians();
            let (floor_p50, floor_p99) = bare.medians();
            let (turn_p50, turn_p99) = bare_turn.medians();
            let (raw_p50, raw_p99) = raw.medians();
            println!(
                "SSE fan-out to {count} {kind} subscribers, median of {rounds} rounds: p50 {p50:.2} ms, p99 {p99:.2} ms (worst round p99 {worst:.2} ms)  (target p99 < 20 ms at 1,000)",
            );
            println!(
                "  floor, bare axum waking {count} streams of one 572-byte frame, same followers: p50 {floor_p50:.2} ms, p99 {floor_p99:.2} ms; svc adds p50 {:+.2} ms, p99 {:+.2} ms",
                p50 - floor_p50,
                p99 - floor_p99
            );
            println!(
                "  floor with the turn's runtime, the same bare axum also starting rt-one as svc's POST does: p50 {turn_p50:.2} ms, p99 {turn_p99:.2} ms; svc adds p50 {:+.2} ms, p99 {:+.2} ms",
                p50 - turn_p50,
                p99 - turn_p99
            );
            println!(
                "  physical floor, one task writing the frame to {count} raw sockets (no HTTP framework), same followers: p50 {raw_p50:.2} ms, p99 {raw_p99:.2} ms",
            );
            if followers == Followers::RawSocket {
                println!(
                    "scale: SSE fan-out (raw sockets) {count:>5} subscribers: p50 {p50:7.2} ms, p99 {p99:7.2} ms, p99 per 1,000 subscribers {:.2} ms; floor p99 {floor_p99:.2} ms",
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
        counting::count_live_bytes();
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
        .args(response_floor::RT_TWO_STREAM)
        .arg(prompt)
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

/// The order of the four kinds of run in run `run`: the 24 orders in turn, so that over 24
/// runs each kind follows each other kind about equally often (7 or 8 times).
fn order_of_run(run: usize) -> [usize; 4] {
    let mut left = vec![0, 1, 2, 3];
    let mut code = run % 24;
    let mut order = [0; 4];
    for (place, radix) in order.iter_mut().zip([6, 2, 1, 1]) {
        *place = left.remove(code / radix);
        code %= radix;
    }
    order
}

async fn responses_figures(client: &reqwest::Client, base: &str, workspace: &PathBuf, runs: usize) {
    let prompt = "bench [[scenario:stream:5]]";
    let floor = response_floor::serve(workspace.clone()).await;
    let raw_floor = response_floor::serve_raw(workspace.clone());
    direct_stream(workspace, prompt);
    served_stream(client, base, prompt).await;
    served_stream(client, &floor, prompt).await;
    served_stream(client, &raw_floor, prompt).await;
    let (mut direct, mut served, mut floored, mut raw) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // In turns, run by run, so the four see the same machine, each run in its own order:
    // what runs right after the direct run (a blocking child on one of the runtime's two
    // threads) starts colder than what follows a served run, and a fixed order (or one
    // turned round, which keeps who follows whom) always put svc there.
    for run in 0..runs {
        for which in order_of_run(run) {
            match which {
                0 => direct.push(direct_stream(workspace, prompt)),
                1 => served.push(served_stream(client, base, prompt).await),
                2 => floored.push(served_stream(client, &floor, prompt).await),
                _ => raw.push(served_stream(client, &raw_floor, prompt).await),
            }
        }
    }
    let medians = |runs: &[(f64, f64)]| {
        (
            median(runs.iter().map(|r| r.0).collect()),
            median(runs.iter().map(|r| r.1).collect()),
        )
    };
    let ((df, dt), (sf, st), (ff, ft)) = (medians(&direct), medians(&served), medians(&floored));
    let (rf, _) = medians(&raw);
    println!("streamed response (rt-two, 5 deltas 5 ms apart), medians of {runs}:");
    println!(
        "  first text delta: fake alone {df:.2} ms, through svc {sf:.2} ms: +{:.2} ms  (target < 0.5 ms)",
        sf - df
    );
    println!(
        "  floor, bare axum spawning rt-two and sending its lines as SSE to the same client: first delta {ff:.2} ms (+{:.2} ms over the fake alone); svc adds +{:.2} ms over it",
        ff - df,
        sf - ff
    );
    println!(
        "  physical floor, a thread per connection spawning rt-two and writing its lines as chunked SSE (no HTTP framework, no async runtime), same client: first delta {rf:.2} ms (+{:.2} ms over the fake alone)",
        rf - df
    );
    println!(
        "  whole response:   fake alone {dt:.2} ms, through svc {st:.2} ms: +{:.2} ms; floor {ft:.2} ms (+{:.2} ms)",
        st - dt,
        ft - dt
    );
    // The machine's speed drifts between runs by more than svc's part (rt-two alone moved
    // 0.4 ms between two runs of this bench): each run's difference against the run next
    // to it, whose drift cancels, says more than a difference of medians.
    let paired = |of: &[(f64, f64)], to: &[(f64, f64)]| {
        let differences: Vec<f64> = of.iter().zip(to).map(|(a, b)| a.0 - b.0).collect();
        (
            percentile(differences.clone(), 0.25),
            median(differences.clone()),
            percentile(differences, 0.75),
        )
    };
    let (over_direct, over_bare) = (paired(&served, &direct), paired(&served, &floored));
    println!(
        "  first delta, paired run by run: svc over the fake alone median +{:.2} ms (quartiles {:+.2} to {:+.2}); svc over bare axum median {:+.2} ms (quartiles {:+.2} to {:+.2})",
        over_direct.1, over_direct.0, over_direct.2, over_bare.1, over_bare.0, over_bare.2
    );
}
