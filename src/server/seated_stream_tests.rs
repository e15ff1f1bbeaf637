//! A session's live followers over the server's real listener wait seated
//! (`event_log::seats`): the log writes their frames into their connections as chunks of
//! the answer hyper streams. Each follower reads exactly the session's frames, in order,
//! and its stream ends after the event that settles the session, as when it sent them
//! itself.

use super::serve_main;
use crate::server::agents::test_support::{agents_state, open_session};
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;
use tokio::net::TcpListener;

// Two worker threads: the log's writer and the followers' connections run at once, as in
// a server, so a chunk written while hyper still held bytes would show out of order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seated_followers_read_every_frame_in_order_and_end_where_the_session_settles() {
    let dir = tempfile::tempdir().unwrap();
    let state = agents_state(dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve_main(listener, state.clone()).into_future());
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    // Opened directly rather than created over HTTP, which wants the runtime installed:
    // only the session's log matters.
    let handle = open_session(&state);
    state.agents.register(handle.clone());
    let id = handle.id.clone();

    let mut followers = Vec::new();
    for _ in 0..3 {
        let answer = client
            .get(format!("{base}/v1/agents/sessions/{id}/events"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        followers.push(answer.bytes_stream());
    }
    let from = handle.log.newest();
    // Each follower is seated once it has sent what it had (nothing): wait for the first
    // push to reach all of them through their seats.
    handle.log.push("agent.session.test.first", json!({"n": 0}));
    for follower in &mut followers {
        read_frames(follower, 1).await;
    }
    for n in 1..=200 {
        let _burst = (n % 4 == 0).then(|| handle.log.burst());
        handle.log.push(
            "agent.session.test.more",
            json!({"n": n, "text": "x".repeat(n * 50)}),
        );
        if n % 7 == 0 {
            // The writer and the connections run between pushes, at varying points.
            tokio::task::yield_now().await;
        }
    }
    handle.log.push("agent.session.idle", json!({}));
    handle
        .log
        .push("agent.session.test.after_the_end", json!({}));
    let want: Vec<u8> = handle
        .log
        .after(from + 1)
        .events
        .iter()
        .take_while(|e| e.kind != "agent.session.test.after_the_end")
        .flat_map(|e| e.frame.to_vec())
        .collect();
    for follower in followers {
        let rest = tokio::time::timeout(Duration::from_secs(10), async {
            follower.map(|chunk| chunk.unwrap().to_vec()).concat().await
        })
        .await
        .expect("the stream ends after the settling event");
        assert!(
            rest == want,
            "every frame once, in order, up to the settling event:\n{}",
            String::from_utf8_lossy(&rest)
        );
    }
    assert!(
        handle.log.seated_batches() >= 3,
        "the frames went through the seats ({} batches)",
        handle.log.seated_batches()
    );
}

/// Reads until `count` frames have come (frames end with a blank line).
async fn read_frames(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    count: usize,
) {
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while seen.windows(2).filter(|w| w == b"\n\n").count() < count {
            seen.extend_from_slice(&stream.next().await.unwrap().unwrap());
        }
    })
    .await
    .expect("the frames in time");
}
