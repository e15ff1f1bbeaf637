//! The floor of a command run over HTTP: a bare axum server that answers a POST by
//! spawning the program (as [`spawn_and_wait`](crate::support::spawn_and_wait) does) and
//! answering its exit code as JSON, on a runtime of its own as the engine has (two workers,
//! its own thread), read by a reqwest client set up as the engine's client is. What any
//! engine reached over loopback HTTP costs per command on this machine: the round trip, the
//! body read and written, the spawn; what svc adds beyond it is its own.

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

#[derive(Deserialize)]
struct Run {
    cmd: String,
    args: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Ran {
    exit_code: i32,
}

async fn run(axum::Json(body): axum::Json<Run>) -> axum::Json<Ran> {
    let out = crate::support::floor_command(&body.cmd, &body.args)
        .output()
        .await
        .unwrap();
    axum::Json(Ran {
        exit_code: out.status.code().unwrap_or(-1),
    })
}

/// The bare server, on its own two-worker runtime in a thread of its own for the life of
/// the bench; its base URL.
pub fn start() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let app = axum::Router::new().route("/run", axum::routing::post(run));
            tx.send(crate::server::serve_bare(app).await).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

/// A client like the engine's own (HTTP/1 only, no proxy, `TCP_NODELAY`).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .tcp_nodelay(true)
        .build()
        .unwrap()
}

/// One run of `cmd` through the bare server: the time from the request to its answer read.
pub async fn run_once(client: &reqwest::Client, base: &str, cmd: &str) -> Duration {
    let started = Instant::now();
    let ran: Ran = client
        .post(format!("{base}/run"))
        .json(&serde_json::json!({"cmd": cmd, "args": []}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ran.exit_code, 0);
    started.elapsed()
}
