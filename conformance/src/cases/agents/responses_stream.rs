//! Responses API streams (issue 4): POST stream:true, GET ?stream=true replay
//! with starting_after, background responses and cancel.

use std::time::Duration;

use super::support::responses::{
    RESPONSES, body, check_message, check_response, create, output_text, post_empty, replay, rpath,
    seqs, stream_create,
};
use super::support::sessions::{Api, on_each_runtime, expect_error_param, id_of, read_to_end, types};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};

const LIFECYCLE: [&str; 3] = [
    "response.created",
    "response.in_progress",
    "response.completed",
];

/// The design's order for one plain text answer: at least one delta whatever the runtime
/// (a runtime that reports whole messages gets its text as one delta).
fn check_order(events: &[Value], rt: &str) -> anyhow::Result<String> {
    let ts = types(events);
    let mut collapsed: Vec<&str> = Vec::new();
    let mut deltas = 0;
    for t in &ts {
        if t == "response.output_text.delta" {
            deltas += 1;
            if collapsed.last() == Some(&"response.output_text.delta") {
                continue;
            }
        }
        collapsed.push(t);
    }
    let want = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ];
    ensure!(collapsed == want, "{rt}: event order {ts:?}");
    ensure!(deltas >= 1, "{rt}: no deltas: {ts:?}");
    let id = &events[0]["response"]["id"];
    ensure!(
        id.is_string(),
        "{rt}: response.created carries the response: {}",
        events[0]
    );
    // The opening events show the response as it opened: running, with no output yet. The
    // OpenAI SDKs' stream helpers refuse an `output_item.added` whose index `created`
    // already showed ("Duplicate response output index 0").
    for opening in &events[..2] {
        let response = &opening["response"];
        ensure!(
            response["status"] == "in_progress" && response["output"] == json!([]),
            "{rt}: {} shows the response as it opened (in_progress, no output): {response}",
            opening["type"]
        );
    }
    for e in events {
        let ty = e["type"].as_str().unwrap_or_default();
        if LIFECYCLE.contains(&ty) {
            ensure!(
                &e["response"]["id"] == id,
                "{rt}: one response id across lifecycle events: {e}"
            );
        }
    }
    let added = &events[2]["item"];
    ensure!(
        added["type"] == "message" && added["id"].is_string(),
        "{rt}: item added: {added}"
    );
    let mut text = String::new();
    let mut done_text = None;
    for e in &events[2..] {
        let ty = e["type"].as_str().unwrap_or_default();
        if ty.starts_with("response.output_text") || ty.starts_with("response.content_part") {
            ensure!(
                e["item_id"] == added["id"] && e["output_index"] == 0 && e["content_index"] == 0,
                "{rt}: {e}"
            );
        }
        match ty {
            "response.output_text.delta" => {
                ensure!(e["logprobs"] == json!([]), "{rt}: delta logprobs: {e}");
                text.push_str(e["delta"].as_str().unwrap_or_default());
            }
            "response.output_text.done" => {
                ensure!(e["logprobs"] == json!([]), "{rt}: done logprobs: {e}");
                done_text = e["text"].as_str().map(str::to_owned);
            }
            "response.content_part.added" | "response.content_part.done" => {
                ensure!(
                    e["part"]["type"] == "output_text" && e["part"]["annotations"] == json!([]),
                    "{rt}: part: {e}"
                );
            }
            "response.output_item.done" => {
                ensure!(e["item"]["id"] == added["id"], "{rt}: item done id: {e}");
                check_message(&e["item"])?;
            }
            _ => {}
        }
    }
    let done_text = done_text.ok_or_else(|| anyhow!("{rt}: no output_text.done"))?;
    if rt == "rt-two" {
        ensure!(
            text == done_text,
            "{rt}: deltas {text:?} != done text {done_text:?}"
        );
    }
    let last = &events[events.len() - 1]["response"];
    check_response(last, rt, rt)?;
    ensure!(last["status"] == "completed", "{rt}: completed: {last}");
    ensure!(
        output_text(last) == done_text,
        "{rt}: final text {:?} != {done_text:?}",
        output_text(last)
    );
    id_of(last)
}

async fn streamed(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let events = stream_create(&api, &body(rt, "[[scenario:stream:1]] streamed words")).await?;
    check_order(&events, rt)?;
    Ok(())
}

/// A replay from before the kept history starts with the typed gap event, rendered from the
/// error table like the session stream's (its own param: `starting_after`).
async fn replay_gap(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let words = "many words streamed one by one so that the response holds more events than kept";
    // Every command is an item added and done: eight of them outgrow 20 kept events.
    let prompt = format!(
        "{} [[scenario:stream:1]] {words}",
        "[[scenario:command]] ".repeat(8)
    );
    // Created synchronously, not followed live: a live reader that the server first polls
    // after more than 20 events would itself (rightly) start with the gap signal, and this
    // case is about replays only.
    let done = create(&api, &body(rt, &prompt)).await?;
    let id = id_of(&done)?;
    ensure!(done["status"] == "completed", "{rt}: {done}");
    for k in [None, Some(0), Some(1)] {
        let query = match k {
            Some(k) => format!("?stream=true&starting_after={k}"),
            None => "?stream=true".to_owned(),
        };
        // Read raw: the gap event is no numbered event of the response, so it has no `id:`.
        let frames = read_to_end(ctx, api.get(&format!("/v1/responses/{id}{query}"))).await?;
        let got: Vec<Value> = frames
            .iter()
            .filter_map(|f| f.data.as_deref())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        let first = got
            .first()
            .ok_or_else(|| anyhow!("{rt}: nothing replayed"))?;
        ensure!(
            first["type"] == "error"
                && first["code"] == "agents.events_dropped"
                && first["param"] == "starting_after",
            "{rt} starting_after={k:?}: first event {first}"
        );
        // The gap event stands at the last dropped position; the kept events follow it.
        let last_dropped = first["sequence_number"]
            .as_u64()
            .ok_or_else(|| anyhow!("{rt}: gap event without sequence_number: {first}"))?;
        let kept = &got[1..];
        ensure!(
            !kept.is_empty() && kept.len() <= 20,
            "{rt}: {} kept events",
            kept.len()
        );
        let want: Vec<u64> = (last_dropped + 1..=last_dropped + kept.len() as u64).collect();
        ensure!(
            seqs(kept) == want,
            "{rt}: kept events follow the gap: {:?}",
            seqs(kept)
        );
        ensure!(
            kept.last().map(|e| &e["type"]) == Some(&json!("response.completed")),
            "{rt}: the kept events end as the response did"
        );
    }
    Ok(())
}

/// For every k in 0..=n, `stream=true&starting_after=k` yields events k+1..n, then closes.
async fn replay_property(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let live = stream_create(&api, &body(rt, "[[scenario:stream:1]] replayed words")).await?;
    let id = check_order(&live, rt)?;
    let all = replay(&api, &id, None).await?;
    ensure!(
        types(&all) == types(&live) && seqs(&all) == seqs(&live),
        "{rt}: replay from the start: {:?}",
        types(&all)
    );
    for k in 0..=all.len() {
        let got = replay(&api, &id, Some(k))
            .await
            .map_err(|e| anyhow!("{rt}: starting_after={k} of {}: {e}", all.len()))?;
        ensure!(
            got == all[k..],
            "{rt}: starting_after={k} gave {:?}, expected {:?}",
            seqs(&got),
            seqs(&all[k..])
        );
    }
    Ok(())
}

/// Background + [[scenario:hang]]: at once, then cancel; cancel again refused.
async fn background_cancel(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let b = json!({"model": rt, "input": "[[scenario:hang]]", "background": true});
    let r = tokio::time::timeout(Duration::from_secs(5), create(&api, &b))
        .await
        .map_err(|_| anyhow!("{rt}: a background create must answer at once"))??;
    check_response(&r, rt, rt)?;
    ensure!(
        ["queued", "in_progress"].contains(&r["status"].as_str().unwrap_or("")),
        "{rt}: background status: {r}"
    );
    ensure!(r["background"] == true, "{rt}: background: {r}");
    let id = id_of(&r)?;
    let follow = api
        .get(&rpath(&id, "?stream=true"))
        .timeout(Duration::from_secs(20));
    let reader = {
        let ctx = ctx.clone();
        tokio::spawn(async move { read_to_end(&ctx, follow).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let resp = api.send(post_empty(&api, &rpath(&id, "/cancel"))).await?;
    resp.expect_status(200)?;
    let c = resp.json()?;
    check_response(&c, rt, rt)?;
    ensure!(
        c["status"] == "cancelled" && c["id"] == id.as_str(),
        "{rt}: cancel answer: {c}"
    );
    let got = api.json(&rpath(&id, "")).await?;
    ensure!(
        got["status"] == "cancelled",
        "{rt}: GET after cancel: {got}"
    );
    let frames = reader.await??;
    let events = super::support::responses::resp_events(&frames)?;
    let last = events.last().ok_or_else(|| anyhow!("{rt}: empty stream"))?;
    ensure!(
        last["type"] == "response.failed" && last["response"]["status"] == "cancelled",
        "{rt}: a cancelled stream ends with response.failed / cancelled: {:?} {last}",
        types(&events)
    );
    ensure!(
        events[0]["type"] == "response.created",
        "{rt}: {:?}",
        types(&events)
    );
    let again = api.send(post_empty(&api, &rpath(&id, "/cancel"))).await?;
    again.expect_error(400, "agents.not_cancellable")?;
    Ok(())
}

/// The live POST stream of a response cancelled while it runs.
async fn live_cancel(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let b = json!({"model": rt, "input": "[[scenario:hang]]", "stream": true});
    let rb = api.post(RESPONSES, &b).timeout(Duration::from_secs(20));
    let mut stream = ctx.sse(rb).await?;
    let first = stream
        .next_event_within(Duration::from_secs(10))
        .await?
        .ok_or_else(|| anyhow!("{rt}: stream closed at once"))?;
    let mut frames = vec![first];
    let created = frames[0].json()?;
    ensure!(
        created["type"] == "response.created",
        "{rt}: first event {created}"
    );
    let id = id_of(&created["response"])?;
    let resp = api.send(post_empty(&api, &rpath(&id, "/cancel"))).await?;
    resp.expect_status(200)?;
    while let Some(f) = stream.next_event_within(Duration::from_secs(10)).await? {
        frames.push(f);
    }
    let events = super::support::responses::resp_events(&frames)?;
    let want: Vec<u64> = (1..=events.len() as u64).collect();
    ensure!(seqs(&events) == want, "{rt}: sequence {:?}", seqs(&events));
    let last = &events[events.len() - 1];
    ensure!(
        last["type"] == "response.failed" && last["response"]["status"] == "cancelled",
        "{rt}: {:?} {last}",
        types(&events)
    );
    ensure!(
        !types(&events)
            .iter()
            .any(|t| t == "response.cancelled" || t == "response.completed"),
        "{rt}: {:?}",
        types(&events)
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/responses/020",
            spec: "stream:true: response.created, response.in_progress, output_item.added, content_part.added, output_text.delta… (one or more, on both runtimes), output_text.done, content_part.done, output_item.done, response.completed; sequence_number 1,2,3…; deltas make the final text; the server closes after the terminal event (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, streamed).await
            },
        },
        case! {
            id: "agents/responses/048",
            spec: "A response replay (`GET ?stream=true`, with or without `starting_after`) from before the kept history starts with an `error` event, code agents.events_dropped, param starting_after, then the kept events (SVC_AGENTS_EVENT_HISTORY=20; both runtimes).",
            profile: &profiles::AGENTS_SESSIONS_SMALL_HISTORY,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create", "agents_responses_get"],
            codes: ["agents.events_dropped"],
            run: |ctx| async move {
                on_each_runtime(&ctx, replay_gap).await
            },
        },
        case! {
            id: "agents/responses/021",
            spec: "GET ?stream=true replays from the start then closes; for every k, &starting_after=k yields exactly the events with sequence_number > k, then closes (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create", "agents_responses_get"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, replay_property).await
            },
        },
        case! {
            id: "agents/responses/022",
            spec: "starting_after without stream=true, or a bad starting_after, is 400 invalid_request param starting_after.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_get"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let id = id_of(&create(&api, &body("rt-one", "positions")).await?)?;
                for q in ["?starting_after=1", "?stream=true&starting_after=abc", "?stream=true&starting_after=-1"] {
                    let resp = api.send(api.get(&rpath(&id, q))).await?;
                    expect_error_param(&resp, 400, "invalid_request", "starting_after").map_err(|e| anyhow!("{q}: {e}"))?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/responses/023",
            spec: "background:true with [[scenario:hang]] answers at once (queued|in_progress); cancel → 200 status cancelled; the followed stream ends with response.failed whose response.status is cancelled; cancel again → 400 agents.not_cancellable (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create", "agents_responses_cancel", "agents_responses_get"],
            codes: ["agents.not_cancellable"],
            run: |ctx| async move {
                on_each_runtime(&ctx, background_cancel).await
            },
        },
        case! {
            id: "agents/responses/024",
            spec: "The live stream:true stream of a response cancelled while it runs ends with response.failed (response.status cancelled), never response.cancelled, then closes (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create", "agents_responses_cancel"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, live_cancel).await
            },
        },
        case! {
            id: "agents/responses/025",
            spec: "Cancelling a completed response is 400 agents.not_cancellable; the response stays completed.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_cancel"],
            codes: ["agents.not_cancellable"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let id = id_of(&create(&api, &body("rt-one", "done already")).await?)?;
                let resp = api.send(post_empty(&api, &rpath(&id, "/cancel"))).await?;
                resp.expect_error(400, "agents.not_cancellable")?;
                let got = api.json(&rpath(&id, "")).await?;
                ensure!(got["status"] == "completed", "status after a refused cancel: {got}");
                Ok(())
            },
        },
        case! {
            id: "agents/responses/026",
            spec: "Snapshot of the event types of a streamed rt-two response.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let events = stream_create(&api, &body("rt-two", "[[scenario:stream:1]] snapshot stream")).await?;
                check_order(&events, "rt-two")?;
                ctx.snapshot("agents__responses__stream_types_rt_two", &json!(types(&events)))
            },
        },
    ]
}
