//! Helpers shared by the Responses API cases (issue 4): paths, creating a
//! response, the object's shape and reading its event streams.

use anyhow::{Context as _, anyhow, ensure};
use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};

use super::sessions::{Api, check_id, check_list, check_usage, read_to_end};
use crate::{Resp, SseFrame};

pub const RESPONSES: &str = "/v1/responses";
pub const MISSING_RESP: &str = "resp_000000000000000000000000";

pub fn rpath(id: &str, rest: &str) -> String {
    format!("{RESPONSES}/{id}{rest}")
}

/// POST /v1/responses with an empty body (as the SDK's cancel does).
pub fn post_empty(api: &Api, path: &str) -> RequestBuilder {
    api.req(Method::POST, path)
}

/// POST /v1/responses, expecting 200 and a `response`.
pub async fn create(api: &Api, body: &Value) -> anyhow::Result<Value> {
    let resp = api.send(api.post(RESPONSES, body)).await?;
    expect_response(&resp, body)
}

pub fn expect_response(resp: &Resp, body: &Value) -> anyhow::Result<Value> {
    resp.expect_status(200)
        .map_err(|e| anyhow!("body sent: {body}\n{e}"))?;
    let r = resp.json()?;
    ensure!(
        r["object"] == "response",
        "not a response: {r}\nbody sent: {body}"
    );
    Ok(r)
}

/// A plain request body.
pub fn body(model: &str, input: &str) -> Value {
    json!({"model": model, "input": input})
}

/// The joined text of every `output_text` part of every assistant message.
pub fn output_text(r: &Value) -> String {
    r["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "output_text")
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect()
}

fn has_key(v: &Value, key: &str) -> bool {
    v.get(key).is_some()
}

/// An output `message` as the SDK validates it strictly.
pub fn check_message(i: &Value) -> anyhow::Result<()> {
    ensure!(i["id"].is_string(), "message id: {i}");
    ensure!(i["role"] == "assistant", "message role: {i}");
    ensure!(
        ["in_progress", "completed", "incomplete"].contains(&i["status"].as_str().unwrap_or("")),
        "message status: {i}"
    );
    let content = i["content"]
        .as_array()
        .ok_or_else(|| anyhow!("message content: {i}"))?;
    for part in content {
        ensure!(
            part["type"] == "output_text" && part["text"].is_string(),
            "part: {i}"
        );
        ensure!(part["annotations"] == json!([]), "annotations []: {i}");
        ensure!(part["logprobs"] == json!([]), "logprobs []: {i}");
    }
    Ok(())
}

/// Every field of the response object of the design, with types.
pub fn check_response(r: &Value, model: &str, runtime: &str) -> anyhow::Result<()> {
    check_id(&r["id"], "resp")?;
    ensure!(r["object"] == "response", "object: {r}");
    ensure!(r["created_at"].is_u64(), "created_at: {r}");
    let status = r["status"].as_str().unwrap_or_default();
    ensure!(
        ["queued", "in_progress", "completed", "failed", "cancelled"].contains(&status),
        "status: {r}"
    );
    ensure!(r["background"].is_boolean(), "background: {r}");
    let err = &r["error"];
    ensure!(has_key(r, "error"), "error key: {r}");
    ensure!(
        err.is_null() || (err["code"] == "server_error" && err["message"].is_string()),
        "error: {r}"
    );
    ensure!(
        has_key(r, "incomplete_details") && r["incomplete_details"].is_null(),
        "incomplete_details: {r}"
    );
    ensure!(
        has_key(r, "instructions")
            && (r["instructions"].is_string() || r["instructions"].is_null()),
        "instructions: {r}"
    );
    for key in ["max_output_tokens", "temperature", "top_p"] {
        ensure!(has_key(r, key) && r[key].is_null(), "{key} null: {r}");
    }
    ensure!(r["metadata"].is_object(), "metadata: {r}");
    ensure!(r["model"] == model, "model as given ({model}): {r}");
    ensure!(r["model_resolved"].is_boolean(), "model_resolved: {r}");
    ensure!(
        r["parallel_tool_calls"] == false,
        "parallel_tool_calls: {r}"
    );
    let prev = &r["previous_response_id"];
    ensure!(
        has_key(r, "previous_response_id") && (prev.is_null() || prev.is_string()),
        "previous_response_id: {r}"
    );
    ensure!(
        has_key(&r["reasoning"], "effort") && r["reasoning"]["summary"].is_null(),
        "reasoning: {r}"
    );
    ensure!(
        has_key(&r["reasoning"], "summary"),
        "reasoning.summary: {r}"
    );
    ensure!(r["service_tier"] == "auto", "service_tier: {r}");
    ensure!(r["store"].is_boolean(), "store: {r}");
    ensure!(
        r["text"] == json!({"format": {"type": "text"}, "verbosity": "medium"}),
        "text: {r}"
    );
    ensure!(r["tool_choice"] == "auto", "tool_choice: {r}");
    let tools = r["tools"].as_array().ok_or_else(|| anyhow!("tools: {r}"))?;
    for t in tools {
        ensure!(
            t["type"] == "mcp" && t.get("headers").is_none() && t.get("authorization").is_none(),
            "tool: {t}"
        );
    }
    ensure!(r["truncation"] == "disabled", "truncation: {r}");
    ensure!(has_key(r, "usage"), "usage key: {r}");
    if !r["usage"].is_null() {
        check_usage(&r["usage"])?;
        ensure!(
            r["usage"]["input_tokens_details"]["cache_write_tokens"].is_u64(),
            "usage cache_write_tokens: {r}"
        );
    }
    let x = &r["x_svc"];
    ensure!(x["compute"] == "local_process", "x_svc.compute: {r}");
    ensure!(x["runtime"] == runtime, "x_svc.runtime {runtime}: {r}");
    ensure!(
        x["model_resolved"] == r["model_resolved"],
        "x_svc.model_resolved: {r}"
    );
    ensure!(
        x["session_id"].is_string() && has_key(x, "turn_id"),
        "x_svc ids: {r}"
    );
    let output = r["output"]
        .as_array()
        .ok_or_else(|| anyhow!("output: {r}"))?;
    for item in output {
        ensure!(item["id"].is_string(), "output item id: {item}");
        if item["type"] == "message" {
            check_message(item)?;
        }
    }
    Ok(())
}

/// The event JSON of response stream frames, checking frame `event` = `type`,
/// frame `id` = `sequence_number` and that the numbers run 1, 2, 3…
pub fn resp_events(frames: &[SseFrame]) -> anyhow::Result<Vec<Value>> {
    let events: Vec<Value> = frames
        .iter()
        .map(|f| {
            let e = f.json()?;
            ensure!(e["type"].is_string(), "event without type: {e}");
            ensure!(
                f.event.as_deref() == e["type"].as_str(),
                "frame event {:?} != type in {e}",
                f.event
            );
            let seq = e["sequence_number"]
                .as_u64()
                .with_context(|| format!("integer sequence_number: {e}"))?;
            ensure!(
                f.id.as_deref() == Some(seq.to_string().as_str()),
                "frame id {:?} != sequence_number {seq}",
                f.id
            );
            Ok(e)
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(events)
}

pub fn seqs(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| e["sequence_number"].as_u64())
        .collect()
}

/// POST with `stream: true` added, read until the server closes; the events.
pub async fn stream_create(api: &Api, body: &Value) -> anyhow::Result<Vec<Value>> {
    let mut body = body.clone();
    body["stream"] = json!(true);
    let frames = read_to_end(&api.ctx, api.post(RESPONSES, &body)).await?;
    let events = resp_events(&frames)?;
    let want: Vec<u64> = (1..=events.len() as u64).collect();
    ensure!(
        seqs(&events) == want,
        "sequence numbers 1..n: {:?}",
        seqs(&events)
    );
    Ok(events)
}

/// GET /v1/responses/{id}?stream=true[&starting_after=k], read to the end.
pub async fn replay(api: &Api, id: &str, after: Option<usize>) -> anyhow::Result<Vec<Value>> {
    let q = match after {
        Some(k) => format!("?stream=true&starting_after={k}"),
        None => "?stream=true".to_owned(),
    };
    let frames = read_to_end(&api.ctx, api.get(&rpath(id, &q))).await?;
    resp_events(&frames)
}

/// Every input item of a response, following `limit`-sized pages in `order`.
pub async fn input_items(
    api: &Api,
    id: &str,
    order: &str,
    limit: usize,
) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..50 {
        let mut q = format!("?order={order}&limit={limit}");
        if let Some(a) = &after {
            q.push_str(&format!("&after={a}"));
        }
        let page = api.json(&rpath(id, &format!("/input_items{q}"))).await?;
        check_list(&page)?;
        let data = page["data"].as_array().cloned().unwrap_or_default();
        ensure!(data.len() <= limit, "page over limit {limit}: {page}");
        out.extend(data);
        if page["has_more"] == false {
            return Ok(out);
        }
        after = page["last_id"].as_str().map(str::to_owned);
    }
    Err(anyhow!("input_items of {id}: paging did not end"))
}
