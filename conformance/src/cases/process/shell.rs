//! POST /shell (issue 12, wire contract `shell`): a command run to completion, its output
//! kept apart, its time limit and output cap, a program run without a shell, the bad
//! bodies.

use super::support::{area, s, shell, snapshot};
use crate::{Case, case, profiles};
use anyhow::ensure;
use base64::Engine as _;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "process/shell/001",
            spec: "shell: POST /shell `{cmd, cwd}` runs `cmd` by `/bin/sh -c` and answers 200 `{stdout, stderr, exit_code, duration_ms, timed_out, truncated}`, stdout and stderr kept apart, each in order; `stdin` is written to the command, then closed.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "shell-001")?;
                let resp = shell(&ctx, &json!({
                    "cmd": "for i in 1 2 3; do echo out$i; echo err$i >&2; done; pwd; exit 3",
                    "cwd": s(&dir),
                })).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["stdout"] == format!("out1\nout2\nout3\n{}\n", s(&dir)), "{body}");
                ensure!(body["stderr"] == "err1\nerr2\nerr3\n", "{body}");
                ensure!(body["exit_code"] == 3 && body["timed_out"] == false && body["truncated"] == false, "{body}");
                snapshot(&ctx, "process__shell__result", &body)?;
                let resp = shell(&ctx, &json!({"cmd": "tr a-z A-Z", "stdin": "piped in", "cwd": s(&dir)})).await?;
                let body = resp.json()?;
                ensure!(body["stdout"] == "PIPED IN" && body["exit_code"] == 0, "{body}");
                Ok(())
            },
        },
        case! {
            id: "process/shell/002",
            spec: "shell: `cmd` with `args` (an array, possibly empty) is executed directly, never through a shell: shell syntax in the arguments stays literal.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "shell-002")?;
                let resp = shell(&ctx, &json!({
                    "cmd": "echo", "args": ["$HOME;", "`id`", "|", "*"], "cwd": s(&dir),
                })).await?;
                let body = resp.json()?;
                ensure!(body["stdout"] == "$HOME; `id` | *\n", "{body}");
                let resp = shell(&ctx, &json!({"cmd": "pwd", "args": [], "cwd": s(&dir)})).await?;
                ensure!(resp.json()?["stdout"] == format!("{}\n", s(&dir)), "{}", resp.text());
                Ok(())
            },
        },
        case! {
            id: "process/shell/003",
            spec: "shell: a timeout kills the process group, keeps partial output and sets `timed_out: true` with `exit_code` null; a child the command left in its group goes too.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "shell-003")?;
                let pids = dir.join("pids");
                let started = std::time::Instant::now();
                let resp = shell(&ctx, &json!({
                    "cmd": format!("echo before; sleep 60 & echo $! > {}; wait", s(&pids)),
                    "cwd": s(&dir),
                    "timeout": 0.5,
                })).await?;
                let body = resp.json()?;
                ensure!(body["timed_out"] == true && body["exit_code"].is_null(), "{body}");
                ensure!(body["stdout"] == "before\n", "partial output kept: {body}");
                ensure!(started.elapsed() < std::time::Duration::from_secs(10), "answered in time");
                let child = super::support::pids_in(&pids, 1, std::time::Duration::from_secs(2)).await?;
                super::support::all_gone(&child, std::time::Duration::from_secs(5)).await?;
                Ok(())
            },
        },
        case! {
            id: "process/shell/004",
            spec: "shell: output over the cap is cut and `truncated: true` (the `process` profile keeps 64 KiB per stream); the command is not blocked by it and its exit code is kept.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "shell-004")?;
                let resp = shell(&ctx, &json!({
                    "cmd": "head -c 1000000 /dev/zero | tr '\\0' a; echo; exit 5", "cwd": s(&dir),
                })).await?;
                let body = resp.json()?;
                let out = body["stdout"].as_str().unwrap_or_default();
                ensure!(out.len() == 65536 && out.bytes().all(|b| b == b'a'), "stdout holds the first 64 KiB: {} bytes", out.len());
                ensure!(body["truncated"] == true && body["exit_code"] == 5, "{}", body["truncated"]);
                Ok(())
            },
        },
        case! {
            id: "process/shell/005",
            spec: "shell: output that is not UTF-8 arrives intact: the text field holds the lossy reading and `stdout_b64` / `stderr_b64` the exact bytes.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "shell-005")?;
                let resp = shell(&ctx, &json!({"cmd": "printf 'a\\377\\376b'; printf 'ok' >&2", "cwd": s(&dir)})).await?;
                let body = resp.json()?;
                let b64 = body["stdout_b64"].as_str().unwrap_or_default();
                let bytes = base64::engine::general_purpose::STANDARD.decode(b64)?;
                ensure!(bytes == b"a\xff\xfeb", "{body}");
                ensure!(body["stderr"] == "ok" && body.get("stderr_b64").is_none(), "{body}");
                Ok(())
            },
        },
        case! {
            id: "process/shell/006",
            spec: "Bad command bodies: no `cmd` or an empty one is 400 `command_invalid`; an unclosed quote is `command_invalid`; an argument with a NUL byte or a program that does not exist is 400 `process_invalid`; a `timeout` of 0 or over 3600 and an unknown member are 400 `invalid_request`.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: ["command_invalid", "process_invalid", "invalid_request"],
            run: |ctx| async move {
                let dir = s(&area(&ctx, "shell-006")?);
                for (body, status, code) in [
                    (json!({"cwd": dir}), 400, "command_invalid"),
                    (json!({"cmd": "   ", "cwd": dir}), 400, "command_invalid"),
                    (json!({"cmd": "echo 'open", "cwd": dir}), 400, "command_invalid"),
                    (json!({"cmd": "echo", "args": ["a\u{0}b"], "cwd": dir}), 400, "process_invalid"),
                    (json!({"cmd": "no-such-program-anywhere", "args": [], "cwd": dir}), 400, "process_invalid"),
                    (json!({"cmd": "", "args": [], "cwd": dir}), 400, "process_invalid"),
                    (json!({"cmd": "true", "timeout": 0, "cwd": dir}), 400, "invalid_request"),
                    (json!({"cmd": "true", "timeout": 3601, "cwd": dir}), 400, "invalid_request"),
                    (json!({"cmd": "true", "shell": "bash", "cwd": dir}), 400, "invalid_request"),
                ] {
                    let resp = shell(&ctx, &body).await?;
                    resp.expect_error(status, code)?;
                }
                let resp = shell(&ctx, &json!({"cwd": dir})).await?;
                snapshot(&ctx, "process__shell__command_invalid", &resp.json()?)?;
                Ok(())
            },
        },
    ]
}
