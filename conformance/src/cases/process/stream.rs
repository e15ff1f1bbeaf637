//! POST /shell/stream (issue 12, wire contract `shell_stream`): output as server-sent
//! events while the command runs, then `exit` and `end`; bytes that are not UTF-8; the
//! time limit; a refusal before the stream; a reader that hangs up; a slow reader that
//! loses nothing.

use super::support::{all_gone, area, pids_in, s, snapshot, stream_all, stream_bytes};
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};
use std::time::Duration;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "process/stream/001",
            spec: "shell_stream: events `stdout` and `stderr` (data `{data}`), each stream in order, then `exit` (data `{exit_code, duration_ms, timed_out}`), then `end`; nothing after `end`.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell_stream"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "stream-001")?;
                let frames = stream_all(&ctx, &json!({
                    "cmd": "for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; done; exit 4",
                    "cwd": s(&dir),
                }), Duration::from_secs(20)).await?;
                let names: Vec<&str> = frames.iter().filter_map(|f| f.event.as_deref()).collect();
                let n = names.len();
                ensure!(n >= 3 && names[n - 2] == "exit" && names[n - 1] == "end", "{names:?}");
                ensure!(names[..n - 2].iter().all(|e| *e == "stdout" || *e == "stderr"), "{names:?}");
                ensure!(stream_bytes(&frames, "stdout")? == b"o1\no2\no3\no4\no5\n", "stdout in order");
                ensure!(stream_bytes(&frames, "stderr")? == b"e1\ne2\ne3\ne4\ne5\n", "stderr in order");
                let exit = frames[n - 2].json()?;
                ensure!(exit["exit_code"] == 4 && exit["timed_out"] == false, "{exit}");
                snapshot(&ctx, "process__stream__exit", &exit)?;
                let first = frames[0].json()?;
                // How many lines one event holds depends on the pipe's timing: the shape is
                // what is pinned (a `stdout` event whose data holds one string member `data`).
                let out = frames.iter().find(|f| f.event.as_deref() == Some("stdout")).context("a stdout event")?.json()?;
                ensure!(out["data"].is_string(), "{out}");
                let shape: Value = out.as_object().map(|o| o.keys().map(|k| (k.clone(), Value::from("[text]"))).collect()).unwrap_or_default();
                snapshot(&ctx, "process__stream__output_event", &json!({"event": "stdout", "data": shape}))?;
                ensure!(first.get("data").is_some() && first.as_object().map(|o| o.len()) == Some(1), "{first}");
                Ok(())
            },
        },
        case! {
            id: "process/stream/002",
            spec: "shell_stream: bytes that are not UTF-8 arrive as `data_b64` and intact; text split anywhere by the pipe still arrives as text.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell_stream"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "stream-002")?;
                let frames = stream_all(&ctx, &json!({
                    "cmd": "printf '\\377\\376x'; sleep 0.2; printf '\\342\\202'; sleep 0.2; printf '\\254 done'",
                    "cwd": s(&dir),
                }), Duration::from_secs(20)).await?;
                ensure!(stream_bytes(&frames, "stdout")? == b"\xff\xfex\xe2\x82\xac done", "{frames:?}");
                let datas: Vec<Value> = frames.iter().filter(|f| f.event.as_deref() == Some("stdout")).map(|f| f.json()).collect::<anyhow::Result<_>>()?;
                ensure!(datas.iter().any(|d| d.get("data_b64").is_some()), "the invalid bytes came as data_b64: {datas:?}");
                ensure!(datas.iter().any(|d| d["data"].as_str().is_some_and(|t| t.contains('€'))), "the euro sign cut in two by the pipe came whole, as text: {datas:?}");
                Ok(())
            },
        },
        case! {
            id: "process/stream/003",
            spec: "shell_stream: a timeout kills the process group; the stream ends with `exit` carrying `timed_out: true` and a null `exit_code`, then `end`; the output before it was sent.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell_stream"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "stream-003")?;
                let frames = stream_all(&ctx, &json!({"cmd": "echo started; sleep 60", "cwd": s(&dir), "timeout": 0.5}), Duration::from_secs(15)).await?;
                ensure!(stream_bytes(&frames, "stdout")? == b"started\n", "{frames:?}");
                let exit = frames.iter().find(|f| f.event.as_deref() == Some("exit")).context("an exit event")?.json()?;
                ensure!(exit["timed_out"] == true && exit["exit_code"].is_null(), "{exit}");
                ensure!(frames.last().and_then(|f| f.event.as_deref()) == Some("end"), "{frames:?}");
                Ok(())
            },
        },
        case! {
            id: "process/stream/004",
            spec: "shell_stream: the command is judged before the stream opens, so a refusal is a normal typed JSON answer (403 `command_not_allowed` for a command the deny list names, even behind `env` or `sh -c`).",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell_stream", "shell"],
            codes: ["command_not_allowed"],
            run: |ctx| async move {
                let dir = s(&area(&ctx, "stream-004")?);
                for cmd in ["shred x", "env shred x", "sh -c 'true; shred x'", "echo $(shred x)"] {
                    let resp = ctx.send(ctx.post_json("/shell/stream", &json!({"cmd": cmd, "cwd": dir}))).await?;
                    let err = resp.expect_error(403, "command_not_allowed")?;
                    ensure!(err["endpoint"] == "shell_stream", "{err}");
                }
                let resp = super::support::shell(&ctx, &json!({"cmd": "shred", "args": ["x"], "cwd": dir})).await?;
                let err = resp.expect_error(403, "command_not_allowed")?;
                snapshot(&ctx, "process__stream__command_not_allowed", &err)?;
                Ok(())
            },
        },
        case! {
            id: "process/stream/005",
            spec: "shell_stream: a reader that hangs up ends the command and its whole group; a slow reader loses nothing (the command waits for it).",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell_stream"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "stream-005")?;
                let pids = dir.join("pids");
                let mut stream = ctx.sse(ctx.post_json("/shell/stream", &json!({
                    "cmd": format!("echo $$ > {p}; sleep 60 & echo $! >> {p}; echo ready; wait", p = s(&pids)),
                    "cwd": s(&dir),
                }))).await?;
                let first = stream.next_event_within(Duration::from_secs(10)).await?.context("an event")?;
                ensure!(first.event.as_deref() == Some("stdout"), "{first:?}");
                let pids = pids_in(&pids, 2, Duration::from_secs(5)).await?;
                drop(stream);
                all_gone(&pids, Duration::from_secs(10)).await?;
                // A slow reader: 4 MiB, read in pauses, every byte arrives.
                let mut stream = ctx.sse(ctx.post_json("/shell/stream", &json!({
                    "cmd": "head -c 4194304 /dev/zero | tr '\\0' z", "cwd": s(&dir),
                }))).await?;
                tokio::time::sleep(Duration::from_millis(500)).await;
                let mut frames = Vec::new();
                while let Some(frame) = stream.next_event_within(Duration::from_secs(30)).await? {
                    frames.push(frame);
                    if frames.len() % 64 == 0 {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                let out = stream_bytes(&frames, "stdout")?;
                ensure!(out.len() == 4_194_304 && out.iter().all(|b| *b == b'z'), "{} bytes", out.len());
                Ok(())
            },
        },
    ]
}
