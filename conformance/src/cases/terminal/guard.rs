//! The guards of POST /pty (issue 12, spec 7.1): the working directory under the path
//! guard, the variables under the variable rules, the shell under the command and process
//! guards; and the shell's environment is exactly the one given.

use super::support::{
    ALICE, TERMINAL, TYPIST, attach, create, read_until, refused, s, terminal, type_line, work,
};
use crate::{Case, case};
use anyhow::ensure;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "terminal/guard/001",
            spec: "`cwd` outside `paths.allow` is 403 `path_not_allowed` naming `cwd`, and no shell starts.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_create"],
            codes: ["path_not_allowed"],
            run: |ctx| async move {
                let outside = ctx.dir().map(|d| s(&d.join("elsewhere"))).unwrap_or_default();
                std::fs::create_dir_all(&outside)?;
                for cwd in [outside.as_str(), "/", "/etc"] {
                    // Typist's: the other cases start terminals as alice meanwhile.
                    let resp = create(&ctx, TYPIST, &json!({"cwd": cwd})).await?;
                    refused(&resp, 403, "path_not_allowed", Some("cwd"))?;
                }
                let listed = super::support::call(&ctx, TYPIST, reqwest::Method::GET, "/pty", None).await?;
                ensure!(listed.json()?["ptys"] == json!([]), "nothing started: {}", listed.text());
                Ok(())
            },
        },
        case! {
            id: "terminal/guard/002",
            spec: "`env` is guarded: a variable the built-in rule or `process.deny_env` refuses is 403 `env_var_denied`; one outside `process.allow_env` is 403 `env_var_not_allowed`; a malformed name is 400 `env_invalid`; each names `env`.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_create"],
            codes: ["env_var_denied", "env_var_not_allowed", "env_invalid"],
            run: |ctx| async move {
                let cwd = s(&work(&ctx)?);
                for (env, status, code) in [
                    (json!({"LD_PRELOAD": "/tmp/x.so"}), 403, "env_var_denied"),
                    (json!({"SECRET_KEY": "k"}), 403, "env_var_denied"),
                    (json!({"OTHER": "1"}), 403, "env_var_not_allowed"),
                    (json!({"A=B": "1"}), 400, "env_invalid"),
                ] {
                    let resp = create(&ctx, ALICE, &json!({"cwd": cwd, "env": env})).await?;
                    refused(&resp, status, code, Some("env"))?;
                }
                Ok(())
            },
        },
        case! {
            id: "terminal/guard/003",
            spec: "The shell program passes the command and process guards: outside `allow_commands` is 403 `command_not_allowed`; a session leaver (`setsid`) is 403 `process_denied`; an allow entry whose scopes the caller lacks is 403 `scope_required`.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_create"],
            codes: ["command_not_allowed", "process_denied", "scope_required"],
            run: |ctx| async move {
                let cwd = s(&work(&ctx)?);
                let resp = create(&ctx, ALICE, &json!({"cwd": cwd, "shell": "/usr/bin/tail"})).await?;
                refused(&resp, 403, "command_not_allowed", None)?;
                let resp = create(&ctx, ALICE, &json!({"cwd": cwd, "shell": "/usr/bin/setsid"})).await?;
                refused(&resp, 403, "process_denied", None)?;
                let resp = create(&ctx, TYPIST, &json!({"cwd": cwd, "shell": "/bin/cat"})).await?;
                refused(&resp, 403, "scope_required", None)?;
                // The same entry with its scope held starts.
                let resp = create(&ctx, ALICE, &json!({"cwd": cwd, "shell": "/bin/cat"})).await?;
                resp.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "terminal/guard/004",
            spec: "The shell starts with exactly the operator's child base environment and the caller's `env` (plus `TERM`): nothing else of the server's environment reaches it.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_create", "pty_connect"],
            codes: [],
            run: |ctx| async move {
                let record = terminal(&ctx, json!({"shell": "/bin/sh", "env": {"APP_GREETING": "hello-env"}})).await?;
                let id = record["id"].as_str().unwrap_or_default();
                let mut ws = attach(&ctx, id, ALICE).await?;
                type_line(&mut ws, "printf '<%s|%s|%s>\\n' \"${APP_GREETING:-none}\" \"${TERMINAL_CANARY:-unset}\" \"${TERM:-noterm}\"").await?;
                let read = read_until(&mut ws, b"|unset|").await?;
                let text = read.text();
                ensure!(text.contains("<hello-env|unset|"), "{text}");
                ensure!(!text.contains("<hello-env|unset|noterm>"), "TERM is set: {text}");
                Ok(())
            },
        },
    ]
}
