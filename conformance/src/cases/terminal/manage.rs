//! The routes on a terminal by id (issue 12): `pty_list`, `pty_get`, `pty_resize`,
//! `pty_kill`; an id that is not the caller's is 404 on each, the WebSocket included.

use super::support::{
    ALICE, BOB, TERMINAL, attach, call, gone, id_of, number_after, pid_of, read_to_close,
    read_until, refused, running, stable, terminal, type_line,
};
use crate::{Case, case};
use anyhow::ensure;
use futures::SinkExt;
use reqwest::Method;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "terminal/list/001",
            spec: "pty_list: GET /pty answers `{ptys: [record...]}`, the caller's terminals oldest first; pty_get: GET /pty/{id} answers the record, `clients` counting the sockets attached now.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_list", "pty_get", "pty_connect"],
            codes: [],
            run: |ctx| async move {
                let first = terminal(&ctx, json!({})).await?;
                let second = terminal(&ctx, json!({"cols": 90})).await?;
                let listed = call(&ctx, BOB, Method::GET, "/pty", None).await?;
                listed.expect_status(200)?;
                ensure!(listed.json()?["ptys"] == json!([]), "bob sees none of alice's: {}", listed.text());
                let listed = call(&ctx, ALICE, Method::GET, "/pty", None).await?;
                listed.expect_status(200)?;
                let ptys = listed.json()?["ptys"].as_array().cloned().unwrap_or_default();
                let ids: Vec<String> = ptys.iter().map(id_of).collect();
                let at = |id: &str| ids.iter().position(|i| i == id);
                ensure!(at(&id_of(&first)).is_some() && at(&id_of(&first)) < at(&id_of(&second)), "oldest first: {ids:?}");
                let only = json!({"ptys": [stable(ptys.iter().find(|p| id_of(p) == id_of(&second)).unwrap_or(&json!({})))?]});
                ctx.snapshot("terminal__list", &only)?;
                let id = id_of(&first);
                let _a = attach(&ctx, &id, ALICE).await?;
                let _b = attach(&ctx, &id, ALICE).await?;
                let got = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}"), None).await?;
                got.expect_status(200)?;
                let record = got.json()?;
                ensure!(record["clients"] == 2 && record["pid"] == first["pid"] && record["created_at"] == first["created_at"], "{record}");
                ctx.snapshot("terminal__get", &stable(&record)?)?;
                Ok(())
            },
        },
        case! {
            id: "terminal/get/001",
            spec: "An id of no terminal of the caller's (another identity's, or none at all) is 404 `not_found` naming the terminal, on every route: get, resize, kill and connect.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_get", "pty_resize", "pty_kill", "pty_connect"],
            codes: ["not_found"],
            run: |ctx| async move {
                let theirs = id_of(&terminal(&ctx, json!({})).await?);
                for id in [theirs.as_str(), "pty_000000000000000000000000", "nonsense"] {
                    let who = if id == theirs { BOB } else { ALICE };
                    for (method, path, body) in [
                        (Method::GET, format!("/pty/{id}"), None),
                        (Method::POST, format!("/pty/{id}/resize"), Some(json!({"cols": 10, "rows": 10}))),
                        (Method::DELETE, format!("/pty/{id}"), None),
                    ] {
                        let resp = call(&ctx, who, method.clone(), &path, body.as_ref()).await?;
                        let err = refused(&resp, 404, "not_found", None)?;
                        ensure!(err["error"].as_str().is_some_and(|m| m.contains(id)), "names {id}: {err}");
                        if id == "pty_000000000000000000000000" && method == Method::GET {
                            ctx.snapshot("terminal__not_found", &err)?;
                        }
                    }
                    let bearer = format!("Bearer {who}");
                    let resp = ctx.ws_terminal_refused(&format!("/pty/{id}/connect"), &[("authorization", bearer.as_str())]).await?;
                    refused(&resp, 404, "not_found", None)?;
                }
                // Bob's attempts changed nothing.
                let got = call(&ctx, ALICE, Method::GET, &format!("/pty/{theirs}"), None).await?;
                got.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "terminal/resize/001",
            spec: "pty_resize: POST /pty/{id}/resize `{cols, rows}` sets the window size the shell sees and answers the record; on the socket a text frame `{\"type\":\"resize\",\"cols\":C,\"rows\":R}` does the same.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_resize", "pty_connect"],
            codes: [],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let mut ws = attach(&ctx, &id, ALICE).await?;
                let resp = call(&ctx, ALICE, Method::POST, &format!("/pty/{id}/resize"), Some(&json!({"cols": 132, "rows": 43}))).await?;
                resp.expect_status(200)?;
                let record = resp.json()?;
                ensure!(record["cols"] == 132 && record["rows"] == 43, "{record}");
                ctx.snapshot("terminal__resized", &stable(&record)?)?;
                type_line(&mut ws, "printf 'size=%s=%s\\n' \"$(stty size | tr ' ' x)\" end").await?;
                read_until(&mut ws, b"size=43x132=end").await?;
                ws.send(Message::Text(r#"{"type":"resize","cols":57,"rows":19}"#.into())).await?;
                type_line(&mut ws, "printf 'size=%s=%s\\n' \"$(stty size | tr ' ' x)\" again").await?;
                read_until(&mut ws, b"size=19x57=again").await?;
                let got = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}"), None).await?.json()?;
                ensure!(got["cols"] == 57 && got["rows"] == 19, "{got}");
                Ok(())
            },
        },
        case! {
            id: "terminal/resize/002",
            spec: "A resize with a side outside 1..=1000, or a member missing or unknown, is 400 `invalid_request` naming the member; the size is unchanged.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_resize"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let path = format!("/pty/{id}/resize");
                for (body, param) in [
                    (json!({"cols": 0, "rows": 10}), Some("cols")),
                    (json!({"cols": 10, "rows": 1001}), Some("rows")),
                    (json!({"cols": 10}), None),
                    (json!({"cols": 10, "rows": 10, "x": 1}), None),
                ] {
                    let resp = call(&ctx, ALICE, Method::POST, &path, Some(&body)).await?;
                    refused(&resp, 400, "invalid_request", param).map_err(|e| e.context(body.to_string()))?;
                }
                let got = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}"), None).await?.json()?;
                ensure!(got["cols"] == 80 && got["rows"] == 24, "{got}");
                Ok(())
            },
        },
        case! {
            id: "terminal/kill/001",
            spec: "pty_kill: DELETE /pty/{id} ends the shell and everything it started (a job ignoring HUP and TERM included), closes attached sockets, answers the final record, and the id is gone; no process is left behind.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_kill", "pty_connect"],
            codes: [],
            run: |ctx| async move {
                let record = terminal(&ctx, json!({})).await?;
                let (id, shell) = (id_of(&record), pid_of(&record)?);
                let mut ws = attach(&ctx, &id, ALICE).await?;
                type_line(&mut ws, "(trap '' HUP TERM; exec sleep 1000) & printf 'job=%s=%s\\n' $! end").await?;
                let read = read_until(&mut ws, b"=end").await?;
                let job = number_after(&read, "job")?;
                ensure!(running(job) && running(shell), "both run before the kill");
                let resp = call(&ctx, ALICE, Method::DELETE, &format!("/pty/{id}"), None).await?;
                resp.expect_status(200)?;
                let last = resp.json()?;
                ensure!(id_of(&last) == id && last["clients"] == 0, "{last}");
                ctx.snapshot("terminal__killed", &stable(&last)?)?;
                gone(shell).await?;
                gone(job).await?;
                let closed = read_to_close(&mut ws).await?;
                ensure!(closed.close.as_ref().is_some_and(|(code, _)| *code == 1000), "{:?}", closed.close);
                let after = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}"), None).await?;
                refused(&after, 404, "not_found", None)?;
                Ok(())
            },
        },
        case! {
            id: "terminal/kill/002",
            spec: "pty_kill: a process the shell started that left the shell's session (a fork, then Python's `os.setsid()`, as a daemon does) ends with the terminal too; a session kill alone misses it.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_kill", "pty_connect"],
            codes: [],
            run: |ctx| async move {
                let record = terminal(&ctx, json!({})).await?;
                let id = id_of(&record);
                let mut ws = attach(&ctx, &id, ALICE).await?;
                type_line(&mut ws, "python3 -c 'import os,time; os.fork() and os._exit(0); os.setsid(); print(\"escaped=%d=%s\" % (os.getpid(), \"end\"), flush=True); time.sleep(303)' &").await?;
                let read = read_until(&mut ws, b"=end").await?;
                let escaped = number_after(&read, "escaped")?;
                ensure!(running(escaped), "the escaped process runs before the kill");
                call(&ctx, ALICE, Method::DELETE, &format!("/pty/{id}"), None).await?.expect_status(200)?;
                gone(escaped).await?;
                Ok(())
            },
        },
    ]
}
