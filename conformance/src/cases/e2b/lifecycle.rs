//! A sandbox's life on the control plane as the SDKs drive it: paused and resumed
//! (`pause()`, `connect()`, `Sandbox.resume`) with what ran in it still running, listed
//! (`Sandbox.list()`: metadata filters, states, pages), given a new lifetime
//! (`setTimeout`) and read (`getMetrics`).

use super::support::{Front, Made, eventually, unb64};
use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const WAIT: Duration = Duration::from_secs(15);

/// A control call's status and JSON body (`Null` when it has none).
async fn call(front: &Front, method: Method, path: &str, body: Option<Value>) -> anyhow::Result<(u16, Value)> {
    let mut rb = front.control(method, path);
    if let Some(body) = body {
        rb = rb.json(&body);
    }
    let resp = front.ctx.send(rb).await?;
    Ok((resp.status, resp.json().unwrap_or(Value::Null)))
}

/// The `state` `GET /sandboxes/{id}` reports.
async fn state(front: &Front, id: &str) -> anyhow::Result<String> {
    let (status, body) = call(front, Method::GET, &format!("/sandboxes/{id}"), None).await?;
    ensure!(status == 200, "info of {id}: {status} {body}");
    body["state"].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no `state`: {body}"))
}

/// E2B's `Sandbox` answer of a connect or a resume: the SDK reconnects with its token.
fn reconnected(body: &Value, made: &Made) -> anyhow::Result<()> {
    ensure!(body["sandboxID"] == made.id.as_str(), "another sandbox: {body}");
    ensure!(body["envdAccessToken"] == made.token.as_str(), "another token: {body}");
    ensure!(body["envdVersion"].is_string() && body["templateID"].is_string(), "{body}");
    Ok(())
}

/// The ids of a listing, in its order.
fn ids(listing: &Value) -> anyhow::Result<Vec<String>> {
    let all = listing.as_array().ok_or_else(|| anyhow!("a listing is an array: {listing}"))?;
    all.iter()
        .map(|s| s["sandboxID"].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no sandboxID: {s}")))
        .collect()
}

/// Seconds since the epoch of an RFC 3339 UTC time (`2024-05-01T12:00:00.123Z`), enough
/// to compare two of the front's times.
fn epoch(time: &Value) -> anyhow::Result<i64> {
    let text = time.as_str().ok_or_else(|| anyhow!("not a time: {time}"))?;
    let n = |range: std::ops::Range<usize>| -> anyhow::Result<i64> {
        text.get(range).and_then(|s| s.parse().ok()).ok_or_else(|| anyhow!("not RFC 3339: {text}"))
    };
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    Ok(days * 86_400 + n(11..13)? * 3600 + n(14..16)? * 60 + n(17..19)?)
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "e2b/lifecycle/001",
            spec: "`POST /sandboxes/{id}/pause` answers 204 and the sandbox shows `paused` (a second pause 409, `/health` 502); `POST /v2/sandboxes/{id}/connect` resumes it (201, its id and token) and a running one is answered 200, as are `POST /sandboxes/{id}/connect` and `/resume` (409 on a running one); a background process started before the pause is still listed and still writing afterwards.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_sandboxes_pause", "e2b_sandboxes_info", "e2b_health", "e2b_sandboxes_connect_v2", "e2b_sandboxes_connect", "e2b_sandboxes_resume", "e2b_process_start", "e2b_process_list", "e2b_process_connect", "e2b_sandboxes_kill"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let id = made.id.clone();
                // A background command (`commands.run(..., background=True)`): its stream is
                // left once it has started and written.
                let ticking = |m: &Value| unb64(&m["event"]["data"]["stdout"]).starts_with(b"tick");
                let mut ticker = front.live(&made, "/process.Process/Start", &json!({
                    "process": {"cmd": "/bin/sh", "args": ["-c", "while :; do echo tick; sleep 0.1; done"]},
                    "tag": "ticker",
                })).await?;
                let read = ticker.until(WAIT, "the first tick", ticking).await?;
                let pid = read[0]["event"]["start"]["pid"].as_u64().ok_or_else(|| anyhow!("no start first: {read:?}"))?;
                drop(ticker);

                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/pause"), None).await?;
                ensure!(status == 204, "pause: {status} {body}");
                ensure!(state(&front, &id).await? == "paused", "not paused after a pause");
                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/pause"), None).await?;
                ensure!(status == 409 && body["code"] == 409, "a second pause: {status} {body}");
                let health = ctx.send(front.health(&id)).await?;
                ensure!(health.status == 502, "/health of a paused sandbox: {} {}", health.status, health.text());

                let (status, body) = call(&front, Method::POST, &format!("/v2/sandboxes/{id}/connect"), Some(json!({"timeout": 120}))).await?;
                ensure!(status == 201, "connect to a paused sandbox resumes it: {status} {body}");
                reconnected(&body, &made)?;
                ensure!(state(&front, &id).await? == "running", "not running after connect");
                ctx.send(front.health(&id)).await?.expect_status(204)?;
                let (status, body) = call(&front, Method::POST, &format!("/v2/sandboxes/{id}/connect"), Some(json!({}))).await?;
                ensure!(status == 200, "connect to a running sandbox: {status} {body}");
                reconnected(&body, &made)?;

                // What ran before the pause runs on: listed with its tag, and still writing.
                let (status, listed) = front.unary(&made, "/process.Process/List", &json!({})).await?;
                ensure!(status == 200, "List: {status} {listed}");
                let mine = listed["processes"].as_array().and_then(|all| all.iter().find(|p| p["pid"] == pid))
                    .ok_or_else(|| anyhow!("pid {pid} is not listed after the resume: {listed}"))?;
                ensure!(mine["tag"] == "ticker" && mine["config"]["cmd"] == "/bin/sh", "listed after the resume: {mine}");
                let mut again = front.live(&made, "/process.Process/Connect", &json!({"process": {"tag": "ticker"}})).await?;
                let read = again.until(WAIT, "a tick after the resume", ticking).await?;
                ensure!(read[0]["event"]["start"]["pid"] == pid, "Connect by tag attached to another process: {read:?}");
                drop(again);

                // The v1 calls: `resume` refuses a running sandbox, resumes a paused one.
                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/resume"), Some(json!({}))).await?;
                ensure!(status == 409 && body["code"] == 409, "resume of a running sandbox: {status} {body}");
                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/pause"), None).await?;
                ensure!(status == 204, "second pause: {status} {body}");
                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/resume"), Some(json!({"timeout": 120}))).await?;
                ensure!(status == 201, "resume of a paused sandbox: {status} {body}");
                reconnected(&body, &made)?;
                ensure!(state(&front, &id).await? == "running", "not running after resume");
                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/connect"), Some(json!({"timeout": 120}))).await?;
                ensure!(status == 200, "v1 connect to a running sandbox: {status} {body}");
                reconnected(&body, &made)?;

                front.kill(&made).await?;
                let (status, body) = call(&front, Method::POST, &format!("/v2/sandboxes/{id}/connect"), Some(json!({}))).await?;
                ensure!(status == 404 && body["code"] == 404, "connect to a killed sandbox: {status} {body}");
                Ok(())
            },
        },
        case! {
            id: "e2b/lifecycle/002",
            spec: "`GET /v2/sandboxes` lists newest first, keeps only the sandboxes whose metadata has every `metadata` pair, pages by `limit` with the next page's token in `x-next-token` (none on the last page), and filters by `state`; `GET /sandboxes` lists the running ones only; a sandbox made by `POST /sandboxes` is listed as one made by `POST /v2/sandboxes`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_sandboxes_create", "e2b_sandboxes_create_v2", "e2b_sandboxes_list", "e2b_sandboxes_list_v2", "e2b_sandboxes_pause", "e2b_sandboxes_kill"],
            codes: [],
            run: |ctx| async move {
                let front = super::support::Front::of(&ctx)?;
                // A run's own label, so sandboxes of other cases (or runs) never match.
                let label = format!("e2b-lifecycle-002-{}", SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos());
                let mut made = Vec::new();
                for (n, path) in ["/sandboxes", "/v2/sandboxes", "/v2/sandboxes"].into_iter().enumerate() {
                    let (status, body) = call(&front, Method::POST, path, Some(json!({
                        "templateID": "base", "timeout": 120, "metadata": {"run": label, "n": n.to_string()},
                    }))).await?;
                    ensure!(status == 201, "POST {path}: {status} {body}");
                    let id = body["sandboxID"].as_str().ok_or_else(|| anyhow!("no sandboxID: {body}"))?.to_owned();
                    ctx.track_sandbox(None, &id);
                    let token = body["envdAccessToken"].as_str().unwrap_or_default().to_owned();
                    made.push(Made { id, token });
                }
                let newest_first: Vec<String> = made.iter().rev().map(|m| m.id.clone()).collect();
                let filter = |query: &str| format!("/v2/sandboxes?metadata={}{query}", urlencode(&format!("run={label}")));

                let (status, all) = call(&front, Method::GET, &filter(""), None).await?;
                ensure!(status == 200 && ids(&all)? == newest_first, "the run's sandboxes, newest first: {status} {all}");
                let first = &all[0];
                ensure!(first["metadata"] == json!({"run": label, "n": "2"}) && first["state"] == "running", "{first}");
                ensure!(first["startedAt"].is_string() && first["endAt"].is_string() && first["cpuCount"].as_u64().is_some_and(|c| c >= 1), "{first}");
                // Every pair must match.
                let both = format!("/v2/sandboxes?metadata={}", urlencode(&format!("run={label}&n=1")));
                let (_, one) = call(&front, Method::GET, &both, None).await?;
                ensure!(ids(&one)? == [made[1].id.clone()], "run and n=1: {one}");

                // Pages of two: the token leads to the rest, and the last page has none.
                let page = front.ctx.send(front.control(Method::GET, &filter("&limit=2"))).await?;
                page.expect_status(200)?;
                let token = page.header("x-next-token").ok_or_else(|| anyhow!("a first page of 2 of 3 has no x-next-token"))?.to_owned();
                let mut paged = ids(&page.json()?)?;
                let last = front.ctx.send(front.control(Method::GET, &filter(&format!("&limit=2&nextToken={}", urlencode(&token))))).await?;
                last.expect_status(200)?;
                ensure!(last.header("x-next-token").is_none(), "the last page has a token: {:?}", last.header("x-next-token"));
                paged.extend(ids(&last.json()?)?);
                ensure!(paged == newest_first, "pages {paged:?}, want {newest_first:?}");

                // A paused one: listed by state, and no longer by the v1 listing of running ones.
                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{}/pause", made[0].id), None).await?;
                ensure!(status == 204, "pause: {status} {body}");
                let (_, paused) = call(&front, Method::GET, &filter("&state=paused"), None).await?;
                ensure!(ids(&paused)? == [made[0].id.clone()] && paused[0]["state"] == "paused", "state=paused: {paused}");
                let (_, running) = call(&front, Method::GET, &filter("&state=running"), None).await?;
                ensure!(ids(&running)? == newest_first[..2], "state=running: {running}");
                let (status, v1) = call(&front, Method::GET, "/sandboxes", None).await?;
                ensure!(status == 200, "GET /sandboxes: {status} {v1}");
                let v1 = ids(&v1)?;
                ensure!(v1.contains(&made[1].id) && v1.contains(&made[2].id) && !v1.contains(&made[0].id), "GET /sandboxes lists the running ones: {v1:?}");

                for m in &made {
                    front.kill(m).await?;
                }
                let (_, none) = call(&front, Method::GET, &filter(""), None).await?;
                ensure!(none == json!([]), "killed sandboxes are still listed: {none}");
                Ok(())
            },
        },
        case! {
            id: "e2b/lifecycle/003",
            spec: "`POST /sandboxes/{id}/timeout {timeout}` answers 204 and the sandbox's `endAt` becomes that many seconds from now, so a timeout of 1 ends it; `GET /sandboxes/{id}/metrics` answers one reading with the fields `getMetrics` maps (CPU count and percent, memory and disk used and total, a timestamp of now).",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_sandboxes_timeout", "e2b_sandboxes_metrics", "e2b_sandboxes_info", "e2b_process_start"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let id = made.id.clone();
                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/timeout"), Some(json!({"timeout": 3600}))).await?;
                ensure!(status == 204, "timeout 3600: {status} {body}");
                let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
                let (status, info) = call(&front, Method::GET, &format!("/sandboxes/{id}"), None).await?;
                ensure!(status == 200, "info: {status} {info}");
                let left = epoch(&info["endAt"])? - now;
                ensure!((3500..=3700).contains(&left), "endAt is {left} s away after a timeout of 3600: {info}");

                // A process of its own, so the reading has memory to count.
                let mut sleeper = front.live(&made, "/process.Process/Start", &json!({"process": {"cmd": "/bin/sh", "args": ["-c", "echo up; exec sleep 60"]}})).await?;
                sleeper.until(WAIT, "the sleeper's output", |m| unb64(&m["event"]["data"]["stdout"]) == b"up\n").await?;
                drop(sleeper);
                let resp = ctx.send(front.control(Method::GET, &format!("/sandboxes/{id}/metrics"))).await?;
                resp.expect_status(200)?;
                let metrics = resp.json()?;
                let reading = match metrics.as_array().map(Vec::as_slice) {
                    Some([one]) => one.clone(),
                    _ => anyhow::bail!("one reading: {metrics}"),
                };
                let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
                let unix = reading["timestampUnix"].as_i64().ok_or_else(|| anyhow!("no timestampUnix: {reading}"))?;
                ensure!((now - unix).abs() <= 60 && (epoch(&reading["timestamp"])? - unix).abs() <= 1, "a reading of now: {reading}");
                let n = |field: &str| reading[field].as_f64().ok_or_else(|| anyhow!("`{field}` is no number: {reading}"));
                ensure!(n("cpuCount")? >= 1.0 && (0.0..=100.0).contains(&n("cpuUsedPct")?), "{reading}");
                ensure!(n("memUsed")? > 0.0 && n("memTotal")? >= n("memUsed")? && n("memCache")? == 0.0, "{reading}");
                ensure!(n("diskUsed")? > 0.0 && n("diskTotal")? >= n("diskUsed")?, "{reading}");

                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/timeout"), Some(json!({"timeout": 1}))).await?;
                ensure!(status == 204, "timeout 1: {status} {body}");
                eventually(Duration::from_secs(30), "the sandbox ending a second after its timeout", || async {
                    let (status, _) = call(&front, Method::GET, &format!("/sandboxes/{id}"), None).await?;
                    Ok((status == 404).then_some(()))
                }).await?;
                let (status, body) = call(&front, Method::POST, &format!("/sandboxes/{id}/timeout"), Some(json!({"timeout": 60}))).await?;
                ensure!(status == 404 && body["code"] == 404, "timeout of an ended sandbox: {status} {body}");
                Ok(())
            },
        },
    ]
}

/// `text` percent-encoded for a query value.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
