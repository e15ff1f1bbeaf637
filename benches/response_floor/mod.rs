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
                    let kind = if line.contains("text_delta") {
                        "response.output_text.delta"
                    } else {
                        "runtime.line"
                    };
                    Ok::<_, std::convert::Infallible>(bytes::Bytes::from(format!(
                        "event: {kind}\ndata: {line}\n\n"
                    )))
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

/// The child's stdout as lines, until it closes.
fn tokio_stream_lines(
    stdout: tokio::process::ChildStdout,
) -> impl futures::Stream<Item = String> + Send {
    futures::stream::unfold(
        tokio::io::BufReader::new(stdout).lines(),
        |mut lines| async move { lines.next_line().await.ok().flatten().map(|l| (l, lines)) },
    )
}
