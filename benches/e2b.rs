//! `just bench` (E2B part): the unchanged Python `e2b` SDK through the engine's E2B front,
//! against the same work through our own client and the physical floors, same run.
//!
//! - `commands.run("true")`: the SDK runs `/bin/bash -l -c true` in the sandbox, so our own
//!   client runs that same argv (`commands/run`) in the same sandbox (the front's sandboxes
//!   are ordinary engine sandboxes); the SDK's
//!   p50 minus the client's is what the SDK and the front add together. The front alone: the
//!   SDK's own request (`process.Process/Start`, a Connect stream of JSON envelopes) sent by a
//!   plain Rust HTTP client, against the client's `commands/run`. Target: the front adds
//!   under 1 ms at p50. Floors: spawning `true` and `bash -l -c true` directly.
//! - files: the SDK's `files.write` and `files.read` of 64 MiB (`--mib N`), against `cp` of
//!   the same file; the SDK holds the whole file in memory and copies it, which is the floor
//!   no front can move; and the same `POST`/`GET /files` by a client that copies nothing
//!   (`sendfile` out, `splice` in), which is what the front itself allows, against the
//!   file sent over one loopback TCP connection the same way.
//!
//! `--quick`: one round of each. Needs the SDK's venv (`just e2b-python-env`; `SVC_E2B_VENV` names another).

// Shared with the other benches; this one uses only part of it.
#[path = "support/raw_client.rs"]
#[allow(dead_code)]
mod raw_client;
#[allow(dead_code)]
mod support;

use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use support::{arg, arg_quick, median, ms, percentile, spawn_and_wait};
use svc::client::{Client, ClientOptions};
use svc::wire::CommandBody;

fn svc_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_svc"))
}

fn python() -> PathBuf {
    let venv = std::env::var_os("SVC_E2B_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/svc/e2b-venv")
        });
    venv.join("bin/python")
}

/// `svc e2b env` in `state`: the three variables it exports.
fn e2b_env(state: &Path) -> HashMap<String, String> {
    let out = std::process::Command::new(svc_binary())
        .args(["e2b", "env"])
        .env("SVC_STATE_DIR", state)
        .stderr(std::process::Stdio::null())
        .output()
        .expect("svc e2b env");
    assert!(out.status.success(), "svc e2b env failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("export ")?.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// One Connect envelope: flag 0, big-endian length, the JSON message.
fn envelope(message: &Value) -> Vec<u8> {
    let json = serde_json::to_vec(message).unwrap();
    let mut out = vec![0u8];
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(&json);
    out
}

fn bash_true() -> CommandBody {
    CommandBody {
        cmd: "/bin/bash".into(),
        args: Some(vec!["-l".into(), "-c".into(), "true".into()]),
        ..CommandBody::default()
    }
}

#[tokio::main]
async fn main() {
    let rounds = arg_quick("--rounds", 200, 1);
    let copies = arg_quick("--copies", 5, 1);
    let mib = arg("--mib", 64);
    if !python().is_file() {
        println!(
            "e2b: no SDK venv at {}: run `just e2b-python-env` first; skipped",
            python().display()
        );
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let vars = e2b_env(state.path());
    let (api, envd, key) = (
        &vars["E2B_API_URL"],
        &vars["E2B_SANDBOX_URL"],
        &vars["E2B_API_KEY"],
    );
    let http = reqwest::Client::new();

    // The front's sandbox, made through its control plane as the SDK makes one.
    let made: Value = http
        .post(format!("{api}/sandboxes"))
        .header("x-api-key", key)
        .json(&json!({"templateID": "base", "timeout": 600}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sandbox_id = made["sandboxID"].as_str().expect("a sandbox id").to_owned();
    let token = made["envdAccessToken"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    // The SDK's own request for `commands.run("true")`, sent plainly.
    let start = envelope(
        &json!({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "true"], "envs": {}}}),
    );
    let connect_start = || {
        http.post(format!("{envd}/process.Process/Start"))
            .header("content-type", "application/connect+json")
            .header("connect-protocol-version", "1")
            .header("e2b-sandbox-id", &sandbox_id)
            .header("e2b-sandbox-port", "49983")
            .header("x-access-token", &token)
            .body(start.clone())
            .send()
    };

    let client = Client::new(ClientOptions {
        state_dir: state.path().to_path_buf(),
        program: Some(svc_binary()),
        ..ClientOptions::default()
    })
    .expect("a client");
    let own = sandbox_id.clone();

    for _ in 0..10 {
        client.run(&own, &bash_true()).await.unwrap();
        connect_start().await.unwrap().bytes().await.unwrap();
    }
    let (mut via_client, mut via_front, mut floor, mut floor_bash) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        floor.push(ms(spawn_and_wait("true", &[]).await));
        floor_bash.push(ms(spawn_and_wait("bash", &["-l", "-c", "true"]).await));
        let started = Instant::now();
        let result = client.run(&own, &bash_true()).await.unwrap();
        via_client.push(ms(started.elapsed()));
        assert_eq!(result.exit_code, 0);
        let started = Instant::now();
        let body = connect_start().await.unwrap().bytes().await.unwrap();
        via_front.push(ms(started.elapsed()));
        assert!(
            String::from_utf8_lossy(&body).contains("\"end\""),
            "an end event"
        );
    }

    let work = tempfile::tempdir().unwrap();
    let source = support::source_file(work.path(), mib);
    let mut cp = Vec::new();
    for round in 0..copies.min(3) {
        let target = work.path().join(format!("cp-{round}.bin"));
        cp.push(support::cp_once(&source, &target));
    }
    // The same bytes through the front's `/files` by a client that copies nothing (the
    // body sent with `sendfile`, the answer spliced into a file): what the front itself
    // allows, apart from the SDK's own copies; against the file-over-TCP floor.
    let (mut plain_write, mut plain_read, mut over_tcp) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..copies {
        let (envd, sandbox_id, token) = (envd.clone(), sandbox_id.clone(), token.clone());
        let (source, back, tcp) = (
            source.clone(),
            work.path().join(format!("plain-back-{round}.bin")),
            work.path().join(format!("tcp-{round}.bin")),
        );
        let (write_s, read_s, tcp_s) = tokio::task::spawn_blocking(move || {
            let target = format!("/files?path=/home/user/plain-{round}.bin");
            let headers = [
                ("e2b-sandbox-id", sandbox_id.as_str()),
                ("x-access-token", token.as_str()),
            ];
            let mut with_type = headers.to_vec();
            with_type.push(("content-type", "application/octet-stream"));
            let write_s = raw_client::send_file(&envd, "POST", &target, &with_type, &source);
            let read_s = raw_client::get_splice_with(&envd, &target, &headers, &back);
            assert_eq!(
                std::fs::metadata(&back).unwrap().len(),
                std::fs::metadata(&source).unwrap().len()
            );
            (write_s, read_s, raw_client::file_over_tcp(&source, &tcp))
        })
        .await
        .unwrap();
        plain_write.push(write_s * 1000.0);
        plain_read.push(read_s * 1000.0);
        over_tcp.push(tcp_s * 1000.0);
    }

    let out = tokio::process::Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/e2b_sdk.py"))
        .args([
            &sandbox_id,
            &rounds.to_string(),
            &source.display().to_string(),
        ])
        .envs(&vars)
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "the SDK's side failed");
    let sdk: Value = serde_json::from_slice(&out.stdout).expect("the SDK's figures");
    let list = |name: &str, scale: f64| -> Vec<f64> {
        sdk[name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() * scale)
            .collect()
    };
    let via_sdk = list("run_ms", 1.0);
    let (write, read) = (
        median(list("write_s", 1000.0)),
        median(list("read_s", 1000.0)),
    );

    let (c50, f50, s50) = (
        median(via_client.clone()),
        median(via_front.clone()),
        median(via_sdk.clone()),
    );
    let (t50, b50) = (median(floor), median(floor_bash));
    println!(
        "e2b commands.run(\"true\") = `bash -l -c true`, all in one isolated sandbox, {rounds} rounds: \
         Python SDK p50 {s50:.2} ms, p99 {:.2} ms; the SDK's request sent plainly p50 {f50:.2} ms, \
         p99 {:.2} ms; our client's commands/run p50 {c50:.2} ms, p99 {:.2} ms; floors: spawn \
         `bash -l -c true` {b50:.2} ms, spawn `true` {t50:.2} ms",
        percentile(via_sdk, 0.99),
        percentile(via_front, 0.99),
        percentile(via_client, 0.99),
    );
    println!(
        "e2b front added over our client p50 {:.2} ms (target < 1 ms: {}); the SDK and the front \
         together {:.2} ms",
        f50 - c50,
        if f50 - c50 < 1.0 { "met" } else { "NOT met" },
        s50 - c50
    );
    let cp = median(cp);
    let (plain_write, plain_read, over_tcp) =
        (median(plain_write), median(plain_read), median(over_tcp));
    let rate = |t: f64| mib as f64 / (t / 1000.0);
    println!(
        "e2b files {mib} MiB through the Python SDK: write {write:.0} ms ({:.0} MiB/s), read \
         {read:.0} ms ({:.0} MiB/s); cp {cp:.0} ms ({:.0} MiB/s); throughput ratio to cp: \
         write {:.2}, read {:.2}",
        rate(write),
        rate(read),
        rate(cp),
        cp / write,
        cp / read
    );
    println!(
        "e2b files {mib} MiB through the front's /files by a client that copies nothing (the \
         SDK's request without its copies): write {plain_write:.0} ms ({:.0} MiB/s), read \
         {plain_read:.0} ms ({:.0} MiB/s); floor: the file over one loopback TCP connection \
         {over_tcp:.0} ms ({:.0} MiB/s); throughput ratio to that floor: write {:.2}, read {:.2}; \
         to cp: write {:.2}, read {:.2}",
        rate(plain_write),
        rate(plain_read),
        rate(over_tcp),
        over_tcp / plain_write,
        over_tcp / plain_read,
        cp / plain_write,
        cp / plain_read
    );
    let _ = http
        .delete(format!("{api}/sandboxes/{sandbox_id}"))
        .header("x-api-key", key)
        .send()
        .await;
    let _ = client.stop_engine(std::time::Duration::from_secs(10)).await;
}
