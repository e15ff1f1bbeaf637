//! `just bench` (terminal part): the echo round trip of one byte through a terminal over the
//! WebSocket of the terminal port (the whole server: pipeline, the PTY service's reader and
//! fan-out, the socket task), against a floor measured in the same run: the same echo
//! through a PTY opened here directly, no server.
//!
//! Both run `cat` on a raw terminal (`stty raw -echo; exec cat`), so each byte goes through
//! the line discipline, a process and back, the way a keystroke a shell echoes does. One
//! byte is sent, the next is sent once it came back; `--samples N` (default 2000; 100 under
//! `--quick`) round trips each, after 200 to warm up; p50 and p99 reported. Target: p50 under
//! 1 ms through the server.

// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;

use futures::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{arg_quick, percentile};
use svc::server::config::{LoadOptions, Settings};
use svc::server::{AppState, SharedState};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

const WARM_UP: usize = 200;
const SETUP: &str = "stty raw -echo; exec cat\n";

/// The main and terminal listeners of one in-process server, TCP_NODELAY as `svc serve`
/// sets it; their base URLs.
async fn serve() -> (String, String, SharedState) {
    let env: std::collections::BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| !k.starts_with("SVC_"))
        .collect();
    let settings = Settings::load_with_env(&LoadOptions::default(), &env).unwrap();
    let state = AppState::with_settings(settings);
    let mut urls = Vec::new();
    for app in [
        svc::app(Arc::clone(&state)),
        svc::server::router::terminal_app(Arc::clone(&state)),
    ] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}", listener.local_addr().unwrap()));
        let listener =
            axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
                let _ = tcp.set_nodelay(true);
            });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    }
    let terminal = urls.pop().unwrap();
    (urls.pop().unwrap(), terminal, state)
}

/// Round trips of one byte through the server's WebSocket, in milliseconds.
async fn through_server(samples: usize) -> Vec<f64> {
    let (base, terminal, state) = serve().await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let cwd = std::env::current_dir().unwrap();
    let record: serde_json::Value = client
        .post(format!("{base}/pty"))
        .json(&serde_json::json!({"shell": "/bin/sh", "cwd": cwd}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = record["id"].as_str().unwrap_or_else(|| panic!("{record}"));
    let url = format!("{}/pty/{id}/connect", terminal.replacen("http", "ws", 1));
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, None, true)
        .await
        .unwrap();
    ws.send(Message::Binary(SETUP.as_bytes().to_vec().into()))
        .await
        .unwrap();
    settle_ws(&mut ws).await;
    let mut lats = Vec::with_capacity(samples);
    for i in 0..WARM_UP + samples {
        let started = Instant::now();
        ws.send(Message::Binary(vec![b'x'].into())).await.unwrap();
        loop {
            match ws.next().await.unwrap().unwrap() {
                Message::Binary(b) if b.contains(&b'x') => break,
                _ => {}
            }
        }
        if i >= WARM_UP {
            lats.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    state.end_children().await;
    lats
}

/// Reads until the terminal has been quiet for a moment (the setup line's echo).
async fn settle_ws<S>(ws: &mut S)
where
    S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    while tokio::time::timeout(Duration::from_millis(300), ws.next())
        .await
        .is_ok()
    {}
}

/// The same round trips through a PTY opened here: the floor.
async fn direct(samples: usize) -> Vec<f64> {
    let (pty, pts) = pty_process::open().unwrap();
    let mut child = pty_process::Command::new("/bin/sh")
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .spawn(pts)
        .unwrap();
    let (mut read, mut write) = pty.into_split();
    write.write_all(SETUP.as_bytes()).await.unwrap();
    let mut buf = [0u8; 4096];
    while let Ok(Ok(n)) =
        tokio::time::timeout(Duration::from_millis(300), read.read(&mut buf)).await
    {
        if n == 0 {
            break;
        }
    }
    let mut lats = Vec::with_capacity(samples);
    for i in 0..WARM_UP + samples {
        let started = Instant::now();
        write.write_all(b"x").await.unwrap();
        loop {
            let n = read.read(&mut buf).await.unwrap();
            if buf[..n].contains(&b'x') {
                break;
            }
        }
        if i >= WARM_UP {
            lats.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
    lats
}

fn main() {
    let samples = arg_quick("--samples", 2000, 100).max(1) as usize;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let floor = direct(samples).await;
        let served = through_server(samples).await;
        let (fp50, fp99) = (percentile(floor.clone(), 0.5), percentile(floor, 0.99));
        let (sp50, sp99) = (percentile(served.clone(), 0.5), percentile(served, 0.99));
        println!(
            "terminal echo, 1 byte, PTY directly (floor): p50 {:.3} ms, p99 {:.3} ms ({samples} round trips)",
            fp50, fp99
        );
        println!(
            "terminal echo, 1 byte, WebSocket through the server: p50 {:.3} ms, p99 {:.3} ms (+{:.3} ms p50 over the floor; target p50 < 1 ms)",
            sp50,
            sp99,
            sp50 - fp50
        );
    });
}
