//! The floor of a streamed response: a bare axum server whose one route spawns rt-two with
//! the arguments svc gives it and sends each line it prints as one SSE frame, the text
//! deltas named `response.output_text.delta`. It is what any HTTP server that streams a
//! CLI's output must do (read the request, spawn, read the pipe, write frames), with none of
//! svc's: no session, no event log, no mapping, no policy. Read by the same client as svc.

use axum::routing::post;
use futures::StreamExt;
use tokio::io::AsyncBufReadExt;

/// rt-two's arguments for a streamed run (Claude Code's `-p` with partial messages), the
/// prompt after them: the direct run's and the floor's (svc adds its permission mode).
pub const RT_TWO_STREAM: [&str; 6] = [
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
    "--",
];

/// The floor server on this runtime; its base URL. `workspace` is the child's directory.
pub async fn serve(workspace: std::path::PathBuf) -> String {
    let app = axum::Router::new().route(
        "/v1/responses",
        post(move |axum::Json(body): axum::Json<serde_json::Value>| {
            let workspace = workspace.clone();
            async move {
                let prompt = body["input"].as_str().unwrap_or_default().to_owned();
                let mut child = tokio::process::Command::new("rt-two")
                    .args(RT_TWO_STREAM)
                    .arg(&prompt)
                    .current_dir(workspace)
                    .stdout(std::process::Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .expect("rt-two on PATH");
                let stdout = child.stdout.take().expect("piped");
                let lines = tokio_stream_lines(stdout).map(move |line| {
                    let _keep = &child;
                    Ok::<_, std::convert::Infallible>(bytes::Bytes::from(frame(&line)))
                });
                (
                    [(http::header::CONTENT_TYPE, "text/event-stream")],
                    axum::body::Body::from_stream(lines),
                )
            }
        }),
    );
    crate::server::serve_bare(app).await
}

/// One line of rt-two as one SSE frame: its text deltas named as svc names them, so the
/// same client finds the first one in every server's stream.
fn frame(line: &str) -> String {
    let kind = if line.contains("text_delta") {
        "response.output_text.delta"
    } else {
        "runtime.line"
    };
    format!("event: {kind}\ndata: {line}\n\n")
}

/// The child's stdout as lines, until it closes.
fn tokio_stream_lines(
    stdout: tokio::process::ChildStdout,
) -> impl futures::Stream<Item = String> + Send {
    futures::stream::unfold(
        tokio::io::BufReader::new(stdout).lines(),
        |mut lines| async move { lines.next_line().await.ok().flatten().map(|l| (l, lines)) },
    )
}

/// The physical floor under [`serve`]: no HTTP framework and no async runtime. A thread per
/// connection reads the request, spawns rt-two as the direct run does (`std::process`, a
/// blocking read of its pipe) and writes each line as one chunked SSE frame the moment it is
/// read; the connection is kept for the next request. What a network hop and HTTP/1 framing
/// cost on this machine over the CLI alone, which nothing built on an async runtime goes
/// under. Its base URL.
pub fn serve_raw(workspace: std::path::PathBuf) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let (tcp, workspace) = (tcp.unwrap(), workspace.clone());
            std::thread::spawn(move || {
                tcp.set_nodelay(true).unwrap();
                let mut reader = BufReader::new(tcp.try_clone().unwrap());
                let mut out = tcp;
                loop {
                    // The head, then a body of its Content-Length.
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let prompt = body["input"].as_str().unwrap_or_default();
                    let mut child = std::process::Command::new("rt-two")
                        .args(RT_TWO_STREAM)
                        .arg(prompt)
                        .current_dir(&workspace)
                        .stdout(std::process::Stdio::piped())
                        .spawn()
                        .expect("rt-two on PATH");
                    out.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
                    )
                    .unwrap();
                    let stdout = child.stdout.take().expect("piped");
                    for line in BufReader::new(stdout).lines() {
                        let frame = frame(&line.unwrap_or_default());
                        out.write_all(format!("{:x}\r\n{frame}\r\n", frame.len()).as_bytes())
                            .unwrap();
                    }
                    out.write_all(b"0\r\n\r\n").unwrap();
                    child.wait().unwrap();
                }
            });
        }
    });
    base
}
