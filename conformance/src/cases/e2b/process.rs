//! envd's `process.Process` beyond `Start`: what the SDKs' `commands` and `pty` do to a
//! running process: list it, write its stdin (`sendStdin`, a client stream), close it,
//! signal it (`kill`), and resize and type into a terminal.

use super::support::{END, Front, Live, b64, envelope, eventually, stream, unb64};
use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

/// Reads `live` until the output of `field` (`stdout` or `pty`) since the call holds `want`.
async fn output_until(live: &mut Live, field: &str, want: &str) -> anyhow::Result<String> {
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let next = live.next(left).await.map_err(|e| anyhow!("waiting for {want:?} in {:?}: {e}", String::from_utf8_lossy(&seen)))?;
        match next {
            Some((flags, message)) if flags & END == 0 => {
                ensure!(message["event"].get("end").is_none(), "ended before {want:?}: {message} after {:?}", String::from_utf8_lossy(&seen));
                seen.extend(unb64(&message["event"]["data"][field]));
                let text = String::from_utf8_lossy(&seen).into_owned();
                if text.contains(want) {
                    return Ok(text);
                }
            }
            other => anyhow::bail!("the stream ended before {want:?}: {other:?}"),
        }
    }
}

/// The `end` event of a followed process, skipping its output.
async fn end_of(live: &mut Live) -> anyhow::Result<Value> {
    let read = live.until(WAIT, "the end event", |m| m["event"].get("end").is_some()).await?;
    Ok(read.last().map(|m| m["event"]["end"].clone()).unwrap_or_default())
}

/// The pid of a stream's `start` event (its first message).
async fn started(live: &mut Live) -> anyhow::Result<u64> {
    let read = live.until(WAIT, "the start event", |m| m["event"].get("start").is_some()).await?;
    ensure!(read.len() == 1, "`start` is not the first message: {read:?}");
    read[0]["event"]["start"]["pid"].as_u64().ok_or_else(|| anyhow!("no pid: {read:?}"))
}

/// The pids `List` shows.
async fn listed(front: &Front, made: &super::support::Made) -> anyhow::Result<Vec<Value>> {
    let (status, body) = front.unary(made, "/process.Process/List", &json!({})).await?;
    ensure!(status == 200, "List: {status} {body}");
    body["processes"].as_array().cloned().ok_or_else(|| anyhow!("no `processes`: {body}"))
}

/// A unary call that must answer 200 `{}`.
async fn done(front: &Front, made: &super::support::Made, method: &str, body: Value) -> anyhow::Result<()> {
    let (status, answer) = front.unary(made, method, &body).await?;
    ensure!(status == 200 && answer == json!({}), "{method} {body}: {status} {answer}");
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "e2b/process/001",
            spec: "A process started with `stdin: true` is in `List` with its pid, tag and config; `SendInput` and a `StreamInput` client stream (a `start` naming it by tag, then `data`) reach its stdin in order; `CloseStdin` ends its input, so `cat` exits 0 and leaves the list, and a later `CloseStdin` is `not_found`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_process_start", "e2b_process_list", "e2b_process_send_input", "e2b_process_stream_input", "e2b_process_close_stdin"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let mut cat = front.live(&made, "/process.Process/Start", &json!({"process": {"cmd": "/bin/cat", "args": [], "envs": {}}, "stdin": true, "tag": "cat"})).await?;
                let pid = started(&mut cat).await?;
                let all = listed(&front, &made).await?;
                let mine = all.iter().find(|p| p["pid"] == pid).ok_or_else(|| anyhow!("pid {pid} not listed: {all:?}"))?;
                ensure!(mine["tag"] == "cat" && mine["config"]["cmd"] == "/bin/cat" && mine["config"]["args"] == json!([]), "{mine}");

                done(&front, &made, "/process.Process/SendInput", json!({"process": {"pid": pid}, "input": {"stdin": b64(b"hello\n")}})).await?;
                output_until(&mut cat, "stdout", "hello\n").await?;
                let mut input = envelope(0, &json!({"start": {"process": {"tag": "cat"}}}));
                input.extend(envelope(0, &json!({"data": {"input": {"stdin": b64(b"one ")}}})));
                input.extend(envelope(0, &json!({"data": {"input": {"stdin": b64(b"two\n")}}})));
                let (status, frames) = stream(&front, front.envd(&made, "/process.Process/StreamInput"), &input).await?;
                ensure!(status == 200 && frames.last().is_some_and(|(_, end)| *end == json!({})), "StreamInput: {status} {frames:?}");
                output_until(&mut cat, "stdout", "one two\n").await?;

                done(&front, &made, "/process.Process/CloseStdin", json!({"process": {"pid": pid}})).await?;
                let end = end_of(&mut cat).await?;
                ensure!(end["exitCode"] == 0 && end["exited"] == true, "cat after its stdin closed: {end}");
                eventually(WAIT, "an ended process leaving the list", || async {
                    Ok((!listed(&front, &made).await?.iter().any(|p| p["pid"] == pid)).then_some(()))
                }).await?;
                let (status, body) = front.unary(&made, "/process.Process/CloseStdin", &json!({"process": {"pid": pid}})).await?;
                ensure!(status == 404 && super::support::connect_error(&body)?.0 == "not_found", "CloseStdin of an ended process: {status} {body}");
                front.kill(&made).await?;
                Ok(())
            },
        },
        case! {
            id: "e2b/process/002",
            spec: "`SendSignal` ends a process (the SDKs' `kill()`): `SIGNAL_SIGTERM` by pid and `SIGNAL_SIGKILL` by tag each answer `{}`, and the process's stream ends with `exited`, a non-zero `exitCode` (the SDKs' `CommandExitError`) and the status `signal: terminated` or `signal: killed`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_process_start", "e2b_process_send_signal"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                for (signal, selector, tag, status) in [("SIGNAL_SIGTERM", "pid", "termed", "signal: terminated"), ("SIGNAL_SIGKILL", "tag", "killed", "signal: killed")] {
                    let mut sleeper = front.live(&made, "/process.Process/Start", &json!({"process": {"cmd": "/bin/sleep", "args": ["60"]}, "tag": tag})).await?;
                    let pid = started(&mut sleeper).await?;
                    let process = if selector == "pid" { json!({"pid": pid}) } else { json!({"tag": tag}) };
                    done(&front, &made, "/process.Process/SendSignal", json!({"process": process, "signal": signal})).await?;
                    let end = end_of(&mut sleeper).await?;
                    ensure!(end["exited"] == true && end["exitCode"] != 0, "{signal}: {end}");
                    ensure!(end["status"] == status, "{signal}: the status is not `{status}`: {end}");
                }
                front.kill(&made).await?;
                Ok(())
            },
        },
        case! {
            id: "e2b/process/003",
            spec: "A PTY started as the SDK's `pty.create` does (`/bin/bash -i -l` with `pty.size`) is listed with its tag; typed input (`SendInput` `pty`) runs in it, its output comes as `data.pty`; `Update` `{pty: {size}}` resizes it (`stty size` answers the new rows and columns); its `end` carries the shell's exit status.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_process_start", "e2b_process_list", "e2b_process_send_input", "e2b_process_update"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let mut tty = front.live(&made, "/process.Process/Start", &json!({
                    "process": {"cmd": "/bin/bash", "args": ["-i", "-l"], "envs": {"TERM": "xterm-256color"}},
                    "pty": {"size": {"cols": 80, "rows": 24}},
                    "tag": "tty",
                })).await?;
                let pid = started(&mut tty).await?;
                let all = listed(&front, &made).await?;
                ensure!(all.iter().any(|p| p["pid"] == pid && p["tag"] == "tty"), "the PTY {pid} is not listed: {all:?}");
                let typed = |text: &str| json!({"process": {"pid": pid}, "input": {"pty": b64(text.as_bytes())}});
                // The typed line's echo holds no digits, so only `stty`'s answer matches.
                done(&front, &made, "/process.Process/SendInput", typed("stty size\n")).await?;
                output_until(&mut tty, "pty", "24 80").await?;

                done(&front, &made, "/process.Process/Update", json!({"process": {"pid": pid}, "pty": {"size": {"cols": 100, "rows": 40}}})).await?;
                done(&front, &made, "/process.Process/SendInput", typed("stty size\n")).await?;
                output_until(&mut tty, "pty", "40 100").await?;

                done(&front, &made, "/process.Process/SendInput", typed("exit 7\n")).await?;
                let end = end_of(&mut tty).await?;
                ensure!(end["exitCode"] == 7 && end["exited"] == true, "the shell's exit: {end}");
                front.kill(&made).await?;
                Ok(())
            },
        },
    ]
}
