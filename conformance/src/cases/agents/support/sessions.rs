//! Helpers shared by the agents sessions cases (issue 3): an API handle that
//! can act as a named identity, session creation, waiting for turns to settle,
//! whole lists, event replays and shape checks.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure};
use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};

use crate::{Ctx, Resp, SseFrame};

pub use super::checks::*;

/// The two implemented runtimes; every case that runs a turn runs on both.
pub const RUNTIMES: [&str; 2] = ["rt-one", "rt-two"];

/// Runs `check` on each runtime in turn; the first failure is the case's. A failure names
/// its runtime, as a case body's own messages do (`{rt}: ...`).
pub async fn on_each_runtime(
    ctx: &Ctx,
    check: impl AsyncFn(&Ctx, &'static str) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for rt in RUNTIMES {
        check(ctx, rt).await.map_err(|e| e.context(format!("on {rt}")))?;
    }
    Ok(())
}
pub const SESSIONS: &str = "/v1/agents/sessions";
/// How long a short scripted turn may take to settle.
pub const SETTLE: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(50);

pub const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// The server under test, as the runner's caller or as one identity's token.
#[derive(Clone)]
pub struct Api {
    pub ctx: Ctx,
    token: Option<&'static str>,
}

impl Api {
    pub fn new(ctx: &Ctx) -> Api {
        Api {
            ctx: ctx.clone(),
            token: None,
        }
    }

    pub fn as_token(ctx: &Ctx, token: &'static str) -> Api {
        Api {
            ctx: ctx.clone(),
            token: Some(token),
        }
    }

    pub fn req(&self, method: Method, path: &str) -> RequestBuilder {
        match self.token {
            Some(t) => self.ctx.anonymous(method, path).bearer_auth(t),
            None => self.ctx.request(method, path),
        }
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.req(Method::GET, path)
    }

    pub fn post(&self, path: &str, body: &Value) -> RequestBuilder {
        self.req(Method::POST, path).json(body)
    }

    pub fn delete(&self, path: &str) -> RequestBuilder {
        self.req(Method::DELETE, path)
    }

    pub async fn send(&self, rb: RequestBuilder) -> anyhow::Result<Resp> {
        self.ctx.send(rb).await
    }

    /// GET, expecting 200 JSON.
    pub async fn json(&self, path: &str) -> anyhow::Result<Value> {
        let resp = self.send(self.get(path)).await?;
        resp.expect_status(200)?;
        resp.json()
    }

    /// POST /v1/agents/sessions, expecting 200 and an `agent.session`.
    pub async fn create(&self, body: &Value) -> anyhow::Result<Value> {
        let resp = self.send(self.post(SESSIONS, body)).await?;
        resp.expect_status(200)?;
        let s = resp.json()?;
        ensure!(
            s["object"] == "agent.session",
            "not a session: {s}\nbody sent: {body}"
        );
        Ok(s)
    }

    /// A session on `runtime`, with a first turn when `input` is given; returns its id.
    pub async fn create_on(&self, runtime: &str, input: Option<&str>) -> anyhow::Result<String> {
        let mut body = json!({ "runtime": runtime });
        if let Some(text) = input {
            body["input"] = json!(text);
        }
        let s = self.create(&body).await?;
        ensure!(s["x_svc"]["runtime"] == runtime, "runtime: {s}");
        id_of(&s)
    }

    /// POST one input message event, expecting 202.
    pub async fn input(&self, sid: &str, text: &str) -> anyhow::Result<()> {
        let body = json!({"events": [{"type": "agent.session.input.message", "input": text}]});
        self.events(sid, &body).await
    }

    /// POST an events body, expecting 202 with an empty body.
    pub async fn events(&self, sid: &str, body: &Value) -> anyhow::Result<()> {
        let resp = self.send(self.post(&spath(sid, "/events"), body)).await?;
        resp.expect_status(202)?;
        ensure!(
            resp.body.is_empty(),
            "202 must have an empty body\n{}",
            resp.describe()
        );
        Ok(())
    }

    /// Every element of a list route (asc, one page of 100).
    pub async fn all(&self, path: &str) -> anyhow::Result<Vec<Value>> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let page = self
            .json(&format!("{path}{sep}order=asc&limit=100"))
            .await?;
        check_list(&page)?;
        ensure!(page["has_more"] == false, "more than 100 in {path}: {page}");
        Ok(page["data"].as_array().cloned().unwrap_or_default())
    }

    pub async fn turns(&self, sid: &str) -> anyhow::Result<Vec<Value>> {
        self.all(&spath(sid, "/turns")).await
    }

    pub async fn items(&self, sid: &str) -> anyhow::Result<Vec<Value>> {
        self.all(&spath(sid, "/items")).await
    }

    pub async fn session(&self, sid: &str) -> anyhow::Result<Value> {
        self.json(&spath(sid, "")).await
    }

    /// Polls until the session has at least `n` turns, all finished, and the
    /// session itself is no longer `in_progress`; returns the turns (asc).
    pub async fn settle(&self, sid: &str, n: usize) -> anyhow::Result<Vec<Value>> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let turns = self.turns(sid).await?;
            let done = turns.len() >= n
                && turns
                    .iter()
                    .all(|t| TERMINAL.contains(&t["status"].as_str().unwrap_or_default()));
            if done && self.session(sid).await?["status"] != "in_progress" {
                return Ok(turns);
            }
            if Instant::now() > deadline {
                let statuses: Vec<&Value> = turns.iter().map(|t| &t["status"]).collect();
                bail!(
                    "session {sid} did not settle with {n} turns within {SETTLE:?}: turn statuses {statuses:?}"
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Polls until turn `index` (asc) has `status`; returns it.
    pub async fn wait_turn(&self, sid: &str, index: usize, status: &str) -> anyhow::Result<Value> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let turns = self.turns(sid).await?;
            if let Some(t) = turns.get(index)
                && t["status"] == status
            {
                return Ok(t.clone());
            }
            if Instant::now() > deadline {
                bail!("turn {index} of {sid} never reached {status}: {turns:?}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// One turn on `runtime` with `prompt`, settled: (session id, turn, items asc).
    pub async fn run_turn(
        &self,
        runtime: &str,
        prompt: &str,
    ) -> anyhow::Result<(String, Value, Vec<Value>)> {
        let sid = self.create_on(runtime, Some(prompt)).await?;
        let turns = self.settle(&sid, 1).await?;
        ensure!(turns.len() == 1, "one input, one turn: {turns:?}");
        let items = self.items(&sid).await?;
        Ok((sid, turns[0].clone(), items))
    }

    /// Replays the event stream with `query` (e.g. `after=0`) until the server
    /// closes it; returns the event frames.
    pub async fn replay(&self, sid: &str, query: &str) -> anyhow::Result<Vec<SseFrame>> {
        let rb = self.get(&format!("{}?{query}", spath(sid, "/events")));
        read_to_end(&self.ctx, rb).await
    }
}

/// Opens an event stream and reads it until the server closes it (10 s at most).
pub async fn read_to_end(ctx: &Ctx, rb: RequestBuilder) -> anyhow::Result<Vec<SseFrame>> {
    let mut stream = ctx.sse(rb).await?;
    let mut frames = Vec::new();
    let read = async {
        while let Some(f) = stream.next_event().await? {
            frames.push(f);
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .map_err(|_| anyhow!("the event stream was not closed within 10 s"))??;
    Ok(frames)
}

pub fn spath(sid: &str, rest: &str) -> String {
    format!("{SESSIONS}/{sid}{rest}")
}

pub fn id_of(v: &Value) -> anyhow::Result<String> {
    v["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no string id in {v}"))
}

/// `<prefix>_<24 lowercase hex>`.
pub fn check_id(v: &Value, prefix: &str) -> anyhow::Result<()> {
    let s = v
        .as_str()
        .ok_or_else(|| anyhow!("id is not a string: {v}"))?;
    let hex = s
        .strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('_'))
        .ok_or_else(|| anyhow!("id {s:?} must start with {prefix}_"))?;
    ensure!(
        hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "id {s:?}: expected {prefix}_<24 hex>"
    );
    Ok(())
}

/// Status, code and `param` of a `/v1` error; returns the body.
pub fn expect_error_param(
    resp: &Resp,
    status: u16,
    code: &str,
    param: &str,
) -> anyhow::Result<Value> {
    let body = resp.expect_error(status, code)?;
    ensure!(
        body["error"]["param"] == param,
        "expected param {param:?}, got {}\n{}",
        body["error"]["param"],
        resp.describe()
    );
    let want_type = if status == 404 {
        "not_found_error"
    } else {
        "invalid_request_error"
    };
    ensure!(
        body["error"]["type"] == want_type,
        "expected type {want_type}\n{}",
        resp.describe()
    );
    Ok(body)
}

/// 404 `resource_not_found` naming `param`.
pub async fn expect_missing(api: &Api, rb: RequestBuilder, param: &str) -> anyhow::Result<()> {
    let resp = api.send(rb).await?;
    expect_error_param(&resp, 404, "resource_not_found", param)?;
    Ok(())
}

/// The list envelope: object, data, first_id/last_id matching data, has_more.
pub fn check_list(page: &Value) -> anyhow::Result<()> {
    ensure!(page["object"] == "list", "object: {page}");
    let data = page["data"]
        .as_array()
        .ok_or_else(|| anyhow!("data is not an array: {page}"))?;
    ensure!(page["has_more"].is_boolean(), "has_more: {page}");
    match (data.first(), data.last()) {
        (Some(first), Some(last)) => {
            ensure!(page["first_id"] == first["id"], "first_id: {page}");
            ensure!(page["last_id"] == last["id"], "last_id: {page}");
        }
        _ => ensure!(
            page.get("first_id").is_some_and(Value::is_null)
                && page.get("last_id").is_some_and(Value::is_null)
                && page["has_more"] == false,
            "an empty page has null first_id/last_id and no more: {page}"
        ),
    }
    Ok(())
}

/// Follows `after=last_id` while `has_more`; returns the concatenated pages.
pub async fn page_through(
    api: &Api,
    path: &str,
    limit: usize,
    order: &str,
) -> anyhow::Result<Vec<Value>> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut out: Vec<Value> = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..500 {
        let mut url = format!("{path}{sep}limit={limit}&order={order}");
        if let Some(a) = &after {
            url.push_str(&format!("&after={a}"));
        }
        let page = api.json(&url).await?;
        check_list(&page)?;
        let data = page["data"].as_array().cloned().unwrap_or_default();
        ensure!(data.len() <= limit, "{url}: {} > limit", data.len());
        let more = page["has_more"] == true;
        ensure!(
            !more || data.len() == limit,
            "{url}: a short page with has_more"
        );
        out.extend(data);
        if !more {
            return Ok(out);
        }
        after = Some(
            page["last_id"]
                .as_str()
                .ok_or_else(|| anyhow!("{url}: last_id"))?
                .to_owned(),
        );
    }
    bail!("{path}: paging never ended")
}
