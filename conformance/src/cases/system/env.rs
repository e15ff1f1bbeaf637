//! GET and POST /system/env: the environment children start from.

use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::{Value, json};

/// The `SYSTEM_TEST_*` entries of an env answer (the profile's, but the one
/// system/env/002 unsets), and with `set_by_cases` the `APP_SYS_*` ones too (the rest is the
/// machine's: `PATH`, `HOME`, ...). The cases share one server and run side by side, so a
/// case that only reads leaves out what another sets.
fn ours(body: &Value, set_by_cases: bool) -> Value {
    let env = body["env"].as_object().cloned().unwrap_or_default();
    Value::Object(
        env.into_iter()
            .filter(|(k, _)| {
                (k.starts_with("SYSTEM_TEST_") && k != "SYSTEM_TEST_GONE")
                    || (set_by_cases && k.starts_with("APP_SYS_"))
            })
            .collect(),
    )
}

async fn shell_line(ctx: &crate::Ctx, cmd: &str) -> anyhow::Result<String> {
    let dir = ctx
        .dir()
        .ok_or_else(|| anyhow::anyhow!("needs the profile directory"))?
        .join("work");
    let resp = ctx
        .send(ctx.post_json(
            "/shell",
            &json!({"cmd": cmd, "cwd": dir.display().to_string()}),
        ))
        .await?;
    resp.expect_status(200)?;
    Ok(resp.json()?["stdout"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "system/env/001",
            spec: "system: `GET /system/env` answers `{env: {NAME: value}}`, the environment children get (never the server's `SVC_*` variables), secret-like values masked as `***`.",
            profile: &profiles::SYSTEM,
            tags: [],
            endpoints: ["system_env_get"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.get("/system/env")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let env = body["env"].as_object().cloned().unwrap_or_default();
                ensure!(env.get("SYSTEM_TEST_API_TOKEN") == Some(&json!("***")), "masked: {body}");
                ensure!(env.get("SYSTEM_TEST_PLAIN") == Some(&json!("visible")), "{body}");
                ensure!(env.keys().all(|k| !k.starts_with("SVC_")), "no SVC_ variable: {body}");
                ensure!(env.values().all(|v| v != "tok-0c9f2e"), "the secret appears nowhere: {body}");
                ensure!(env.contains_key("PATH"), "the child base: {body}");
                ctx.snapshot("system__env", &ours(&body, false))?;
                Ok(())
            },
        },
        case! {
            id: "system/env/002",
            spec: "system: `POST /system/env {set, unset}` changes the environment of processes started later and answers the new view: a later `/shell` sees a set variable and not an unset one.",
            profile: &profiles::SYSTEM,
            tags: [],
            endpoints: ["system_env_set", "shell"],
            codes: [],
            run: |ctx| async move {
                let probe = "echo \"${APP_SYS_MARK:-none} ${SYSTEM_TEST_GONE:-none}\"";
                ensure!(shell_line(&ctx, probe).await? == "none here\n", "before the change");
                let resp = ctx.send(ctx.post_json("/system/env", &json!({
                    "set": {"APP_SYS_MARK": "on"}, "unset": ["SYSTEM_TEST_GONE"],
                }))).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["env"]["APP_SYS_MARK"] == "on" && body["env"].get("SYSTEM_TEST_GONE").is_none(), "{body}");
                ensure!(body["env"]["SYSTEM_TEST_API_TOKEN"] == "***", "still masked: {body}");
                ctx.snapshot("system__env__set", &ours(&body, true))?;
                ensure!(shell_line(&ctx, probe).await? == "on none\n", "a later shell sees the change");
                let after = ctx.send(ctx.get("/system/env")).await?.json()?;
                ensure!(after["env"]["APP_SYS_MARK"] == "on", "{after}");
                Ok(())
            },
        },
        case! {
            id: "system/env/003",
            spec: "system: the variable guards apply to `POST /system/env`, to set and unset names alike, and nothing changes when one refuses: `PATH` or a `process.deny_env` name is 403 `env_var_denied`, a malformed name or a name both set and unset 400 `env_invalid`, an unknown member 400 `invalid_request`.",
            profile: &profiles::SYSTEM,
            tags: [],
            endpoints: ["system_env_set"],
            codes: ["env_var_denied", "env_invalid", "invalid_request"],
            run: |ctx| async move {
                for (body, status, code) in [
                    (json!({"set": {"PATH": "/tmp/evil"}}), 403, "env_var_denied"),
                    (json!({"set": {"APP_SYS_OK": "1", "BLOCKED_X": "1"}}), 403, "env_var_denied"),
                    (json!({"unset": ["HOME"]}), 403, "env_var_denied"),
                    (json!({"set": {"LD_PRELOAD": "/tmp/x.so"}}), 403, "env_var_denied"),
                    (json!({"set": {"A=B": "1"}}), 400, "env_invalid"),
                    (json!({"set": {"APP_SYS_BOTH": "1"}, "unset": ["APP_SYS_BOTH"]}), 400, "env_invalid"),
                    (json!({"add": {"X": "1"}}), 400, "invalid_request"),
                ] {
                    let resp = ctx.send(ctx.post_json("/system/env", &body)).await?;
                    resp.expect_error(status, code).map_err(|e| anyhow::anyhow!("{body}: {e}"))?;
                }
                let resp = ctx.send(ctx.post_json("/system/env", &json!({"set": {"PATH": "/tmp/evil"}}))).await?;
                ctx.snapshot("system__env__denied", &resp.json()?)?;
                let env = ctx.send(ctx.get("/system/env")).await?.json()?;
                ensure!(env["env"].get("APP_SYS_OK").is_none(), "a refused change changes nothing: {env}");
                ensure!(env["env"]["PATH"] != "/tmp/evil", "{env}");
                Ok(())
            },
        },
    ]
}
