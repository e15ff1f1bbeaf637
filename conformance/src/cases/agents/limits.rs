//! What a turn may cost: output over the cap is kept up to the cap and marked, never lost
//! silently; a turn over its time limit is stopped; a synchronous response whose client went
//! away is cancelled instead of running on unseen. Every case checks both fake runtimes.

use super::support::sessions::{Api, RUNTIMES};
use crate::processes::command_lines_containing;
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const CAP: usize = 1024 * 1024;

/// The assistant text of a list of items or response output.
fn assistant_text(items: &[Value]) -> String {
    items
        .iter()
        .filter(|i| i["type"] == "message" && i["role"] == "assistant")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect()
}

/// Waits until no process holds `marker` on its command line.
async fn gone(marker: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let left = command_lines_containing(marker);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("still running after {within:?}: {left:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn output_cap(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    for runtime in RUNTIMES {
        let (_, turn, items) = api.run_turn(runtime, "[[scenario:large:3000000]]").await?;
        ensure!(turn["status"] == "completed", "{runtime}: {turn}");
        ensure!(
            turn["x_svc"]["output_truncated"] == true,
            "{runtime}: the turn says its output was cut: {turn}"
        );
        let text = assistant_text(&items);
        ensure!(
            text.len() > CAP / 2 && text.len() <= CAP,
            "{runtime}: what fits under the 1 MiB cap is kept: {} bytes",
            text.len()
        );
        // The same through the Responses API: the SDK's incomplete response.
        let resp = api
            .send(api.post(
                "/v1/responses",
                &json!({"model": runtime, "input": "[[scenario:large:3000000]]"}),
            ))
            .await?;
        resp.expect_status(200)?;
        let response = resp.json()?;
        ensure!(
            response["status"] == "incomplete"
                && response["incomplete_details"] == json!({"reason": "max_output_tokens"}),
            "{runtime}: status {} details {}",
            response["status"],
            response["incomplete_details"]
        );
        let kept = assistant_text(response["output"].as_array().context("output")?);
        ensure!(
            kept.len() > CAP / 2,
            "{runtime}: the response keeps what fit: {} bytes",
            kept.len()
        );
        // Streamed: the last event is `response.incomplete`.
        let frames = super::support::sessions::read_to_end(
            &ctx,
            api.post(
                "/v1/responses",
                &json!({"model": runtime, "input": "[[scenario:large:3000000]]", "stream": true}),
            ),
        )
        .await?;
        let last = frames
            .iter()
            .rev()
            .find_map(|f| f.event.clone())
            .unwrap_or_default();
        ensure!(
            last == "response.incomplete",
            "{runtime}: last stream event {last:?}"
        );
    }
    // The operator is told in the log.
    if let Some(dir) = ctx.dir() {
        let log = std::fs::read_to_string(dir.join(crate::launch::SERVER_LOG)).unwrap_or_default();
        ensure!(
            log.contains("SVC_AGENTS_MAX_OUTPUT_BYTES"),
            "the cut is logged"
        );
    }
    Ok(())
}

async fn turn_timeout(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    for runtime in RUNTIMES {
        let marker = format!("turn-limit-{runtime}-{}", std::process::id());
        let started = Instant::now();
        let sid = api
            .create_on(runtime, Some(&format!("{marker} [[scenario:hang]]")))
            .await?;
        let turn = api.wait_turn(&sid, 0, "failed").await?;
        let took = started.elapsed();
        let message = turn["error"]["message"].as_str().unwrap_or_default();
        ensure!(
            message.contains("SVC_AGENTS_TURN_TIMEOUT"),
            "{runtime}: the error names the limit: {turn}"
        );
        ensure!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(10),
            "{runtime}: stopped after {took:?}"
        );
        gone(&marker, Duration::from_secs(5))
            .await
            .with_context(|| format!("{runtime}: the runtime is stopped"))?;
    }
    Ok(())
}

async fn abandoned_response(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    for runtime in RUNTIMES {
        let marker = format!("abandoned-{runtime}-{}", std::process::id());
        let body = json!({"model": runtime, "input": format!("{marker} [[scenario:hang]]")});
        let request = api.post("/v1/responses", &body).send();
        let client = tokio::spawn(request);
        // The runtime is seen running (the prompt is on its command line) ...
        let deadline = Instant::now() + Duration::from_secs(5);
        while command_lines_containing(&marker).is_empty() {
            ensure!(
                Instant::now() < deadline,
                "{runtime}: the runtime never showed up running"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ensure!(
            !client.is_finished(),
            "{runtime}: a hanging runtime cannot have answered"
        );
        // ... then the client gives up and its connection closes.
        client.abort();
        let _ = client.await;
        gone(&marker, Duration::from_secs(6))
            .await
            .with_context(|| {
                format!("{runtime}: the abandoned response's runtime must be stopped")
            })?;
    }
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/limits/001",
            spec: "Runtime output over `SVC_AGENTS_MAX_OUTPUT_BYTES` is kept up to the cap, never lost: the turn completes with `x_svc.output_truncated: true`, a response is `incomplete` with `incomplete_details.reason` `max_output_tokens` (its stream ends with `response.incomplete`), and the cut is logged. Both runtimes.",
            profile: &profiles::AGENTS_SESSIONS_OUTPUT_CAP,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_responses_create"],
            codes: [],
            run: output_cap,
        },
        case! {
            id: "agents/limits/002",
            spec: "A turn running longer than `SVC_AGENTS_TURN_TIMEOUT` is stopped (its runtime's whole process group) and fails with an error naming the limit. Both runtimes.",
            profile: &profiles::AGENTS_SESSIONS_SMALL_LIMITS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_sessions_turns_list"],
            codes: [],
            run: turn_timeout,
        },
        case! {
            id: "agents/limits/003",
            spec: "A synchronous `POST /v1/responses` whose client goes away before the answer cancels its turn: the runtime is stopped, not left running until the server stops. Both runtimes.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: [],
            run: abandoned_response,
        },
    ]
}
