//! Events out: GET /v1/agents/sessions/{id}/events, live and replayed (issue 3).

use std::time::Duration;

use super::support::sessions::{
    Api, on_each_runtime, event_data, expect_error_param, pre_redact, read_to_end, spath, types,
};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};

const TURN_END: [&str; 3] = [
    "agent.session.turn.completed",
    "agent.session.turn.failed",
    "agent.session.turn.cancelled",
];

fn pos(ts: &[String], ty: &str) -> anyhow::Result<usize> {
    ts.iter()
        .position(|t| t == ty)
        .ok_or_else(|| anyhow!("no {ty} in {ts:?}"))
}

/// The per-turn order of the design for one successful turn.
fn check_turn_order(events: &[Value], rt: &str) -> anyhow::Result<()> {
    let ts = types(events);
    let created = pos(&ts, "agent.session.turn.created")?;
    let started = pos(&ts, "agent.session.turn.in_progress")?;
    let completed = pos(&ts, "agent.session.turn.completed")?;
    let idle = ts
        .iter()
        .rposition(|t| t == "agent.session.idle")
        .ok_or_else(|| anyhow!("{rt}: no idle in {ts:?}"))?;
    ensure!(
        created < started && started < completed && completed < idle,
        "{rt}: order {ts:?}"
    );
    ensure!(idle == ts.len() - 1, "{rt}: idle is last: {ts:?}");
    let first_added = pos(&ts, "agent.session.turn.item.added")?;
    ensure!(
        first_added > started,
        "{rt}: items after turn.in_progress: {ts:?}"
    );
    let user = &events[first_added]["item"];
    ensure!(
        user["role"] == "user" && user["type"] == "message",
        "{rt}: first item.added is the user message: {user}"
    );
    let mut open = std::collections::HashSet::new();
    let mut text = String::new();
    let mut done_text = None;
    for e in &events[started..completed] {
        let ty = e["type"].as_str().unwrap_or_default();
        if ty.starts_with("agent.session.turn.") {
            ensure!(e["turn_id"].is_string(), "{rt}: turn_id in {e}");
        }
        match ty {
            "agent.session.turn.item.added" => {
                ensure!(e["output_index"].is_u64(), "{rt}: output_index {e}");
                open.insert(e["item"]["id"].clone());
            }
            "agent.session.turn.item.done" => {
                ensure!(
                    e["item"]["role"] != "user",
                    "{rt}: item.done for the user message: {e}"
                );
                ensure!(
                    open.contains(&e["item"]["id"]),
                    "{rt}: item.done before item.added: {e}"
                );
            }
            "agent.session.turn.output_text.delta" => {
                ensure!(
                    open.contains(&e["item_id"]) && e["content_index"] == 0,
                    "{rt}: delta {e}"
                );
                text.push_str(e["delta"].as_str().unwrap_or_default());
            }
            "agent.session.turn.output_text.done" => {
                done_text = e["text"].as_str().map(str::to_owned)
            }
            _ => {}
        }
    }
    let done_text = done_text.ok_or_else(|| anyhow!("{rt}: no output_text.done in {ts:?}"))?;
    ensure!(
        // codex streams no text deltas; when deltas are sent they make up the text.
        text.is_empty() || text == done_text,
        "{rt}: deltas {text:?} != done text {done_text:?}"
    );
    let turn = &events[completed]["turn"];
    ensure!(
        turn["status"] == "completed",
        "{rt}: turn.completed carries the turn: {}",
        events[completed]
    );
    Ok(())
}

async fn live(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let sid = api.create_on(rt, None).await?;
    let rb = api
        .get(&spath(&sid, "/events"))
        .timeout(Duration::from_secs(20));
    let mut stream = ctx.sse(rb).await?;
    api.input(&sid, "[[scenario:stream:20]] live words").await?;
    let mut frames = Vec::new();
    while let Some(f) = stream.next_event_within(Duration::from_secs(15)).await? {
        frames.push(f);
    }
    let events = event_data(&frames, &sid)?;
    let ts = types(&events);
    ensure!(
        ts.first().map(String::as_str) == Some("agent.session.turn.created"),
        "{rt}: live from now: {ts:?}"
    );
    check_turn_order(&events, rt)?;
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|e| e["sequence_number"].as_u64())
        .collect();
    ensure!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "{rt}: consecutive: {seqs:?}"
    );
    Ok(())
}

/// A settled session on `rt` with one plain turn; returns (id, all frames' data).
async fn scripted(api: &Api, rt: &str, prompt: &str) -> anyhow::Result<(String, Vec<Value>)> {
    let sid = api.create_on(rt, Some(prompt)).await?;
    api.settle(&sid, 1).await?;
    let frames = api.replay(&sid, "after=0").await?;
    let events = event_data(&frames, &sid)?;
    Ok((sid, events))
}

async fn replay_all(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (sid, events) = scripted(&api, rt, "[[scenario:reasoning]] replay me").await?;
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|e| e["sequence_number"].as_u64())
        .collect();
    let want: Vec<u64> = (1..=events.len() as u64).collect();
    ensure!(seqs == want, "{rt}: ids 1..n: {seqs:?}");
    let ts = types(&events);
    ensure!(ts[0] == "agent.session.created", "{rt}: first {ts:?}");
    ensure!(
        events[0]["session"]["id"] == sid.as_str(),
        "{rt}: {}",
        events[0]
    );
    check_turn_order(&events, rt)?;
    let n = events.len();
    // The three spellings of a position agree.
    let k = n / 2;
    for query in [format!("after={k}"), format!("after=evt_{k}")] {
        let got = event_data(&api.replay(&sid, &query).await?, &sid)?;
        ensure!(got == events[k..], "{rt}: {query}");
    }
    let rb = api
        .get(&spath(&sid, "/events"))
        .header("last-event-id", k.to_string());
    let got = event_data(&read_to_end(ctx, rb).await?, &sid)?;
    ensure!(got == events[k..], "{rt}: Last-Event-ID {k}");
    Ok(())
}

/// The replay property: for every k in 0..=n, `after=k` yields frames k+1..n in order, then closes.
async fn replay_property(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (sid, events) = scripted(
        &api,
        rt,
        "[[scenario:stream:1]] [[scenario:command]] property",
    )
    .await?;
    for k in 0..=events.len() {
        let got = event_data(&api.replay(&sid, &format!("after={k}")).await?, &sid)?;
        ensure!(
            got == events[k..],
            "{rt}: after={k} gave {:?}, expected {:?}",
            types(&got),
            types(&events[k..])
        );
    }
    Ok(())
}

async fn failed_and_cancelled(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (sid, events) = scripted(&api, rt, "[[scenario:fail]]").await?;
    let ts = types(&events);
    let failed = pos(&ts, "agent.session.turn.failed")?;
    ensure!(
        ts.last().map(String::as_str) == Some("agent.session.failed") && failed < ts.len() - 1,
        "{rt}: {ts:?}"
    );
    ensure!(
        events[failed]["turn"]["status"] == "failed",
        "{rt}: {}",
        events[failed]
    );
    ensure!(
        events
            .last()
            .is_some_and(|e| e["session"]["id"] == sid.as_str()),
        "{rt}: session in agent.session.failed"
    );
    let sid = api.create_on(rt, Some("[[scenario:hang]]")).await?;
    api.wait_turn(&sid, 0, "in_progress").await?;
    api.events(
        &sid,
        &json!({"events": [{"type": "agent.session.input.cancel"}]}),
    )
    .await?;
    api.settle(&sid, 1).await?;
    let ts = types(&event_data(&api.replay(&sid, "after=0").await?, &sid)?);
    let cancelled = pos(&ts, "agent.session.turn.cancelled")?;
    ensure!(
        ts.last().map(String::as_str) == Some("agent.session.idle") && cancelled < ts.len() - 1,
        "{rt}: {ts:?}"
    );
    ensure!(
        ts.iter().filter(|t| TURN_END.contains(&t.as_str())).count() == 1,
        "{rt}: one turn end: {ts:?}"
    );
    Ok(())
}

/// More than 20 events in one session, then replays from before the kept history.
async fn gap(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let sid = api.create_on(rt, Some("[[scenario:stream:1]] one")).await?;
    api.settle(&sid, 1).await?;
    for (i, word) in ["two", "three"].iter().enumerate() {
        api.input(&sid, &format!("[[scenario:stream:1]] {word}"))
            .await?;
        api.settle(&sid, i + 2).await?;
    }
    for query in ["after=0", "after=evt_1"] {
        let events = event_data(&api.replay(&sid, query).await?, &sid)?;
        let first = events
            .first()
            .ok_or_else(|| anyhow!("{rt}: nothing replayed"))?;
        ensure!(
            first["type"] == "error" && first["error"]["code"] == "agents.events_dropped",
            "{rt} {query}: first event {first}"
        );
        let kept = &events[1..];
        ensure!(
            !kept.is_empty() && kept.len() <= 20,
            "{rt}: {} kept events",
            kept.len()
        );
        let seqs: Vec<u64> = kept
            .iter()
            .filter_map(|e| e["sequence_number"].as_u64())
            .collect();
        ensure!(
            seqs.len() == kept.len() && seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "{rt}: kept {seqs:?}"
        );
        ensure!(
            kept.last()
                .is_some_and(|e| e["type"] == "agent.session.idle"),
            "{rt}: the newest is kept"
        );
        let n = seqs[seqs.len() - 1];
        let recent = event_data(&api.replay(&sid, &format!("after={}", n - 3)).await?, &sid)?;
        ensure!(
            recent == kept[kept.len() - 3..],
            "{rt}: a kept position replays without the gap signal"
        );
    }
    Ok(())
}

/// Live followers of one session: each receives the whole turn, exactly the frames a replay
/// from where they joined gives (id, event, data), in order, and is closed after the event
/// that settles the session. A server that writes to many followers at once (svc writes
/// them from the session's log, one task for all) must lose, repeat or reorder nothing.
async fn many_followers(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    const FOLLOWERS: usize = 50;
    let api = Api::new(ctx);
    let sid = api.create_on(rt, None).await?;
    let joined = api.replay(&sid, "after=0").await?.len();
    let mut streams = Vec::new();
    for _ in 0..FOLLOWERS {
        let rb = api
            .get(&spath(&sid, "/events"))
            .timeout(Duration::from_secs(30));
        streams.push(ctx.sse(rb).await?);
    }
    api.input(&sid, "[[scenario:stream:20]] many followers").await?;
    let mut received = Vec::new();
    for stream in &mut streams {
        let mut frames = Vec::new();
        while let Some(f) = stream.next_event_within(Duration::from_secs(15)).await? {
            // Keep-alive comments are not events.
            if f.data.is_some() {
                frames.push((f.id, f.event, f.data));
            }
        }
        received.push(frames);
    }
    let replayed: Vec<_> = api
        .replay(&sid, &format!("after={joined}"))
        .await?
        .into_iter()
        .map(|f| (f.id, f.event, f.data))
        .collect();
    let kinds = |frames: &[(Option<String>, Option<String>, Option<String>)]| {
        frames.iter().map(|f| f.1.clone().unwrap_or_default()).collect::<Vec<_>>()
    };
    ensure!(
        kinds(&replayed).last().map(String::as_str) == Some("agent.session.idle"),
        "{rt}: the turn settled: {:?}",
        kinds(&replayed)
    );
    for (i, frames) in received.iter().enumerate() {
        ensure!(
            *frames == replayed,
            "{rt}: follower {i} of {FOLLOWERS} got {:?}, the replay after {joined} is {:?}",
            kinds(frames),
            kinds(&replayed)
        );
    }
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/events/001",
            spec: "Without `after` the stream follows live from now: turn.created … turn.completed, agent.session.idle, then the server closes it (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_stream", "agents_sessions_events_create"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, live).await
            },
        },
        case! {
            id: "agents/events/002",
            spec: "`after=0` replays every event with ids 1..n (frame id = sequence_number, event = type, event_id evt_<seq>) then closes; `after=k`, `after=evt_k` and Last-Event-ID: k give k+1..n (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_stream"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, replay_all).await
            },
        },
        case! {
            id: "agents/events/003",
            spec: "Replay property: for a scripted turn and every k in 0..n, `after=k` yields exactly frames k+1..n in order, then closes (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_stream"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, replay_property).await
            },
        },
        case! {
            id: "agents/events/004",
            spec: "A failed turn ends with turn.failed then agent.session.failed; a cancelled one with turn.cancelled then agent.session.idle (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_stream", "agents_sessions_events_create"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, failed_and_cancelled).await
            },
        },
        case! {
            id: "agents/events/005",
            spec: "A replay position older than the kept history starts with an `error` event, code agents.events_dropped, then the kept events (SVC_AGENTS_EVENT_HISTORY=20).",
            profile: &profiles::AGENTS_SESSIONS_SMALL_HISTORY,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_stream"],
            codes: ["agents.events_dropped"],
            run: |ctx| async move {
                on_each_runtime(&ctx, gap).await
            },
        },
        case! {
            id: "agents/events/006",
            spec: "A bad `after` (or Last-Event-ID) is 400 invalid_request param after.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_stream"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = api.create_on("rt-one", None).await?;
                for after in ["abc", "evt_", "evt_x", "-1", "1.5", "turn_1"] {
                    let resp = api.send(api.get(&format!("{}?after={after}", spath(&sid, "/events")))).await?;
                    expect_error_param(&resp, 400, "invalid_request", "after").map_err(|e| anyhow!("after={after}: {e}"))?;
                }
                let resp = api.send(api.get(&spath(&sid, "/events")).header("last-event-id", "nope")).await?;
                let body = resp.expect_error(400, "invalid_request")?;
                let param = &body["error"]["param"];
                ensure!(param == "after" || param == "Last-Event-ID", "param names the position: {body}");
                Ok(())
            },
        },
        case! {
            id: "agents/events/007",
            spec: "Snapshot of the full event sequence of a plain rt-one turn (frames id, event and data).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_stream"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = api.create_on("rt-one", Some("snapshot turn")).await?;
                api.settle(&sid, 1).await?;
                let frames = api.replay(&sid, "after=0").await?;
                event_data(&frames, &sid)?;
                let seq: Vec<Value> = frames
                    .iter()
                    .map(|f| Ok(json!({"id": f.id, "event": f.event, "data": f.json()?})))
                    .collect::<anyhow::Result<_>>()?;
                ctx.snapshot("agents__events__plain_turn", &pre_redact(&json!(seq))?)
            },
        },
        case! {
            id: "agents/events/008",
            spec: "50 live followers of one session each receive exactly the frames `after=<where they joined>` replays (id, event, data), in order, and are closed after agent.session.idle (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_stream", "agents_sessions_events_create"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, many_followers).await
            },
        },
    ]
}
