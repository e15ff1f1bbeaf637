//! Commands (spec 4.4, 6, 8): run to completion, or streamed as events `start`,
//! `stdout` / `stderr`, `exit`, then `end`; `cmd` alone is a shell line, `cmd` with
//! `args` a program and its arguments; output that is not UTF-8 comes as `_b64`.

use super::support::{
    create, expect_error, names, post, req, run, sandbox, sb, snapshot, stream_all, stream_bytes,
};
use crate::{Case, SseFrame, case, profiles};
use anyhow::{Context as _, anyhow, ensure};
use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/commands/001",
            spec: "POST .../commands/run runs a shell line to completion and answers `{pid, stdout, stderr, exit_code, timed_out}`, the two outputs kept apart.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let out = run(&ctx, &id, &json!({"cmd": "echo out; echo err >&2; exit 3"})).await?;
                let mut keys: Vec<&str> = out.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
                keys.sort_unstable();
                ensure!(keys == ["exit_code", "pid", "stderr", "stdout", "timed_out"], "{out}");
                ensure!(out["stdout"] == "out\n" && out["stderr"] == "err\n" && out["exit_code"] == 3 && out["timed_out"] == false, "{out}");
                ensure!(out["pid"].as_u64().is_some_and(|p| p > 0), "{out}");
                snapshot(&ctx, "engine__commands__run", &out)?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/commands/002",
            spec: "`cmd` with `args` runs the program with those arguments and no shell (nothing is expanded); `env` adds variables, `cwd` sets the directory (relative to the sandbox's), the create's `envs` are in every command's environment, and `stdin` is written to it.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_run", "sandboxes_create"],
            codes: [],
            run: |ctx| async move {
                let record = create(&ctx, &json!({"timeout": 300, "envs": {"FROM_CREATE": "made"}})).await?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                let out = run(&ctx, &id, &json!({"cmd": "printf", "args": ["%s|", "a b", "$HOME", "*"]})).await?;
                ensure!(out["stdout"] == "a b|$HOME|*|" && out["exit_code"] == 0, "no shell: {out}");
                let out = run(&ctx, &id, &json!({"cmd": "mkdir -p sub/dir"})).await?;
                ensure!(out["exit_code"] == 0, "{out}");
                let out = run(&ctx, &id, &json!({"cmd": "echo \"$FOO $FROM_CREATE\"; pwd", "env": {"FOO": "bar"}, "cwd": "sub/dir"})).await?;
                let stdout = out["stdout"].as_str().unwrap_or_default();
                ensure!(stdout.starts_with("bar made\n") && stdout.trim_end().ends_with("/sub/dir"), "{out}");
                let out = run(&ctx, &id, &json!({"cmd": "cat", "stdin": "fed to stdin\n"})).await?;
                ensure!(out["stdout"] == "fed to stdin\n" && out["exit_code"] == 0, "{out}");
                let out = run(&ctx, &id, &json!({"cmd": "cat"})).await?;
                ensure!(out["stdout"] == "" && out["exit_code"] == 0, "without `stdin` a run's stdin is closed, so `cat` ends: {out}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/commands/003",
            spec: "A command that outlives its `timeout` (seconds) is ended and answered with `timed_out: true`, promptly.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let began = Instant::now();
                let out = run(&ctx, &id, &json!({"cmd": "echo started; sleep 30", "timeout": 1})).await?;
                ensure!(began.elapsed() < Duration::from_secs(10), "answered {:?} after the start", began.elapsed());
                ensure!(out["timed_out"] == true && out["exit_code"] != 0 && out["stdout"] == "started\n", "{out}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/commands/004",
            spec: "Output that is not UTF-8 also comes as `stdout_b64` / `stderr_b64`, the exact bytes.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let out = run(&ctx, &id, &json!({"cmd": "printf 'a\\377b'; printf '\\376' >&2"})).await?;
                let b64 = |key: &str| base64::engine::general_purpose::STANDARD.decode(out[key].as_str().unwrap_or("!")).with_context(|| format!("`{key}` is base64: {out}"));
                ensure!(b64("stdout_b64")? == b"a\xffb" && b64("stderr_b64")? == b"\xfe", "{out}");
                let plain = run(&ctx, &id, &json!({"cmd": "echo fine"})).await?;
                ensure!(plain.get("stdout_b64").is_none(), "UTF-8 output has no `_b64`: {plain}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/commands/005",
            spec: "A command body is checked before anything runs: an empty or missing `cmd`, an unknown field, a NUL byte or a `timeout` that is not a number is 400 `E4001`, on run and on stream alike (before the stream opens).",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_run", "commands_stream"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                for route in ["/commands/run", "/commands/stream"] {
                    for bad in [json!({"cmd": ""}), json!({"cmd": "   "}), json!({}), json!({"cmd": "true", "shell": true}), json!({"cmd": "echo \u{0}"}), json!({"cmd": "echo", "args": ["a\u{0}"]}), json!({"cmd": "true", "timeout": "soon"})] {
                        let resp = post(&ctx, &sb(&id, route), &bad).await?;
                        let body = expect_error(&resp, 400, "E4001").with_context(|| format!("{route} {bad}"))?;
                        if route == "/commands/run" && bad == json!({"cmd": ""}) {
                            super::support::error_snapshot(&ctx, "engine__commands__invalid", &body, &[])?;
                        }
                    }
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/commands/006",
            spec: "POST .../commands/stream answers `text/event-stream` with `start` `{pid}` first, then `stdout` and `stderr` `{data}` as the command prints, then `exit` `{exit_code, timed_out}`, then `end` `{}` last, and the stream closes.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_stream"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let frames = stream_all(&ctx, &id, &json!({"cmd": "echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three; exit 4"}), Duration::from_secs(20)).await?;
                let order = names(&frames);
                ensure!(order.first().map(String::as_str) == Some("start"), "`start` comes first: {order:?}");
                ensure!(order.len() >= 4 && order[order.len() - 2] == "exit" && order[order.len() - 1] == "end", "`exit` then `end` close it: {order:?}");
                ensure!(order[1..order.len() - 2].iter().all(|n| n == "stdout" || n == "stderr"), "only output between: {order:?}");
                let start = frames[0].json()?;
                ensure!(start.as_object().is_some_and(|m| m.len() == 1) && start["pid"].as_u64().is_some_and(|p| p > 0), "start is `{{pid}}`: {start}");
                ensure!(stream_bytes(&frames, "stdout")? == b"one\nthree\n" && stream_bytes(&frames, "stderr")? == b"two\n", "{frames:?}");
                let exit = frames[frames.len() - 2].json()?;
                ensure!(exit == json!({"exit_code": 4, "timed_out": false}), "{exit}");
                ensure!(frames[frames.len() - 1].json()? == json!({}), "`end` carries `{{}}`");
                // The second line was printed after the first: the events came in that order.
                let first_out = order.iter().position(|n| n == "stdout");
                let first_err = order.iter().position(|n| n == "stderr");
                ensure!(first_out < first_err, "output comes as printed: {order:?}");
                snapshot(&ctx, "engine__commands__stream", &json!(shown(&frames)?))?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/commands/007",
            spec: "A streamed command's events come as they happen, not when it ends: `start` and the first `stdout` arrive while the command still runs.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_stream"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let rb = req(&ctx, Method::POST, &sb(&id, "/commands/stream")).json(&json!({"cmd": "echo early; sleep 5; echo late"}));
                let began = Instant::now();
                let mut stream = ctx.sse(rb).await?;
                let mut seen = Vec::new();
                while let Some(frame) = stream.next_event_within(Duration::from_secs(10)).await? {
                    let name = frame.event.clone().unwrap_or_default();
                    if name == "stdout" {
                        ensure!(frame.json()?["data"] == "early\n", "{frame:?}");
                        break;
                    }
                    seen.push(name);
                }
                ensure!(began.elapsed() < Duration::from_secs(4), "the first output came {:?} after the start, with the command's end", began.elapsed());
                ensure!(seen == ["start"], "{seen:?}");
                drop(stream);
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/commands/008",
            spec: "In a stream, output that is not UTF-8 comes as `data_b64` (the exact bytes); a command past its `timeout` ends with `exit` `{timed_out: true}` and `end`.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_stream"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let frames = stream_all(&ctx, &id, &json!({"cmd": "printf 'x\\377y'; sleep 30", "timeout": 1}), Duration::from_secs(15)).await?;
                ensure!(stream_bytes(&frames, "stdout")? == b"x\xffy", "{frames:?}");
                let order = names(&frames);
                ensure!(order.ends_with(&["exit".to_owned(), "end".to_owned()]), "{order:?}");
                let exit = frames[frames.len() - 2].json()?;
                ensure!(exit["timed_out"] == true && exit["exit_code"] != 0, "{exit}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/commands/009",
            spec: "A stream's failure after it has opened arrives as an `error` event carrying the engine error body, which ends the stream: a sandbox killed under a running stream ends it with `exit` then `end`, or with such an `error` event, never by cutting it.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_stream", "sandboxes_kill"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let rb = req(&ctx, Method::POST, &sb(&id, "/commands/stream")).json(&json!({"cmd": "echo up; sleep 60"}));
                let mut stream = ctx.sse(rb).await?;
                let mut frames: Vec<SseFrame> = Vec::new();
                while let Some(frame) = stream.next_event_within(Duration::from_secs(10)).await? {
                    let out = frame.event.as_deref() == Some("stdout");
                    frames.push(frame);
                    if out { break; }
                }
                super::support::delete(&ctx, &sb(&id, "")).await?.expect_status(200)?;
                while let Some(frame) = stream.next_event_within(Duration::from_secs(15)).await? {
                    frames.push(frame);
                }
                let order = names(&frames);
                let last = frames.last().ok_or_else(|| anyhow!("no events"))?;
                match last.event.as_deref() {
                    Some("end") => ensure!(order.iter().filter(|n| *n == "exit").count() == 1 && order[order.len() - 2] == "exit", "{order:?}"),
                    Some("error") => {
                        let body = last.json()?;
                        let code = body["error"]["code"].as_str().unwrap_or_default().to_owned();
                        super::support::check_error_body(&body, &code)?;
                        ensure!(!order.contains(&"end".to_owned()), "nothing follows an `error` event: {order:?}");
                    }
                    other => anyhow::bail!("the stream was cut without `end` or `error` (last event {other:?}): {order:?}"),
                }
                Ok(())
            },
        },
        case! {
            id: "engine/commands/010",
            spec: "A command's environment is the sandbox's, not the engine's: `HOME` is the sandbox's folder, `PATH` is set, and neither the engine's token nor the engine's own variables (its `SVC_STATE_DIR`) reach it.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let out = super::support::sh(&ctx, &id, "env; echo \"CWD=$(pwd -P)\"; echo \"REALHOME=$(cd \"$HOME\" && pwd -P)\"").await?;
                let token = ctx.token().ok_or_else(|| anyhow!("the engine's token is unknown"))?;
                ensure!(!out.contains(token), "the engine's token is in a sandbox's environment");
                // The runner gave the engine its state folder this way; a sandbox has its own marks.
                let leaked: Vec<&str> = out.lines().filter(|l| l.starts_with("SVC_STATE_DIR=")).collect();
                ensure!(leaked.is_empty(), "the engine's variables reach the sandbox: {leaked:?}");
                ensure!(out.lines().any(|l| l.starts_with("PATH=") && l.len() > 5), "PATH is set: {out}");
                let value = |key: &str| out.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_default().to_owned();
                ensure!(!value("CWD=").is_empty() && value("CWD=") == value("REALHOME="), "HOME is the sandbox's folder, where commands start: {out}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}

/// The events as `{event, data}` with the output joined, for a snapshot.
fn shown(frames: &[SseFrame]) -> anyhow::Result<Vec<Value>> {
    frames
        .iter()
        .map(|f| {
            Ok(json!({
                "event": f.event.clone().unwrap_or_default(),
                "data": f.json()?,
            }))
        })
        .collect()
}
