//! POST /pty `{cols?, rows?, shell?, cwd?, env?}` (issue 12, wire contract `pty_create`).

use super::support::{
    ALICE, TERMINAL, attach, create, read_until, refused, s, stable, terminal, type_line, work,
};
use crate::{Case, case};
use anyhow::ensure;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "terminal/create/001",
            spec: "pty_create: POST /pty answers 200 `{id, pid, cols, rows, shell, cwd, created_at, clients}`; defaults 80 × 24 and `/bin/bash` (`/bin/sh` where bash is absent); the shell runs in `cwd` on a terminal of that size.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_create", "pty_connect"],
            codes: [],
            run: |ctx| async move {
                let record = terminal(&ctx, json!({})).await?;
                let bash = std::path::Path::new("/bin/bash").is_file();
                ensure!(record["shell"] == if bash { "/bin/bash" } else { "/bin/sh" }, "{record}");
                ensure!(record["cols"] == 80 && record["rows"] == 24 && record["clients"] == 0, "{record}");
                ensure!(record["cwd"] == s(&work(&ctx)?), "{record}");
                ctx.snapshot("terminal__record", &stable(&record)?)?;
                let id = record["id"].as_str().unwrap_or_default();
                let mut ws = attach(&ctx, id, ALICE).await?;
                type_line(&mut ws, "printf '[%s|%s]\\n' \"$(pwd)\" \"$(stty size)\"").await?;
                let want = format!("[{}|24 80]", s(&work(&ctx)?));
                read_until(&mut ws, want.as_bytes()).await?;
                let sized = terminal(&ctx, json!({"cols": 1000, "rows": 1, "shell": "/bin/sh"})).await?;
                ensure!(sized["cols"] == 1000 && sized["rows"] == 1 && sized["shell"] == "/bin/sh", "{sized}");
                Ok(())
            },
        },
        case! {
            id: "terminal/create/002",
            spec: "cols and rows are within 1..=1000, else 400 `invalid_request` naming the member in `param`; a member that is not in the contract, or of the wrong type, is 400 `invalid_request` too.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let cwd = s(&work(&ctx)?);
                for (body, param) in [
                    (json!({"cwd": cwd, "cols": 0}), "cols"),
                    (json!({"cwd": cwd, "cols": 1001}), "cols"),
                    (json!({"cwd": cwd, "rows": 0}), "rows"),
                    (json!({"cwd": cwd, "rows": 5000}), "rows"),
                    (json!({"cwd": cwd, "cols": "wide"}), "cols"),
                    (json!({"cwd": cwd, "rows": -3}), "rows"),
                    (json!({"cwd": cwd, "env": ["A=1"]}), "env"),
                    (json!({"cwd": cwd, "shell": ""}), "shell"),
                ] {
                    let body_text = body.to_string();
                    let err = refused(&create(&ctx, ALICE, &body).await?, 400, "invalid_request", Some(param))
                        .map_err(|e| e.context(body_text))?;
                    if param == "cols" && body["cols"] == 0 {
                        ctx.snapshot("terminal__invalid_size", &err)?;
                    }
                }
                let err = create(&ctx, ALICE, &json!({"cwd": cwd, "command": "ls"})).await?.expect_error(400, "invalid_request")?;
                ensure!(err.to_string().contains("command"), "names the member: {err}");
                Ok(())
            },
        },
    ]
}
