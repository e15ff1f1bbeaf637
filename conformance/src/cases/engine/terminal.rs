//! The terminal WebSocket (spec 4.4): binary frames carry bytes both ways, the
//! one text frame is `{"type":"resize","cols","rows"}`; the socket closes 1000
//! when the shell exits (the reason `{"exit_code":N}`), 1003 for any other text
//! frame, 1007 for a bad size. `args`, `env` and `cwd` shape the shell.

use super::support::{expect_error, get, own, q, sandbox, sb, sh};
use crate::{Case, Ctx, WsStream, case, profiles};
use anyhow::{anyhow, bail, ensure};
use futures::{SinkExt as _, StreamExt as _};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(10);

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/terminal/001",
            spec: "GET .../terminal?cols=&rows=&shell= upgrades to a WebSocket running the shell at that size: typed bytes go in binary frames, output comes in binary frames, a `resize` text frame resizes it, the shell leads its own session and process group (by the sandbox's numbers), and the socket closes 1000 when the shell exits (`exit`: the reason is `{\"exit_code\":0}`).",
            profile: &profiles::LOCAL,
            tags: ["feature:terminal"],
            endpoints: ["terminal"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let mut ws = open(&ctx, &sb(&id, "/terminal?cols=100&rows=30&shell=/bin/sh")).await?;
                type_line(&mut ws, "printf 'calc=%s=end\\n' $((6*7))").await?;
                read_until(&mut ws, b"calc=42=end").await?;
                type_line(&mut ws, "printf 'size=%s=end\\n' \"$(stty size)\"").await?;
                read_until(&mut ws, b"size=30 100=end").await?;
                ws.send(Message::text(r#"{"type":"resize","cols":120,"rows":40}"#)).await?;
                type_line(&mut ws, "printf 'resized=%s=end\\n' \"$(stty size)\"").await?;
                read_until(&mut ws, b"resized=40 120=end").await?;
                // The shell leads its session and its group, as the sandbox numbers them (a
                // session led from outside an isolated sandbox shows as 0 inside).
                // (On failure the wait's message shows the three numbers.)
                type_line(&mut ws, "set -- $(cut -d' ' -f1,5,6 /proc/$$/stat); if [ $1 != 0 ] && [ $1 = $2 ] && [ $2 = $3 ]; then printf 'lead=%s=end\\n' yes; else printf 'lead=%s=end\\n' \"$*\"; fi").await?;
                read_until(&mut ws, b"lead=yes=end").await?;
                // A job in the foreground, then the end.
                type_line(&mut ws, "ls / >/dev/null; echo listed=$?=end").await?;
                read_until(&mut ws, b"listed=0=end").await?;
                type_line(&mut ws, "exit").await?;
                let (code, reason) = read_to_close(&mut ws).await?;
                ensure!(code == 1000, "the shell's exit closes with 1000, not {code}");
                ensure!(reason == r#"{"exit_code":0}"#, "`exit` ends the shell with status 0: {reason:?}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/terminal/002",
            spec: "Without a query the terminal is 80 columns by 24 rows running `/bin/bash`.",
            profile: &profiles::LOCAL,
            tags: ["feature:terminal"],
            endpoints: ["terminal"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let mut ws = open(&ctx, &sb(&id, "/terminal")).await?;
                type_line(&mut ws, "printf 'size=%s=end\\n' \"$(stty size)\"").await?;
                read_until(&mut ws, b"size=24 80=end").await?;
                type_line(&mut ws, "printf 'bash=%s=end\\n' \"${BASH_VERSION:+yes}\"").await?;
                read_until(&mut ws, b"bash=yes=end").await?;
                type_line(&mut ws, "exit").await?;
                read_to_close(&mut ws).await?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/terminal/003",
            spec: "A text frame that is not a resize closes the socket with 1003; a resize to a size out of range closes it with 1007.",
            profile: &profiles::LOCAL,
            tags: ["feature:terminal"],
            endpoints: ["terminal"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                for (frame, want) in [("ls\n", 1003), (r#"{"type":"paste","data":"x"}"#, 1003), (r#"{"type":"resize","cols":0,"rows":0}"#, 1007), (r#"{"type":"resize","cols":100000,"rows":24}"#, 1007)] {
                    let mut ws = open(&ctx, &sb(&id, "/terminal?shell=/bin/sh")).await?;
                    type_line(&mut ws, "printf 'ready=%s=end\\n' 1").await?;
                    read_until(&mut ws, b"ready=1=end").await?;
                    ws.send(Message::text(frame)).await?;
                    let (code, _) = read_to_close(&mut ws).await?;
                    ensure!(code == want, "text frame {frame:?} closes with {want}, not {code}");
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/terminal/004",
            spec: "A terminal that cannot start is refused before the upgrade: a size out of range or an unknown parameter is 400 `E4001`, a request that is not a WebSocket upgrade 400 `E4001`, an unknown sandbox 404 `E2009`.",
            profile: &profiles::LOCAL,
            tags: ["feature:terminal"],
            endpoints: ["terminal"],
            codes: ["E4001", "E2009"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let owned = headers(&ctx)?;
                let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
                for query in ["?cols=0", "?rows=100000", "?cols=wide", "?colour=red"] {
                    let resp = ctx.ws_refused(&sb(&id, &format!("/terminal{query}")), &pairs).await?;
                    expect_error(&resp, 400, "E4001").map_err(|e| anyhow!("{query}: {e:#}"))?;
                }
                let plain = get(&ctx, &sb(&id, "/terminal")).await?;
                expect_error(&plain, 400, "E4001")?;
                let resp = ctx.ws_refused(&sb("sbx-nobody-made-this", "/terminal"), &pairs).await?;
                expect_error(&resp, 404, "E2009")?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/terminal/005",
            spec: "`user` picks who runs the shell, as for a command: in an isolated sandbox `user` (uid 1000) by default and uid 0 with `user=root`; any other user is 400 `E4001` before the upgrade.",
            profile: &profiles::LOCAL,
            tags: ["feature:terminal", "feature:isolation"],
            endpoints: ["terminal"],
            codes: ["E4001"],
            run: |ctx| async move {
                let record = super::support::create(&ctx, &serde_json::json!({"timeout": 300, "isolation": "namespaces"})).await?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                for (query, uid) in [("", "1000"), ("&user=user", "1000"), ("&user=root", "0")] {
                    let mut ws = open(&ctx, &sb(&id, &format!("/terminal?shell=/bin/sh{query}"))).await?;
                    type_line(&mut ws, "printf 'uid=%s=end\\n' \"$(id -u)\"").await?;
                    read_until(&mut ws, format!("uid={uid}=end").as_bytes()).await.map_err(|e| anyhow!("{query:?}: {e:#}"))?;
                    type_line(&mut ws, "exit").await?;
                    read_to_close(&mut ws).await?;
                }
                let owned = headers(&ctx)?;
                let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let resp = ctx.ws_refused(&sb(&id, "/terminal?user=daemon"), &pairs).await?;
                let body = expect_error(&resp, 400, "E4001")?;
                ensure!(body["error"]["message"].as_str().is_some_and(|m| m.contains("`user`")), "the error names `user`: {body}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/terminal/006",
            spec: "`args` (a JSON array of strings) and `env` (a JSON object of strings) in the query are the shell's arguments and added variables, `cwd` its working directory (relative to the sandbox's); the close reason is `{\"exit_code\":N}` with the shell's exit status. JSON that is not of that shape, an argument holding a NUL byte, a variable name that is not one, or a `cwd` that is not a directory of the sandbox is refused before the upgrade: 400 `E4001`, 404 `E2004`, and 400 `E4005` for one out of the sandbox.",
            profile: &profiles::LOCAL,
            tags: ["feature:terminal"],
            endpoints: ["terminal"],
            codes: ["E4001", "E2004", "E4005"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                sh(&ctx, &id, "mkdir -p work/sub").await?;
                let script = r#"printf 'one=%s mark=%s wd=%s=end\n' "$1" "$MARK" "$(pwd)"; exit 5"#;
                let args = serde_json::to_string(&["-c", script, "sh", "first"])?;
                let query = format!("/terminal?shell=/bin/sh&args={}&env={}&cwd=work/sub", q(&args), q(r#"{"MARK":"two"}"#));
                let mut ws = open(&ctx, &sb(&id, &query)).await?;
                let (output, (code, reason)) = read_all(&mut ws).await?;
                let output = String::from_utf8_lossy(&output);
                ensure!(output.contains("one=first mark=two wd=") && output.contains("/work/sub=end"), "the shell's arguments, variables and directory: {output:?}");
                ensure!(code == 1000 && reason == r#"{"exit_code":5}"#, "`exit 5` closes 1000 with its status, not {code} {reason:?}");

                let owned = headers(&ctx)?;
                let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
                for (query, status, code) in [
                    (format!("args={}", q("-l")), 400, "E4001"),
                    (format!("args={}", q(r#"{"a":1}"#)), 400, "E4001"),
                    (format!("args={}", q("[1]")), 400, "E4001"),
                    (format!("args={}", q(r#"["a\u0000b"]"#)), 400, "E4001"),
                    (format!("env={}", q(r#"["MARK"]"#)), 400, "E4001"),
                    (format!("env={}", q(r#"{"1MARK":"x"}"#)), 400, "E4001"),
                    (format!("env={}", q(r#"{"A B":"x"}"#)), 400, "E4001"),
                    ("cwd=nowhere".to_owned(), 404, "E2004"),
                    // The attack: a working directory out of the sandbox.
                    (format!("cwd={}", q("../../etc")), 400, "E4005"),
                ] {
                    let resp = ctx.ws_refused(&sb(&id, &format!("/terminal?shell=/bin/sh&{query}")), &pairs).await?;
                    expect_error(&resp, status, code).map_err(|e| anyhow!("{query}: {e:#}"))?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/terminal/007",
            spec: "A terminal's PTY comes from the sandbox's own `/dev/pts`, and nothing the sandbox plants there reaches the host: with `/dev/pts` replaced by root inside (a tmpfs whose `ptmx` is a symbolic link to a host FIFO), opening a terminal is refused with 400 `E4006` and the engine never opens the host's file.",
            profile: &profiles::LOCAL,
            tags: ["feature:terminal", "feature:isolation"],
            endpoints: ["terminal"],
            codes: ["E4006"],
            run: |ctx| async move {
                let outside = super::support::outside_dir()?;
                let fifo = outside.path().join("canary.fifo");
                let made = std::process::Command::new("mkfifo").arg(&fifo).status()?;
                ensure!(made.success(), "mkfifo {}", fifo.display());
                // A reader that wakes only when something opens the FIFO for writing.
                let reader = {
                    let fifo = fifo.clone();
                    tokio::task::spawn_blocking(move || std::fs::File::open(&fifo).map(|_| ()))
                };
                let record = super::support::create(&ctx, &serde_json::json!({"timeout": 300, "isolation": "namespaces"})).await?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                let plant = format!("umount -l /dev/pts && mount -t tmpfs planted /dev/pts && ln -s {} /dev/pts/ptmx && echo planted", fifo.display());
                let planted = super::support::run(&ctx, &id, &serde_json::json!({"cmd": plant, "user": "root"})).await?;
                ensure!(planted["stdout"] == "planted\n", "root inside replaces its /dev/pts: {planted}");

                let owned = headers(&ctx)?;
                let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let resp = ctx.ws_refused(&sb(&id, "/terminal?shell=/bin/sh"), &pairs).await?;
                let refused = expect_error(&resp, 400, "E4006");
                tokio::time::sleep(Duration::from_millis(300)).await;
                let opened = reader.is_finished();
                // Release the reader if nothing did.
                if !opened {
                    let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
                }
                let _ = reader.await;
                ensure!(!opened, "the engine opened the host's {} through the sandbox's /dev/pts", fifo.display());
                refused?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}

/// The token and the profile's connection, as handshake headers.
fn headers(ctx: &Ctx) -> anyhow::Result<Vec<(&'static str, String)>> {
    let token = ctx
        .token()
        .ok_or_else(|| anyhow!("the engine's token is unknown"))?;
    let mut out = vec![("authorization", format!("Bearer {token}"))];
    if let Some(conn) = own(ctx) {
        out.push(("x-svc-connection", conn));
    }
    Ok(out)
}

async fn open(ctx: &Ctx, path: &str) -> anyhow::Result<WsStream> {
    let headers = headers(ctx)?;
    let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ctx.ws_with_headers(path, &pairs).await
}

async fn type_line(ws: &mut WsStream, line: &str) -> anyhow::Result<()> {
    ws.send(Message::binary(format!("{line}\n").into_bytes()))
        .await?;
    Ok(())
}

/// Reads output until `needle` shows (the typed line's echo cannot match it).
async fn read_until(ws: &mut WsStream, needle: &[u8]) -> anyhow::Result<()> {
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        loop {
            if seen.windows(needle.len()).any(|w| w == needle) {
                return Ok(());
            }
            match next(ws).await? {
                Ok(bytes) => seen.extend_from_slice(&bytes),
                Err((code, reason)) => bail!("closed ({code} {reason}) before the output"),
            }
        }
    })
    .await
    .map_err(|_| {
        anyhow!(
            "no {:?} within {WAIT:?}; read {:?}",
            String::from_utf8_lossy(needle),
            String::from_utf8_lossy(&seen)
        )
    })?
}

/// Reads to the close frame: its code and reason.
async fn read_to_close(ws: &mut WsStream) -> anyhow::Result<(u16, String)> {
    tokio::time::timeout(WAIT, async {
        loop {
            if let Err(close) = next(ws).await? {
                return Ok(close);
            }
        }
    })
    .await
    .map_err(|_| anyhow!("no close frame within {WAIT:?}"))?
}

/// Every output to the close frame, and the close frame's code and reason.
async fn read_all(ws: &mut WsStream) -> anyhow::Result<(Vec<u8>, (u16, String))> {
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        loop {
            match next(ws).await? {
                Ok(bytes) => seen.extend_from_slice(&bytes),
                Err(close) => return Ok((seen, close)),
            }
        }
    })
    .await
    .map_err(|_| anyhow!("no close frame within {WAIT:?}"))?
}

/// The next output (binary) or the close frame; a text frame from the engine is
/// a failure (output is bytes).
async fn next(ws: &mut WsStream) -> anyhow::Result<Result<Vec<u8>, (u16, String)>> {
    loop {
        match ws.next().await {
            None => bail!("the socket ended without a close frame"),
            Some(Err(e)) => bail!("reading the socket: {e}"),
            Some(Ok(Message::Binary(b))) => return Ok(Ok(b.to_vec())),
            Some(Ok(Message::Text(t))) => bail!("the engine sent a text frame: {t}"),
            Some(Ok(Message::Close(frame))) => {
                return Ok(Err(frame
                    .map(|f| (u16::from(f.code), f.reason.to_string()))
                    .unwrap_or((1005, String::new()))));
            }
            Some(Ok(_)) => continue,
        }
    }
}
