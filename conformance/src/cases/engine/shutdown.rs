//! `POST /v1/shutdown` (spec 4.4): it answers, then the engine stops and takes its
//! descriptor with it, so the next client starts a new one instead of knocking
//! on a dead port.

use super::support::{alive, eventually, snapshot};
use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use std::time::Duration;

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "engine/shutdown/001",
        spec: "POST /v1/shutdown answers `{stopping: true, pid}` (the engine's pid), then the engine exits: its process is gone, its port answers no more and its descriptor is removed.",
        profile: &profiles::ENGINE_STOPPED,
        tags: ["needs:own-engine"],
        endpoints: ["shutdown"],
        codes: [],
        run: |ctx| async move {
            let dir = ctx.dir().ok_or_else(|| anyhow!("needs the state folder (launch the engine with --engine-cmd)"))?.to_path_buf();
            let health = ctx.send(ctx.request(Method::GET, "/v1/health")).await?.json()?;
            let pid = health["pid"].as_u64().ok_or_else(|| anyhow!("no pid in {health}"))?;
            let resp = ctx.send(ctx.request(Method::POST, "/v1/shutdown")).await?;
            resp.expect_status(200)?;
            let body = resp.json()?;
            ensure!(body.as_object().is_some_and(|m| m.len() == 2) && body["stopping"] == true && body["pid"] == pid, "{body}");
            snapshot(&ctx, "engine__shutdown__answer", &body)?;
            eventually(Duration::from_secs(10), "the engine process exits", || async move { Ok((!alive(pid)).then_some(())) }).await?;
            let gone = ctx.send(ctx.request(Method::GET, "/v1/health")).await;
            ensure!(gone.is_err(), "the port still answers after the shutdown: {:?}", gone.map(|r| r.describe()));
            ensure!(!dir.join("engine.json").exists(), "the descriptor is removed when the engine stops");
            Ok(())
        },
    }]
}
