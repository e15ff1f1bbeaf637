//! Named commands: POST /commands/{name} (second document, 4.2).

use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "commands/run/001",
            spec: "POST /commands/{name}: the body is a JSON object of the command's keyword arguments; returns the command's result.",
            profile: &profiles::COMMANDS,
            tags: [],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.post_json("/commands/greet", &json!({"who": "world"}))).await?;
                resp.expect_status(200)?;
                let out = resp.json()?;
                ensure!(out["stdout"] == "hello, world\n" && out["exit_code"] == 0 && out["timed_out"] == false, "{out}");
                ctx.snapshot("commands__run__greet", &out)
            },
        },
        case! {
            id: "commands/run/002",
            spec: "Arguments never reach a shell: shell syntax in an argument is passed through as text.",
            profile: &profiles::COMMANDS,
            tags: [],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let dir = ctx.dir().context("needs the profile directory")?;
                let marker = dir.join("pwned");
                let who = format!("$(touch {}); `touch {}`; | && >", marker.display(), marker.display());
                let out = ctx.send(ctx.post_json("/commands/greet", &json!({"who": who}))).await?.json()?;
                ensure!(out["stdout"] == format!("hello, {who}\n"), "{out}");
                ensure!(!marker.exists(), "no shell ran the argument");
                Ok(())
            },
        },
        case! {
            id: "commands/run/003",
            spec: "POST /commands/{name} with an unknown name: 404.",
            profile: &profiles::COMMANDS,
            tags: [],
            endpoints: ["commands_run"],
            codes: ["command_not_found"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.post_json("/commands/launch-missiles", &json!({}))).await?;
                let body = resp.expect_error(404, "command_not_found")?;
                ensure!(body["error"].as_str().unwrap_or_default().contains("launch-missiles"), "{body}");
                Ok(())
            },
        },
        case! {
            id: "commands/run/004",
            spec: "Bad arguments are 400 naming the argument: missing required, wrong type, out of range, unknown.",
            profile: &profiles::COMMANDS,
            tags: [],
            endpoints: ["commands_run"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                for (args, param) in [
                    (json!({}), "who"),
                    (json!({"who": 42}), "who"),
                    (json!({"who": "x", "times": 9}), "times"),
                    (json!({"who": "x", "times": "two"}), "times"),
                    (json!({"who": "x", "colour": "red"}), "colour"),
                    (json!({"who": "y".repeat(513)}), "who"),
                ] {
                    let resp = ctx.send(ctx.post_json("/commands/greet", &args)).await?;
                    let body = resp.expect_error(400, "invalid_request")?;
                    ensure!(body["param"] == param, "{args}: expected param {param}: {body}");
                }
                let resp = ctx.send(ctx.post_json("/commands/greet", &json!(["not", "an", "object"]))).await?;
                resp.expect_error(400, "invalid_request")?;
                Ok(())
            },
        },
        case! {
            id: "commands/run/005",
            spec: "A command that exits non-zero still answers 200 with its exit code and stderr: the call worked, the command failed.",
            profile: &profiles::COMMANDS,
            tags: [],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let out = ctx.send(ctx.post_json("/commands/fail", &json!({}))).await?.json()?;
                ensure!(out["exit_code"] == 3 && out["stderr"] == "failing\n", "{out}");
                Ok(())
            },
        },
        case! {
            id: "commands/run/006",
            spec: "A command that outlives its timeout is stopped and reported with `timed_out: true`.",
            profile: &profiles::COMMANDS,
            tags: [],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let started = std::time::Instant::now();
                let out = ctx.send(ctx.post_json("/commands/slow", &json!({}))).await?.json()?;
                ensure!(out["timed_out"] == true && out["exit_code"].is_null(), "{out}");
                ensure!(started.elapsed() < std::time::Duration::from_secs(20), "stopped near its 1 s timeout");
                Ok(())
            },
        },
        case! {
            id: "commands/run/007",
            spec: "A command whose program cannot start is a clear 503 `command_unavailable`, never a 500.",
            profile: &profiles::COMMANDS,
            tags: [],
            endpoints: ["commands_run"],
            codes: ["command_unavailable"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.post_json("/commands/missing", &json!({}))).await?;
                let body = resp.expect_error(503, "command_unavailable")?;
                ensure!(body["error"].as_str().unwrap_or_default().contains("/nonexistent/svc-conformance-program"), "{body}");
                Ok(())
            },
        },
    ]
}
