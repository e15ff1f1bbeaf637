//! `just bench` (code part): `POST /code/run` of a trivial python3 snippet through the
//! whole server (pipeline, guards, supervisor, JSON), in process on loopback, against
//! running `python3 -c` on the same snippet directly from this process in the same run
//! (the floor: an interpreter's start-up and exit). Also the same snippet in a context
//! (the interpreter already running), which is what a caller sending many snippets pays.
//! p50 and p99 over `--rounds N` (default 100; one under `--quick`), interleaved.

// Shared with the other benches; this one uses only part of it.
#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;
// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;

use server::serve;
use std::time::{Duration, Instant};
use support::{arg_quick, ms, percentile};

const SNIPPET: &str = "print(6 * 7)";

async fn direct() -> Duration {
    let started = Instant::now();
    let out = tokio::process::Command::new("python3")
        .args(["-c", SNIPPET])
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.stdout, b"42\n");
    started.elapsed()
}

async fn code_run(client: &reqwest::Client, base: &str, context: Option<&str>) -> Duration {
    let mut body = serde_json::json!({"language": "python3", "code": SNIPPET});
    if let Some(id) = context {
        body["context_id"] = id.into();
    }
    let started = Instant::now();
    let resp = client
        .post(format!("{base}/code/run"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let answer: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(answer["stdout"], "42\n", "{answer}");
    started.elapsed()
}

fn report(what: &str, server: Vec<f64>, floor: Vec<f64>) {
    let (s50, s99) = (percentile(server.clone(), 0.5), percentile(server, 0.99));
    let (f50, f99) = (percentile(floor.clone(), 0.5), percentile(floor, 0.99));
    println!(
        "{what:<34} server p50 {s50:8.2} ms p99 {s99:8.2} ms | python3 -c p50 {f50:8.2} ms p99 {f99:8.2} ms | ratio p50 {:.2}",
        s50 / f50
    );
}

fn main() {
    let rounds = arg_quick("--rounds", 100, 1) as usize;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let (base, _state) = serve(
            dir.path(),
            &[("SVC_SERVER_ENABLED_GROUPS", "agents,dev_tools")],
        )
        .await;
        let client = reqwest::Client::new();
        for _ in 0..5 {
            code_run(&client, &base, None).await;
            code_run(&client, &base, Some("bench")).await;
            direct().await;
        }
        let (mut once, mut in_context, mut floor) = (Vec::new(), Vec::new(), Vec::new());
        // Interleaved, so drift in the machine's load hits every side alike.
        for _ in 0..rounds {
            once.push(ms(code_run(&client, &base, None).await));
            in_context.push(ms(code_run(&client, &base, Some("bench")).await));
            floor.push(ms(direct().await));
        }
        report("code_run python3 (no context)", once, floor.clone());
        report("code_run python3 (in a context)", in_context, floor);
    });
}
