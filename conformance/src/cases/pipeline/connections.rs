//! Connections end (issue 30, item 4): a silent, half-sent or idle kept connection is closed
//! after the header timeout, and past the connection cap a new connection is answered a
//! typed 503 with `Retry-After` and closed, so a flood of silent connections never keeps
//! `/health` from answering for long.

use crate::{Case, case, profiles};
use anyhow::ensure;
use std::time::{Duration, Instant};
use crate::raw_wire::read_for;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The profile's `server.connections.header_timeout_secs`.
const HEADER_TIMEOUT: Duration = Duration::from_secs(3);
/// The profile's `server.connections.max`.
const MAX: usize = 8;

/// `/health` on a fresh connection: the status line's code, or `None` when refused.
async fn health(authority: &str) -> anyhow::Result<String> {
    let mut conn = TcpStream::connect(authority).await?;
    conn.write_all(format!("GET /health HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n").as_bytes()).await?;
    Ok(read_for(&mut conn, Duration::from_secs(10)).await.0)
}

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "pipeline/connections/001",
        spec: "With `server.connections: {max: 8, header_timeout_secs: 3}`: a connection that sends nothing, one that sends half a request head, a kept connection idle after its answer, and a kept connection that sends half of its second request head are each closed by the server within the header timeout (plus slack); past 8 open connections a new one is answered 503 `too_many_connections` with `Retry-After` and `Connection: close` before its request is read; once the silent ones are closed, `/health` answers 200 again.",
        profile: &profiles::CONNECTIONS,
        tags: [],
        endpoints: ["health"],
        codes: ["too_many_connections"],
        run: |ctx| async move {
            let authority = crate::raw_wire::authority(ctx.base_url())?;
            let slack = HEADER_TIMEOUT + Duration::from_secs(3);
            let mut half = TcpStream::connect(&authority).await?;
            half.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n").await?;
            let mut kept = TcpStream::connect(&authority).await?;
            kept.write_all(format!("GET /health HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes()).await?;
            let mut half_second = TcpStream::connect(&authority).await?;
            half_second.write_all(format!("GET /health HTTP/1.1\r\nHost: {authority}\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n").as_bytes()).await?;
            let mut silent = TcpStream::connect(&authority).await?;
            let started = Instant::now();
            let (answer, closed) = read_for(&mut half, slack).await;
            ensure!(closed && !answer.contains(" 200 "), "a half-sent head is closed unanswered within {slack:?}: closed {closed}, {answer:?}");
            let (answer, closed) = read_for(&mut kept, slack).await;
            ensure!(answer.starts_with("HTTP/1.1 200") && closed, "a kept connection is answered, then closed when idle: closed {closed}, {answer:?}");
            let (answer, closed) = read_for(&mut half_second, slack).await;
            ensure!(answer.starts_with("HTTP/1.1 200") && answer.matches(" 200 ").count() == 1 && closed, "a kept connection's half-sent second head is closed unanswered: closed {closed}, {answer:?}");
            let (answer, closed) = read_for(&mut silent, Duration::from_secs(1)).await;
            ensure!(closed && answer.is_empty(), "a silent connection is closed unanswered: closed {closed}, {answer:?}");
            ensure!(started.elapsed() >= HEADER_TIMEOUT - Duration::from_millis(500), "not before the timeout: {:?}", started.elapsed());

            // A flood of silent connections meets the cap, not the descriptor limit.
            let (flood, refusals) = crate::raw_wire::flood(&authority, MAX + 4, Duration::from_millis(100)).await?;
            ensure!(refusals.len() >= 4, "{} of {} silent connections refused past a cap of {MAX}", refusals.len(), MAX + 4);
            let body = crate::raw_wire::busy_body(&refusals[0])?;
            ensure!(body["code"] == "too_many_connections" && body["type"] == "TooManyConnectionsError", "the table's row: {body}");
            let past = health(&authority).await?;
            ensure!(!past.starts_with("HTTP/1.1 200"), "past the cap /health is refused too");
            ensure!(past.starts_with("HTTP/1.1 503") && past.contains("\"too_many_connections\""), "past the cap /health is answered 503 `too_many_connections`: {past:?}");

            tokio::time::sleep(slack).await;
            let answer = health(&authority).await?;
            ensure!(answer.starts_with("HTTP/1.1 200"), "once the silent ones are closed, /health answers: {answer:?}");
            drop(flood);
            Ok(())
        },
    }]
}
