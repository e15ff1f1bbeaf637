//! The engine's connection cap (`--max-connections N`, `SVC_ENGINE_MAX_CONNECTIONS`): past
//! it a new connection is answered 503 `E9003` with `Retry-After` and closed before its
//! request is read, so a flood of idle connections meets the cap, not the engine's
//! descriptor limit.

use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The profile's cap.
const MAX: usize = 4;

/// What arrives on `conn` within `wait`, and whether the engine closed it.
async fn read_for(conn: &mut TcpStream, wait: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let until = Instant::now() + wait;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, conn.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

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
            let mut flood = Vec::new();
            for _ in 0..MAX * 2 {
                flood.push(TcpStream::connect(&authority).await?);
            }
            let mut refusals = Vec::new();
            for conn in &mut flood {
                let (answer, closed) = read_for(conn, Duration::from_millis(200)).await;
                if !answer.is_empty() {
                    ensure!(closed, "a refused connection is closed: {answer:?}");
                    refusals.push(answer);
                }
            }
            // The runner may hold a kept connection of its own: at least the ones past the cap.
            ensure!(refusals.len() >= MAX, "{} of {} idle connections refused past a cap of {MAX}", refusals.len(), MAX * 2);
            let refusal = refusals.remove(0);
            let (head, body) = refusal.split_once("\r\n\r\n").ok_or_else(|| anyhow!("no answer head: {refusal:?}"))?;
            let head = head.to_ascii_lowercase();
            ensure!(head.starts_with("http/1.1 503"), "503: {refusal}");
            ensure!(head.contains("\r\nretry-after: ") && head.contains("\r\nconnection: close"), "Retry-After and Connection: close: {refusal}");
            let body: serde_json::Value = serde_json::from_str(body)?;
            ensure!(body["error"]["code"] == "E9003" && body["error"]["type"] == "BusyError", "the table's row: {body}");
            drop(flood);
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let resp = ctx.send(ctx.request(Method::GET, "/v1/health")).await?;
                if resp.status == 200 {
                    return Ok(());
                }
                ensure!(Instant::now() < deadline, "the engine still refuses once the idle connections are closed: {}", resp.describe());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        },
    }]
}
