//! A live session stream with nothing to say sends comment-only keep-alive frames (at most
//! 15 s apart), never a frame with an `id` or `event` but no `data` (which SSE clients such
//! as the OpenAI SDK cannot parse).

use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::json;
use std::time::{Duration, Instant};

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "agents/keepalive/001",
        spec: "GET .../events without `after` follows live; while the session is idle it sends keep-alive comment frames, at most 15 s apart.",
        profile: &profiles::AGENTS_SESSIONS,
        tags: [],
        endpoints: ["agents_sessions_events_stream"],
        codes: [],
        run: |ctx| async move {
            let resp = ctx.send(ctx.post_json("/v1/agents/sessions", &json!({"agent": {"model": "rt-one"}}))).await?;
            resp.expect_status(200)?;
            let id = resp.json()?["id"].as_str().context("session id")?.to_owned();
            let mut stream = ctx.sse(ctx.get(&format!("/v1/agents/sessions/{id}/events"))).await?;
            let started = Instant::now();
            let frame = tokio::time::timeout(Duration::from_secs(20), stream.next_frame())
                .await
                .context("no frame within 20 s: keep-alives must come at most 15 s apart")??
                .context("the live stream closed while the session was idle")?;
            ensure!(frame.data.is_none() && frame.id.is_none() && frame.event.is_none(), "a keep-alive is a comment only: {frame:?}");
            ensure!(!frame.comments.is_empty(), "{frame:?}");
            ensure!(started.elapsed() >= Duration::from_secs(10), "not a busy loop: {:?}", started.elapsed());
            Ok(())
        },
    }]
}
