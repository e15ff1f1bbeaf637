//! A sandbox's life (spec 3, 8): its lifetime set at create and moved by the
//! timeout route, enforced with everything in it, and pause that really stops its
//! processes until resume.

use super::support::{
    Left, check_record, create, epoch, expect_error, get, now, post, processes, sb, sh, snapshot,
};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context as _, anyhow, ensure};
use serde_json::json;
use std::time::Duration;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/lifecycle/001",
            spec: "POST .../timeout `{timeout}` sets the sandbox's remaining lifetime, counted from now, and answers the record with the new `expires_at`; a timeout outside 1-86400, a missing one or an unknown field is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:timeout"],
            endpoints: ["sandboxes_timeout"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = id_of(&create(&ctx, &json!({"timeout": 60})).await?)?;
                let resp = post(&ctx, &sb(&id, "/timeout"), &json!({"timeout": 900})).await?;
                resp.expect_status(200)?;
                let record = resp.json()?;
                check_record(&record)?;
                let left = epoch(record["expires_at"].as_str().unwrap_or_default())? - now();
                ensure!((897..=901).contains(&left), "the sandbox now ends 900 s from now, not {left} s: {record}");
                let info = get(&ctx, &sb(&id, "")).await?.json()?;
                ensure!(info["expires_at"] == record["expires_at"], "info shows the new lifetime: {info}");
                for bad in [json!({"timeout": 0}), json!({"timeout": 86_401}), json!({}), json!({"timeout": 60, "extra": 1}), json!({"timeout": "60"})] {
                    expect_error(&post(&ctx, &sb(&id, "/timeout"), &bad).await?, 400, "E4001").with_context(|| format!("body {bad}"))?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/lifecycle/002",
            spec: "At the end of its lifetime the sandbox and everything in it is gone: shortened to 1 s by the timeout route, it is 404 `E2009` soon after and a process it left in the background has ended.",
            profile: &profiles::LOCAL,
            tags: ["feature:timeout", "feature:commands"],
            endpoints: ["sandboxes_timeout"],
            codes: ["E2009"],
            run: |ctx| async move {
                let id = id_of(&create(&ctx, &json!({"timeout": 300})).await?)?;
                let bg = background_sleep(&ctx, &id).await?;
                post(&ctx, &sb(&id, "/timeout"), &json!({"timeout": 1})).await?.expect_status(200)?;
                expired(&ctx, &id, bg).await
            },
        },
        case! {
            id: "engine/lifecycle/003",
            spec: "The lifetime given at create is enforced: a sandbox created with `timeout: 3` is gone, with its processes, a few seconds later.",
            profile: &profiles::LOCAL,
            tags: ["feature:commands"],
            endpoints: ["sandboxes_create", "sandboxes_info"],
            codes: ["E2009"],
            run: |ctx| async move {
                let id = id_of(&create(&ctx, &json!({"timeout": 3})).await?)?;
                let bg = background_sleep(&ctx, &id).await?;
                expired(&ctx, &id, bg).await
            },
        },
        case! {
            id: "engine/lifecycle/004",
            spec: "POST .../pause stops every process of the sandbox (one left in the background too) and answers the record, status `paused`; `running` is then false, the processes are listed `stopped`, and a command is 400 `E4003`; POST .../resume continues them, status `running` again.",
            profile: &profiles::LOCAL,
            tags: ["feature:pause", "feature:commands", "feature:processes"],
            endpoints: ["sandboxes_pause", "sandboxes_resume", "sandboxes_running", "commands_run"],
            codes: ["E4003"],
            run: |ctx| async move {
                let id = id_of(&create(&ctx, &json!({"timeout": 300})).await?)?;
                // A counter the runner reads through the files API (which works while paused): it
                // only moves while the sandbox runs, whatever the provider pauses with. The loop's
                // script holds a word of its own, by which the runner finds it on the machine.
                // Each value is written aside and renamed over `.counter`: a read opens one whole
                // file, never one the loop is truncating (a file that shrinks under a read ends
                // the answer early, as it must, and that is not what this case is about).
                let word = super::support::sleep_word();
                let out = sh(&ctx, &id, &format!("(: {word}; i=0; while :; do i=$((i+1)); echo $i > .counter.next; mv .counter.next .counter; sleep 0.05; done) >/dev/null 2>&1 & echo $!")).await?;
                let pid: u64 = out.trim().parse().with_context(|| format!("`... & echo $!` printed {out:?}"))?;
                let bg = super::support::Left { pid, word };
                let read = || {
                    let (ctx, id) = (ctx.clone(), id.clone());
                    async move {
                        let resp = get(&ctx, &sb(&id, "/files/content?path=.counter")).await?;
                        Ok::<u64, anyhow::Error>(std::str::from_utf8(&resp.body).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0))
                    }
                };
                super::support::eventually(Duration::from_secs(5), "the counter runs", || async { Ok((read().await? > 2).then_some(())) }).await?;

                let resp = post(&ctx, &sb(&id, "/pause"), &json!({})).await?;
                resp.expect_status(200)?;
                let paused = resp.json()?;
                check_record(&paused)?;
                ensure!(paused["status"] == "paused", "{paused}");
                snapshot(&ctx, "engine__lifecycle__paused", &paused)?;
                ensure!(get(&ctx, &sb(&id, "/running")).await?.json()? == json!({"running": false}), "a paused sandbox is not running");
                ensure!(get(&ctx, &sb(&id, "")).await?.json()?["status"] == "paused", "info says paused");
                tokio::time::sleep(Duration::from_millis(200)).await;
                let at_pause = read().await?;
                tokio::time::sleep(Duration::from_millis(700)).await;
                let later = read().await?;
                ensure!(later == at_pause, "the background counter moved while paused ({at_pause} -> {later})");
                ensure!(bg.alive(), "paused is not killed");
                let listed = processes(&ctx, &id).await?;
                let shell = listed.iter().find(|p| p["pid"] == bg.pid).ok_or_else(|| anyhow!("the background loop is listed: {listed:?}"))?;
                ensure!(shell["state"] == "stopped", "a paused process is listed `stopped`: {shell}");
                let refused = post(&ctx, &sb(&id, "/commands/run"), &json!({"cmd": "true"})).await?;
                let body = expect_error(&refused, 400, "E4003")?;
                super::support::error_snapshot(&ctx, "engine__lifecycle__not_running", &body, &[(&id, "[sandbox_id]")])?;

                let resp = post(&ctx, &sb(&id, "/resume"), &json!({})).await?;
                resp.expect_status(200)?;
                let resumed = resp.json()?;
                ensure!(resumed["status"] == "running", "{resumed}");
                super::support::eventually(Duration::from_secs(5), "the counter moves again", || async { Ok((read().await? > at_pause).then_some(())) }).await?;
                ensure!(sh(&ctx, &id, "echo back").await? == "back\n", "commands run again");
                for (route, body) in [("/pause", json!({"extra": 1})), ("/resume", json!({"extra": 1}))] {
                    expect_error(&post(&ctx, &sb(&id, route), &body).await?, 400, "E4001").with_context(|| route.to_owned())?;
                }
                super::support::kill(&ctx, &id).await;
                bg.gone(Duration::from_secs(10)).await?;
                Ok(())
            },
        },
        case! {
            id: "engine/lifecycle/005",
            spec: "While a sandbox is paused nothing runs in it: code runs, terminals and signals are 400 `E4003` like commands; its files still work.",
            profile: &profiles::LOCAL,
            tags: ["feature:pause", "feature:commands", "feature:processes", "feature:code", "feature:terminal", "feature:files"],
            endpoints: ["sandboxes_pause", "code_run", "terminal", "processes_signal", "files_write", "files_read"],
            codes: ["E4003"],
            run: |ctx| async move {
                let id = id_of(&create(&ctx, &json!({"timeout": 300})).await?)?;
                let bg = background_sleep(&ctx, &id).await?;
                post(&ctx, &sb(&id, "/pause"), &json!({})).await?.expect_status(200)?;
                expect_error(&post(&ctx, &sb(&id, "/code/run"), &json!({"code": "print(1)"})).await?, 400, "E4003").context("code run")?;
                expect_error(&post(&ctx, &sb(&id, &format!("/processes/{}/signal", bg.pid)), &json!({"signal": 9})).await?, 400, "E4003").context("signal")?;
                ensure!(bg.alive(), "a refused signal is not delivered");
                let token = ctx.token().ok_or_else(|| anyhow!("the engine's token is unknown"))?;
                let bearer = format!("Bearer {token}");
                let own = super::support::own(&ctx);
                let mut headers = vec![("authorization", bearer.as_str())];
                if let Some(c) = own.as_deref() { headers.push(("x-svc-connection", c)); }
                expect_error(&ctx.ws_refused(&sb(&id, "/terminal"), &headers).await?, 400, "E4003").context("terminal")?;
                let put = ctx.send(super::support::req(&ctx, reqwest::Method::PUT, &sb(&id, "/files/content?path=while-paused.txt")).body("still")).await?;
                put.expect_status(200).context("files work while paused")?;
                let read = get(&ctx, &sb(&id, "/files/content?path=while-paused.txt")).await?;
                ensure!(read.status == 200 && read.body.as_ref() == b"still", "{}", read.describe());
                post(&ctx, &sb(&id, "/resume"), &json!({})).await?.expect_status(200)?;
                super::support::kill(&ctx, &id).await;
                bg.gone(Duration::from_secs(10)).await?;
                Ok(())
            },
        },
    ]
}

fn id_of(record: &serde_json::Value) -> anyhow::Result<String> {
    record["sandbox_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no sandbox_id in {record}"))
}

/// Leaves a sleep in the background of the sandbox.
async fn background_sleep(ctx: &Ctx, id: &str) -> anyhow::Result<Left> {
    let left = super::support::leave_sleeps(ctx, id, 1).await?.remove(0);
    ensure!(left.alive(), "the background sleep runs");
    Ok(left)
}

/// Waits for the sandbox to be gone (404 `E2009`) and `bg` with it.
async fn expired(ctx: &Ctx, id: &str, bg: Left) -> anyhow::Result<()> {
    let ctx2 = ctx.clone();
    let path = sb(id, "");
    let last = super::support::eventually(Duration::from_secs(15), "the sandbox expires", || {
        let (ctx, path) = (ctx2.clone(), path.clone());
        async move {
            let resp = get(&ctx, &path).await?;
            Ok((resp.status == 404).then_some(resp))
        }
    })
    .await?;
    expect_error(&last, 404, "E2009")?;
    bg.gone(Duration::from_secs(10)).await
}
