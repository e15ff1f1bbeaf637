//! Streamed session create (issue 17, item 1): `POST /v1/agents/sessions` with
//! `stream: true` answers the session's events as server-sent events, from its creation
//! through its first turn, as the SDKs' create-stream helpers (Python
//! `AgentSessionEventStream`, npm `AgentSessionCreateStream`) read them.

use super::support::checks::{event_data, pre_redact, types};
use super::support::sessions::{Api, RUNTIMES, read_to_end};
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};
use std::time::Duration;

const SESSIONS: &str = "/v1/agents/sessions";

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/sessions_stream/001",
            spec: "`stream: true` with `input`: the answer is `text/event-stream` carrying the session's events from `agent.session.created` through its first turn, ending with `agent.session.idle`; every frame is a session event (frame id = sequence number, event = type); the session and its turn exist afterwards. Both runtimes.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for runtime in RUNTIMES {
                    let body = json!({"runtime": runtime, "input": "streamed create", "stream": true, "stream_options": {"include_obfuscation": false}});
                    let stream = ctx.sse(api.post(SESSIONS, &body)).await?;
                    ensure!(stream.status == 200, "{runtime}: status {}", stream.status);
                    let ct = stream.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
                    ensure!(ct.starts_with("text/event-stream"), "{runtime}: {ct}");
                    drop(stream);
                    let frames = read_to_end(&ctx, api.post(SESSIONS, &body)).await?;
                    let first = frames.first().context("no events")?.json()?;
                    let sid = first["session_id"].as_str().context("session_id")?.to_owned();
                    let events = event_data(&frames, &sid)?;
                    let kinds = types(&events);
                    ensure!(kinds.first().map(String::as_str) == Some("agent.session.created"), "{runtime}: {kinds:?}");
                    ensure!(kinds.last().map(String::as_str) == Some("agent.session.idle"), "{runtime}: ends when the first turn settles: {kinds:?}");
                    ensure!(kinds.iter().any(|k| k.starts_with("agent.session.turn.")), "{runtime}: the turn's events are in it: {kinds:?}");
                    let turns = api.turns(&sid).await?;
                    ensure!(turns.len() == 1 && turns[0]["status"] == "completed", "{runtime}: {turns:?}");
                    if runtime == "rt-one" {
                        let seq: Vec<Value> = frames.iter().map(|f| Ok(json!({"id": f.id, "event": f.event, "data": f.json()?}))).collect::<anyhow::Result<_>>()?;
                        ctx.snapshot("agents__sessions_stream__created_turn", &pre_redact(&json!(seq))?)?;
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "agents/sessions_stream/002",
            spec: "`stream: true` without `input` (the self-hosted case: the session waits for its input): the stream opens with `agent.session.created` and follows the session until a first turn, sent later with `POST .../events`, settles.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_sessions_events_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let mut stream = ctx.sse(api.post(SESSIONS, &json!({"runtime": "rt-one", "stream": true}))).await?;
                ensure!(stream.status == 200, "status {}", stream.status);
                let created = stream.next_event_within(Duration::from_secs(10)).await?.context("a first event")?.json()?;
                ensure!(created["type"] == "agent.session.created", "{created}");
                let sid = created["session_id"].as_str().context("session_id")?.to_owned();
                let quiet = tokio::time::timeout(Duration::from_millis(500), stream.next_event()).await;
                ensure!(quiet.is_err(), "nothing more before an input: {quiet:?}");
                api.input(&sid, "later input").await?;
                let mut kinds = Vec::new();
                while let Some(frame) = stream.next_event_within(Duration::from_secs(30)).await? {
                    kinds.push(frame.json()?["type"].as_str().unwrap_or_default().to_owned());
                }
                ensure!(kinds.last().map(String::as_str) == Some("agent.session.idle"), "{kinds:?}");
                ensure!(api.turns(&sid).await?.len() == 1, "one turn");
                Ok(())
            },
        },
        case! {
            id: "agents/sessions_stream/003",
            spec: "`stream` is a boolean; `stream_options` is allowed only with `stream: true` and holds only `include_obfuscation` (a boolean): anything else is 400 `invalid_request` naming the parameter, and no session is made; `stream: false` answers the session object.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                // Cases share the server: the refused bodies carry a marker to look for.
                let marker = json!({"case": "sessions_stream-003"});
                for (body, param) in [
                    (json!({"runtime": "rt-one", "stream": "yes"}), "stream"),
                    (json!({"runtime": "rt-one", "stream_options": {"include_obfuscation": true}}), "stream_options"),
                    (json!({"runtime": "rt-one", "stream": false, "stream_options": {}}), "stream_options"),
                    (json!({"runtime": "rt-one", "stream": true, "stream_options": {"chunk": 1}}), "stream_options.chunk"),
                    (json!({"runtime": "rt-one", "stream": true, "stream_options": {"include_obfuscation": "no"}}), "stream_options.include_obfuscation"),
                ] {
                    let mut body = body.clone();
                    body["metadata"] = marker.clone();
                    let resp = api.send(api.post(SESSIONS, &body)).await?;
                    let err = resp.expect_error(400, "invalid_request")?;
                    ensure!(err["error"]["param"] == param, "{body}: {err}");
                }
                let made = api.all(SESSIONS).await?;
                ensure!(made.iter().all(|s| s["metadata"] != marker), "no session was made");
                let session = api.create(&json!({"runtime": "rt-one", "stream": false})).await?;
                ensure!(session["object"] == "agent.session", "{session}");
                Ok(())
            },
        },
    ]
}
