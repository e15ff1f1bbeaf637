//! The process routes (issue 12, wire contract `process_start` ... `process_kill`): the
//! record, the list, output kept for a late reader, stdin, signals, kill of a whole group,
//! owners, and the errors of a process that has ended.

use super::support::{
    alive, all_gone, area, check_record, exited, get, kill, pid_of, pids_in, s, signal, snapshot,
    start, started, stdin,
};
use crate::{Case, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "process/processes/001",
            spec: "process_start answers 200 with the process record `{pid, tag, cmd, args, cwd, status: \"running\", exit_code, signal, started_at, ended_at}`; process_list answers `{processes: [record...]}` holding it; process_get answers the same record, `exited` with its exit code once it ends.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["process_start", "process_list", "process_get"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "processes-001")?;
                let resp = start(&ctx, &json!({"cmd": "sleep", "args": ["30"], "cwd": s(&dir), "tag": "nap"})).await?;
                resp.expect_status(200)?;
                let record = resp.json()?;
                check_record(&record)?;
                ensure!(record["status"] == "running" && record["tag"] == "nap" && record["cmd"] == "sleep" && record["args"] == json!(["30"]), "{record}");
                let pid = pid_of(&record)?;
                ensure!(alive(pid), "the pid is a live process here");
                snapshot(&ctx, "process__processes__record", &record)?;
                let list = ctx.send(ctx.get("/processes")).await?;
                list.expect_status(200)?;
                let list = list.json()?;
                let listed = list["processes"].as_array().cloned().unwrap_or_default();
                let ours: Vec<_> = listed.iter().filter(|r| r["pid"] == pid).cloned().collect();
                ensure!(ours.len() == 1, "{list}");
                snapshot(&ctx, "process__processes__list", &json!({"processes": ours}))?;
                let got = get(&ctx, pid, "").await?.json()?;
                ensure!(got == record, "get answers the record: {got} vs {record}");
                kill(&ctx, pid).await?.expect_status(200)?;
                let line = started(&ctx, &json!({"cmd": "exit 7", "cwd": s(&dir)})).await?;
                let done = exited(&ctx, line, Duration::from_secs(10)).await?;
                ensure!(done["exit_code"] == 7 && done["args"].is_null() && done["cmd"] == "exit 7" && done["ended_at"].is_string(), "a shell line's record shows the line, args null: {done}");
                snapshot(&ctx, "process__processes__exited", &done)?;
                Ok(())
            },
        },
        case! {
            id: "process/processes/002",
            spec: "process_get?output=true also answers `stdout` and `stderr`, the buffered output, kept apart: a late reader gets what it missed (with `stdout_dropped` / `stderr_dropped` 0 when nothing was lost).",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["process_get"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "processes-002")?;
                let pid = started(&ctx, &json!({"cmd": "echo one; echo two >&2; printf '\\377'; sleep 0.2; echo three", "cwd": s(&dir)})).await?;
                exited(&ctx, pid, Duration::from_secs(10)).await?;
                let body = get(&ctx, pid, "?output=true").await?.json()?;
                ensure!(body["stderr"] == "two\n" && body["stdout_dropped"] == 0 && body["stderr_dropped"] == 0, "{body}");
                use base64::Engine as _;
                let raw = base64::engine::general_purpose::STANDARD.decode(body["stdout_b64"].as_str().unwrap_or_default())?;
                ensure!(raw == b"one\n\xffthree\n", "{body}");
                snapshot(&ctx, "process__processes__output", &body)?;
                let plain = get(&ctx, pid, "").await?.json()?;
                ensure!(plain.get("stdout").is_none(), "without output=true no output: {plain}");
                let resp = get(&ctx, pid, "?output=maybe").await?;
                resp.expect_error(400, "invalid_request")?;
                Ok(())
            },
        },
        case! {
            id: "process/processes/003",
            spec: "process_stdin `{data, close?}` writes to the process's stdin (the start's `stdin` first); `close: true` closes it, after which a write is 409 `stdin_closed`; a write to a process that has exited is 409 `process_exited`.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["process_stdin", "process_start"],
            codes: ["stdin_closed", "process_exited"],
            run: |ctx| async move {
                let dir = area(&ctx, "processes-003")?;
                let pid = started(&ctx, &json!({"cmd": "cat", "args": [], "stdin": "first\n", "cwd": s(&dir)})).await?;
                let resp = stdin(&ctx, pid, &json!({"data": "second\n"})).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["written"] == 7 && body["closed"] == false && body["pid"] == pid, "{body}");
                snapshot(&ctx, "process__processes__stdin", &body)?;
                stdin(&ctx, pid, &json!({"data": "third\n", "close": true})).await?.expect_status(200)?;
                let resp = stdin(&ctx, pid, &json!({"data": "late"})).await?;
                // Closed stdin, or `cat` already gone after it: 409 either way, never a write.
                resp.expect_status(409)?;
                let code = resp.json()?["code"].as_str().unwrap_or_default().to_owned();
                ensure!(code == "stdin_closed" || code == "process_exited", "{}", resp.describe());
                let done = exited(&ctx, pid, Duration::from_secs(10)).await?;
                ensure!(done["exit_code"] == 0, "cat ends when stdin closes: {done}");
                let out = get(&ctx, pid, "?output=true").await?.json()?;
                ensure!(out["stdout"] == "first\nsecond\nthird\n", "{out}");
                stdin(&ctx, pid, &json!({"data": "x"})).await?.expect_error(409, "process_exited")?;
                // A process that runs on with its stdin closed.
                let pid = started(&ctx, &json!({"cmd": "exec 0<&-; sleep 30", "cwd": s(&dir)})).await?;
                stdin(&ctx, pid, &json!({"close": true})).await?.expect_status(200)?;
                let err = stdin(&ctx, pid, &json!({"data": "x"})).await?.expect_error(409, "stdin_closed")?;
                let shown = err.to_string().replace(&pid.to_string(), "[pid]");
                snapshot(&ctx, "process__processes__stdin_closed", &serde_json::from_str(&shown)?)?;
                stdin(&ctx, pid, &json!({})).await?.expect_error(400, "invalid_request")?;
                kill(&ctx, pid).await?;
                Ok(())
            },
        },
        case! {
            id: "process/processes/004",
            spec: "process_signal `{signal: 15 or 9}` signals the whole process group and answers the record; any other number is 400; a signal to a process that has exited is 409 `process_exited`.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["process_signal"],
            codes: ["invalid_request", "process_exited"],
            run: |ctx| async move {
                let dir = area(&ctx, "processes-004")?;
                let pids = dir.join("pids");
                let pid = started(&ctx, &json!({"cmd": format!("sleep 60 & echo $! > {}; wait", s(&pids)), "cwd": s(&dir)})).await?;
                let child = pids_in(&pids, 1, Duration::from_secs(5)).await?;
                for bad in [json!({"signal": 2}), json!({"signal": 0}), json!({"signal": -9}), json!({"signal": "TERM"}), json!({})] {
                    let err = signal(&ctx, pid, &bad).await?.expect_error(400, "invalid_request")?;
                    ensure!(err["param"] == "signal" || bad["signal"].is_string(), "{err}");
                }
                let resp = signal(&ctx, pid, &json!({"signal": 15})).await?;
                resp.expect_status(200)?;
                check_record(&resp.json()?)?;
                let done = exited(&ctx, pid, Duration::from_secs(10)).await?;
                ensure!(done["signal"] == 15 && done["exit_code"].is_null(), "{done}");
                all_gone(&child, Duration::from_secs(5)).await?;
                let err = signal(&ctx, pid, &json!({"signal": 9})).await?.expect_error(409, "process_exited")?;
                let shown = err.to_string().replace(&pid.to_string(), "[pid]");
                snapshot(&ctx, "process__processes__process_exited", &serde_json::from_str(&shown)?)?;
                Ok(())
            },
        },
        case! {
            id: "process/processes/005",
            spec: "process_kill: DELETE /processes/{pid} sends TERM to the whole process group, waits a grace period, then KILL, and answers the final record; a program that ignores TERM is killed, and nothing of its group is left, alive or unreaped.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["process_kill"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "processes-005")?;
                let pids = dir.join("pids");
                let pid = started(&ctx, &json!({
                    "cmd": format!("trap '' TERM; (trap '' TERM; sleep 60) & echo $! > {}; sleep 60 & wait", s(&pids)),
                    "cwd": s(&dir),
                })).await?;
                let child = pids_in(&pids, 1, Duration::from_secs(5)).await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
                let began = Instant::now();
                let resp = kill(&ctx, pid).await?;
                resp.expect_status(200)?;
                let record = resp.json()?;
                ensure!(record["status"] == "exited" && record["signal"] == 9, "TERM was ignored, KILL ended it: {record}");
                ensure!(began.elapsed() >= Duration::from_millis(1500), "a grace period passed before KILL ({:?})", began.elapsed());
                let mut all = child.clone();
                all.push(pid);
                all_gone(&all, Duration::from_secs(5)).await?;
                let again = kill(&ctx, pid).await?;
                ensure!(again.status == 200 && again.json()?["status"] == "exited", "killing an exited process answers its record: {}", again.describe());
                Ok(())
            },
        },
        case! {
            id: "process/processes/006",
            spec: "Only processes started through this server by the caller are visible: another identity's pid, the server's own pid and a pid nobody started are 404 `not_found` on every process route; a pid that is not a positive integer is 400.",
            profile: &profiles::PROCESS_GUARD,
            tags: [],
            endpoints: ["process_get", "process_signal", "process_stdin", "process_kill", "process_list"],
            codes: ["not_found", "invalid_request"],
            run: |ctx| async move {
                let dir = area(&ctx, "processes-006")?;
                let as_ = |who: &str, method: Method, path: &str| ctx.anonymous(method, path).bearer_auth(format!("{who}-token"));
                let resp = ctx.send(as_("runner", Method::POST, "/processes").json(&json!({"cmd": "sleep", "args": ["30"], "cwd": s(&dir)}))).await?;
                resp.expect_status(200)?;
                let pid = pid_of(&resp.json()?)?;
                let listed = ctx.send(as_("other", Method::GET, "/processes")).await?.json()?;
                ensure!(listed["processes"].as_array().is_some_and(|a| a.iter().all(|r| r["pid"] != pid)), "{listed}");
                let server = std::process::id(); // a pid this server never started (the runner's)
                for target in [pid, server, 1] {
                    for (method, path, body) in [
                        (Method::GET, format!("/processes/{target}"), None),
                        (Method::POST, format!("/processes/{target}/signal"), Some(json!({"signal": 15}))),
                        (Method::POST, format!("/processes/{target}/stdin"), Some(json!({"data": "x"}))),
                        (Method::DELETE, format!("/processes/{target}"), None),
                    ] {
                        let mut rb = as_("other", method, &path);
                        if let Some(body) = body { rb = rb.json(&body); }
                        ctx.send(rb).await?.expect_error(404, "not_found")?;
                    }
                }
                ensure!(alive(pid), "another caller's calls did not touch it");
                let err = ctx.send(as_("other", Method::GET, &format!("/processes/{pid}"))).await?.json()?;
                snapshot(&ctx, "process__processes__not_found", &json!({"error": err["error"].as_str().map(|e| e.replace(&pid.to_string(), "[pid]")), "code": err["code"], "param": err["param"]}))?;
                for bad in ["abc", "0", "-1", "99999999999"] {
                    ctx.send(as_("other", Method::GET, &format!("/processes/{bad}"))).await?.expect_error(400, "invalid_request")?;
                }
                ctx.send(as_("runner", Method::DELETE, &format!("/processes/{pid}"))).await?.expect_status(200)?;
                Ok(())
            },
        },
    ]
}
