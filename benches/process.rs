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
//! - 100 concurrent shells: the wall time of 100 `POST /shell` of `true` at once, versus
//!   100 direct spawns at once.
//!
//! The benchmark and every child of the server are subreapers, as under `svc serve` (the
//! first line printed says so; `--trees 0` leaves children in their process groups only).

#[path = "support/server.rs"]
mod server;
// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;

use futures::StreamExt;
use server::serve;
use std::time::{Duration, Instant};
use support::{arg, first_byte, ms, percentile, spawn_and_wait};

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
    let rounds = arg("--rounds", 300) as usize;
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
        let (base, _state) = serve(dir.path(), &[]).await;
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

        let mut server_wall = Vec::new();
        let mut floor_wall = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            let calls = (0..100).map(|_| shell(&client, &base, &direct_true));
            futures::future::join_all(calls).await;
            server_wall.push(ms(started.elapsed()));
            let started = Instant::now();
            futures::future::join_all((0..100).map(|_| spawn_and_wait("true", &[]))).await;
            floor_wall.push(ms(started.elapsed()));
        }
        report("100 concurrent shells (wall)", server_wall, floor_wall);
    });
}
