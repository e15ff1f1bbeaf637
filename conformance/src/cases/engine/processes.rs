//! The processes of a sandbox (spec 4.4): a sandbox behaves as a machine, so a
//! process a command leaves in the background runs on and is listed; signals are
//! 15 and 9 only; stdin of a streamed command stays open for writes.

use super::support::{
    alive, delete, error_snapshot, expect_error, post, processes, req, sandbox, sb, snapshot,
    stream_bytes,
};
use crate::{Case, Ctx, SseFrame, SseStream, case, profiles};
use anyhow::{Context as _, anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/processes/001",
            spec: "A command that leaves a process in the background (`sh -c 'sleep 300 & echo ok'`) is answered promptly, and GET .../processes lists the process it left, `{processes: [{pid, pgid, cmd, state, tag, stdin_open}]}`, tagged `background`, still running.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands", "feature:processes"],
            endpoints: ["processes_list", "commands_run"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let began = Instant::now();
                let word = super::support::sleep_word();
                let out = super::support::run(&ctx, &id, &json!({"cmd": "sh", "args": ["-c", format!("sleep {word} & echo ok")]})).await?;
                ensure!(began.elapsed() < Duration::from_secs(5), "answered {:?} after the start: the background process held it", began.elapsed());
                ensure!(out["stdout"] == "ok\n" && out["exit_code"] == 0, "{out}");
                let resp = super::support::get(&ctx, &sb(&id, "/processes")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body.as_object().is_some_and(|m| m.len() == 1), "the answer is `{{processes}}`: {body}");
                let list = body["processes"].as_array().cloned().unwrap_or_default();
                let sleep = list.iter().find(|p| p["cmd"].as_str().is_some_and(|c| *c == format!("sleep {word}"))).ok_or_else(|| anyhow!("the background sleep is listed: {body}"))?;
                let mut keys: Vec<&str> = sleep.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
                keys.sort_unstable();
                ensure!(keys == ["cmd", "pgid", "pid", "state", "stdin_open", "tag"], "{sleep}");
                ensure!(sleep["tag"] == "background" && sleep["stdin_open"].is_boolean() && sleep["pgid"].as_u64().is_some_and(|g| g > 0), "{sleep}");
                ensure!(["running", "sleeping"].contains(&sleep["state"].as_str().unwrap_or_default()), "{sleep}");
                let left = super::support::Left { pid: sleep["pid"].as_u64().unwrap_or_default(), word };
                ensure!(left.alive(), "the listed sleep is a live process");
                let mut shape = sleep.clone();
                shape["cmd"] = json!("sleep [word]");
                snapshot(&ctx, "engine__processes__background", &shape)?;
                tokio::time::sleep(Duration::from_millis(300)).await;
                ensure!(left.alive(), "it keeps running after the command's answer");
                super::support::kill(&ctx, &id).await;
                left.gone(Duration::from_secs(10)).await?;
                Ok(())
            },
        },
        case! {
            id: "engine/processes/002",
            spec: "POST .../processes/:pid/signal `{signal}` delivers 15 or 9 and answers `{pid, signal}`; any other number (2, 0, -9) or a name is 400 `E4001` and nothing is delivered.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands", "feature:processes"],
            endpoints: ["processes_signal"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let left = background(&ctx, &id, 2).await?;
                let pids: Vec<u64> = left.iter().map(|l| l.pid).collect();
                for bad in [json!({"signal": 2}), json!({"signal": 0}), json!({"signal": -9}), json!({"signal": 19}), json!({"signal": "TERM"}), json!({}), json!({"signal": 15, "extra": 1})] {
                    let resp = post(&ctx, &sb(&id, &format!("/processes/{}/signal", pids[0])), &bad).await?;
                    let body = expect_error(&resp, 400, "E4001").with_context(|| format!("body {bad}"))?;
                    if bad == json!({"signal": 2}) {
                        error_snapshot(&ctx, "engine__processes__signal_refused", &body, &[])?;
                    }
                }
                ensure!(left[0].alive(), "a refused signal is not delivered");
                for (one, signal) in [(&left[0], 15), (&left[1], 9)] {
                    let pid = one.pid;
                    let resp = post(&ctx, &sb(&id, &format!("/processes/{pid}/signal")), &json!({"signal": signal})).await?;
                    resp.expect_status(200)?;
                    let body = resp.json()?;
                    ensure!(body == json!({"pid": pid, "signal": signal}), "{body}");
                    one.gone(Duration::from_secs(5)).await?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/processes/003",
            spec: "A streamed command without `stdin` keeps its stdin open: it is listed `stdin_open: true`, POST .../processes/:pid/stdin `{data}` or `{data_b64}` answers `{pid, written, closed}`, `close: true` closes it (the command then ends), and `data` with `data_b64`, or neither without `close`, is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands", "feature:processes"],
            endpoints: ["processes_stdin", "commands_stream", "processes_list"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let (mut stream, pid) = open_stream(&ctx, &id, &json!({"cmd": "cat"})).await?;
                let listed = processes(&ctx, &id).await?;
                let cat = listed.iter().find(|p| p["pid"] == pid).ok_or_else(|| anyhow!("the streamed command is listed: {listed:?}"))?;
                ensure!(cat["stdin_open"] == true && cat["tag"] == "command", "{cat}");
                let path = sb(&id, &format!("/processes/{pid}/stdin"));
                let resp = post(&ctx, &path, &json!({"data": "one\n"})).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body == json!({"pid": pid, "written": 4, "closed": false}), "{body}");
                snapshot(&ctx, "engine__processes__stdin", &body)?;
                for bad in [json!({"data": "a", "data_b64": "YQ"}), json!({}), json!({"data_b64": "%%%"}), json!({"data": "a", "extra": 1})] {
                    expect_error(&post(&ctx, &path, &bad).await?, 400, "E4001").with_context(|| format!("body {bad}"))?;
                }
                let resp = post(&ctx, &path, &json!({"data_b64": "dHdvCg==", "close": true})).await?;
                resp.expect_status(200)?;
                ensure!(resp.json()? == json!({"pid": pid, "written": 4, "closed": true}), "{}", resp.describe());
                let frames = rest(&mut stream).await?;
                ensure!(stream_bytes(&frames, "stdout")? == b"one\ntwo\n", "{frames:?}");
                ensure!(super::support::names(&frames).ends_with(&["exit".to_owned(), "end".to_owned()]), "`cat` ends once its stdin is closed: {frames:?}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/processes/004",
            spec: "Writing to the stdin of a process that has exited, or whose stdin is closed, is 400 `E4007`.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands", "feature:processes"],
            endpoints: ["processes_stdin"],
            codes: ["E4007"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let (mut stream, pid) = open_stream(&ctx, &id, &json!({"cmd": "exec 0<&-; exec sleep 30"})).await?;
                let path = sb(&id, &format!("/processes/{pid}/stdin"));
                post(&ctx, &path, &json!({"close": true})).await?.expect_status(200)?;
                let body = expect_error(&post(&ctx, &path, &json!({"data": "late"})).await?, 400, "E4007")?;
                error_snapshot(&ctx, "engine__processes__exited", &body, &[(&pid.to_string(), "[pid]")])?;
                post(&ctx, &sb(&id, &format!("/processes/{pid}/signal")), &json!({"signal": 9})).await?.expect_status(200)?;
                rest(&mut stream).await?;
                let resp = post(&ctx, &path, &json!({"data": "after"})).await?;
                // Gone from the sandbox, or known to have exited: never a write.
                ensure!(resp.status == 400 || resp.status == 404, "{}", resp.describe());
                let code = if resp.status == 400 { "E4007" } else { "E2005" };
                expect_error(&resp, resp.status, code)?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/processes/005",
            spec: "DELETE .../processes/:pid kills the process and answers `{pid, killed: true}`; it is then gone and no longer listed.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands", "feature:processes"],
            endpoints: ["processes_kill"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let left = background(&ctx, &id, 1).await?;
                let killed = left[0].pid;
                let resp = delete(&ctx, &sb(&id, &format!("/processes/{killed}"))).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body == json!({"pid": killed, "killed": true}), "{body}");
                snapshot(&ctx, "engine__processes__killed", &body)?;
                left[0].gone(Duration::from_secs(5)).await?;
                super::support::eventually(Duration::from_secs(5), "the killed process leaves the list", || {
                    let (ctx, id) = (ctx.clone(), id.clone());
                    async move { Ok(processes(&ctx, &id).await?.iter().all(|p| p["pid"] != killed).then_some(())) }
                }).await?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/processes/006",
            spec: "A pid the sandbox does not have is 404 `E2005` on signal, stdin and kill (the engine's own pid among them: a sandbox reaches only its processes); a pid that is not a number is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:processes"],
            endpoints: ["processes_signal", "processes_stdin", "processes_kill"],
            codes: ["E2005", "E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let engine = ctx.send(ctx.request(Method::GET, "/v1/health")).await?.json()?["pid"].as_u64().unwrap_or(1);
                for pid in [engine, 1, 4_000_000] {
                    let tries = [
                        (Method::POST, format!("/processes/{pid}/signal"), Some(json!({"signal": 15}))),
                        (Method::POST, format!("/processes/{pid}/stdin"), Some(json!({"data": "x"}))),
                        (Method::DELETE, format!("/processes/{pid}"), None),
                    ];
                    for (method, rest, body) in tries {
                        let mut rb = req(&ctx, method.clone(), &sb(&id, &rest));
                        if let Some(body) = body { rb = rb.json(&body); }
                        let err = expect_error(&ctx.send(rb).await?, 404, "E2005").with_context(|| format!("{method} {rest}"))?;
                        if pid == 4_000_000 && method == Method::DELETE {
                            error_snapshot(&ctx, "engine__processes__not_found", &err, &[])?;
                        }
                    }
                }
                ensure!(alive(engine), "the engine is untouched");
                for rest in ["/processes/abc/signal", "/processes/-1/signal"] {
                    expect_error(&post(&ctx, &sb(&id, rest), &json!({"signal": 15})).await?, 400, "E4001").with_context(|| rest.to_owned())?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}

/// Leaves `n` sleeps in the background, each listed by the sandbox under the pid `$!`
/// printed.
async fn background(ctx: &Ctx, id: &str, n: usize) -> anyhow::Result<Vec<super::support::Left>> {
    let left = super::support::leave_sleeps(ctx, id, n).await?;
    let listed = processes(ctx, id).await?;
    for one in &left {
        ensure!(
            listed.iter().any(|p| p["pid"] == one.pid),
            "background pid {} is listed: {listed:?}",
            one.pid
        );
    }
    Ok(left)
}

/// Opens a command stream and reads to its `start`: the stream and the pid.
async fn open_stream(ctx: &Ctx, id: &str, body: &Value) -> anyhow::Result<(SseStream, u64)> {
    let rb = req(ctx, Method::POST, &sb(id, "/commands/stream")).json(body);
    let mut stream = ctx.sse(rb).await?;
    let start = stream
        .next_event_within(Duration::from_secs(10))
        .await?
        .ok_or_else(|| anyhow!("the stream ended before `start`"))?;
    ensure!(start.event.as_deref() == Some("start"), "{start:?}");
    let pid = start.json()?["pid"]
        .as_u64()
        .ok_or_else(|| anyhow!("`start` has a pid: {start:?}"))?;
    Ok((stream, pid))
}

/// The rest of a stream's events, to its end.
async fn rest(stream: &mut SseStream) -> anyhow::Result<Vec<SseFrame>> {
    let mut frames = Vec::new();
    while let Some(frame) = stream.next_event_within(Duration::from_secs(15)).await? {
        frames.push(frame);
    }
    Ok(frames)
}
