//! The engine's connection cap (`--max-connections N`, `SVC_ENGINE_MAX_CONNECTIONS`): past
//! it a new connection is answered 503 `E9003` with `Retry-After` and closed before its
//! request is read, so a flood of idle connections meets the cap, not the engine's
//! descriptor limit.

use crate::{Case, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use std::time::{Duration, Instant};

/// The profile's cap.
const MAX: usize = 4;

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "engine/connection_cap/001",
        spec: "With a cap of 4 connections (`SVC_ENGINE_MAX_CONNECTIONS=4`): past the cap a new connection is answered 503 `E9003` (`BusyError`) with `Retry-After` and `Connection: close` before it sends a byte, and closed; once the idle ones are closed, the engine answers again.",
        profile: &profiles::ENGINE_CONNECTIONS,
        tags: [],
        endpoints: ["health"],
        codes: ["E9003"],
        run: |ctx| async move {
            let authority = crate::raw_wire::authority(ctx.base_url())?;
            let (flood, refusals) = crate::raw_wire::flood(&authority, MAX * 2, Duration::from_millis(200)).await?;
            // The runner may hold a kept connection of its own: at least the ones past the cap.
            ensure!(refusals.len() >= MAX, "{} of {} idle connections refused past a cap of {MAX}", refusals.len(), MAX * 2);
            let body = crate::raw_wire::busy_body(&refusals[0])?;
            ensure!(body["error"]["code"] == "E9003" && body["error"]["type"] == "BusyError", "the table's row: {body}");
            drop(flood);
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                // Until the engine has seen the flood's sockets close, a new connection may
                // still be past the cap: answered 503 before the request is sent, which the
                // HTTP client reports as an error rather than as the answer. Both mean "not
                // yet".
                let still = match ctx.send(ctx.request(Method::GET, "/v1/health")).await {
                    Ok(resp) if resp.status == 200 => return Ok(()),
                    Ok(resp) => resp.describe(),
                    Err(e) => format!("{e:#}"),
                };
                ensure!(Instant::now() < deadline, "the engine still refuses once the idle connections are closed: {still}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        },
    }]
}
