//! `just bench` (process part): commands through the whole server (pipeline, guards,
//! supervisor, JSON), in process on loopback, against spawning the same program directly
//! from this process in the same run (the floor: what a spawn and a wait cost here).
//!
//! - shell: POST /shell `{"cmd": "true", "args": []}` (run directly), p50 and p99 over
//!   `--rounds N` (default 300) calls, versus spawning `true` with piped output and waiting;
//!   the same for a shell line `{"cmd": "true"}` versus spawning `/bin/sh -c true`.
//!   Target: under 1 ms added at p50.
//! - shell_stream: time from the request to the first `stdout` event of `echo hi`, versus
//!   spawning `echo hi` and reading its first byte.
//! - concurrent shells, a curve: the wall time of 10, 100 and 1,000 `POST /shell` of `true`
//!   at once, versus as many direct spawns at once, median of 5 rounds per point; the
//!   `scale:` lines ("How cost grows" in the README).
//!
//! `--quick`: one round of each, the concurrent shells at 10 only.
//!
//! The benchmark and every child of the server are subreapers, as under `svc serve` (the
//! first line printed says so; `--trees 0` leaves children in their process groups only).

// Shared with the other benches; this one uses only part of it.
#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;
// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;

use futures::StreamExt;
use server::serve_with_connections;
use std::time::{Duration, Instant};
use support::{
    arg, arg_quick, curve, first_byte, median, ms, percentile, raise_descriptor_limit,
    spawn_and_wait,
};

async fn shell(client: &reqwest::Client, base: &str, body: &serde_json::Value) -> Duration {
    let started = Instant::now();
    let resp = client
        .post(format!("{base}/shell"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let answer: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(answer["exit_code"], 0, "{answer}");
    started.elapsed()
}

async fn first_stdout_event(client: &reqwest::Client, base: &str) -> Duration {
    let started = Instant::now();
    let resp = client
        .post(format!("{base}/shell/stream"))
        .json(&serde_json::json!({"cmd": "echo", "args": ["hi"]}))
        .send()
        .await
        .unwrap();
    let mut body = resp.bytes_stream();
    let mut seen = Vec::new();
    while let Some(chunk) = body.next().await {
        seen.extend_from_slice(&chunk.unwrap());
        if seen.windows(13).any(|w| w == b"event: stdout") {
            let at = started.elapsed();
            while body.next().await.is_some() {}
            return at;
        }
    }
    panic!("no stdout event: {}", String::from_utf8_lossy(&seen));
}

fn report(name: &str, server: Vec<f64>, floor: Vec<f64>) {
    let (s50, s99) = (percentile(server.clone(), 0.5), percentile(server, 0.99));
    let (f50, f99) = (percentile(floor.clone(), 0.5), percentile(floor, 0.99));
    println!(
        "{name:<28} server p50 {s50:6.2} ms p99 {s99:6.2} ms | direct p50 {f50:6.2} ms p99 {f99:6.2} ms | added p50 {:+.2} ms, ratio {:.2}",
        s50 - f50,
        s50 / f50
    );
}

fn main() {
    let rounds = arg_quick("--rounds", 300, 1) as usize;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // As `svc serve` does at start (src/server/children.rs): this process and every child a
    // subreaper, a sweep after each child's end, so the figures include what that costs.
    // `--trees 0` leaves children in their process groups only, to show that cost.
    if arg("--trees", 1) == 0 {
        println!("children's trees: process groups only (--trees 0)");
    } else {
        match svc::services::supervisor::keep_whole_trees() {
            Ok(()) => {
                println!("children's trees: every child a subreaper (as `svc serve` runs them)")
            }
            Err(why) => println!("children's trees: process groups only ({why})"),
        }
    }
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        // 1,000 calls at once are 1,000 connections, near the default cap of 1,024
        // (`server.connections.max`) with the earlier points' connections still closing:
        // raised as a template would, so the curve measures the calls, not the cap.
        let points = curve(&[10, 100, 1000]);
        let largest = points.iter().copied().max().unwrap_or(0);
        raise_descriptor_limit(6 * largest as u64 + 1024);
        let cap = (largest + 100).max(svc::connections::default_max_connections());
        let (base, _state) = serve_with_connections(dir.path(), &[], Some(cap)).await;
        let client = reqwest::Client::new();
        let direct_true = serde_json::json!({"cmd": "true", "args": []});
        let line_true = serde_json::json!({"cmd": "true"});
        // Warm up both paths (page cache, connection, allocator).
        for _ in 0..20 {
            shell(&client, &base, &direct_true).await;
            spawn_and_wait("true", &[]).await;
        }
        let (mut server_direct, mut floor_direct) = (Vec::new(), Vec::new());
        let (mut server_line, mut floor_line) = (Vec::new(), Vec::new());
        let (mut stream_first, mut floor_first) = (Vec::new(), Vec::new());
        // Interleaved, so drift in the machine's load hits both sides alike.
        for _ in 0..rounds {
            server_direct.push(ms(shell(&client, &base, &direct_true).await));
            floor_direct.push(ms(spawn_and_wait("true", &[]).await));
            server_line.push(ms(shell(&client, &base, &line_true).await));
            floor_line.push(ms(spawn_and_wait("/bin/sh", &["-c", "true"]).await));
            stream_first.push(ms(first_stdout_event(&client, &base).await));
            floor_first.push(ms(first_byte("echo", &["hi"]).await));
        }
        report("shell `true` (no shell)", server_direct, floor_direct);
        report("shell `true` (sh -c)", server_line, floor_line);
        report("shell_stream first stdout", stream_first, floor_first);

        let walls = arg_quick("--walls", 5, 1) as usize;
        for count in points {
            // Per call in this process: the client's socket and the server's, the server's
            // pipes for the child's output; per direct spawn two pipes.
            let need = 6 * count as u64 + 1024;
            let limit = raise_descriptor_limit(need);
            if limit < need {
                println!(
                    "scale: {count:>4} concurrent POST /shell: STOPPED, needs about {need} open descriptors and the hard limit is {limit}"
                );
                continue;
            }
            let (mut server_wall, mut floor_wall) = (Vec::new(), Vec::new());
            for _ in 0..walls {
                let started = Instant::now();
                let calls = (0..count).map(|_| shell(&client, &base, &direct_true));
                futures::future::join_all(calls).await;
                server_wall.push(ms(started.elapsed()));
                let started = Instant::now();
                futures::future::join_all((0..count).map(|_| spawn_and_wait("true", &[]))).await;
                floor_wall.push(ms(started.elapsed()));
            }
            let (s50, f50) = (median(server_wall.clone()), median(floor_wall.clone()));
            report(
                &format!("{count} concurrent shells (wall)"),
                server_wall,
                floor_wall,
            );
            println!(
                "scale: {count:>4} concurrent POST /shell: wall {s50:8.1} ms ({:.2} ms per call); {count} direct spawns at once {f50:8.1} ms ({:.2} ms per spawn); ratio {:.2}",
                s50 / count as f64,
                f50 / count as f64,
                s50 / f50
            );
        }
    });
}
