//! SIGTERM to the server (issue 12, Done when 2): every child it started ends (TERM, a grace
//! period, KILL), a follower stream sees its exit, a start that arrives while it stops is
//! 503 `shutting_down`, and nothing is left alive or unreaped.

use super::support::{all_gone, area, pids_in, s, started};
use crate::processes::pid_listening_on;
use crate::{Case, case, profiles};
use anyhow::{Context, anyhow, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "process/shutdown/001",
        spec: "SIGTERM to the server ends every child it started, whole groups included (a TERM-ignoring one is killed), and leaves no zombie; a start whose body completes while the server stops is 503 `shutting_down`.",
        profile: &profiles::PROCESS_SHUTDOWN,
        tags: [],
        endpoints: ["process_start", "shell_stream"],
        codes: ["shutting_down"],
        run: |ctx| async move {
            let dir = area(&ctx, "shutdown-001")?;
            let pids_file = dir.join("pids");
            let mut pids = vec![
                started(&ctx, &json!({"cmd": "sleep", "args": ["60"], "cwd": s(&dir)})).await?,
                started(&ctx, &json!({"cmd": format!("trap '' TERM; sleep 60 & echo $! >> {}; wait", s(&pids_file)), "cwd": s(&dir)})).await?,
            ];
            let mut stream = ctx.sse(ctx.post_json("/shell/stream", &json!({
                "cmd": format!("echo $$ >> {}; echo go; sleep 60", s(&pids_file)), "cwd": s(&dir),
            }))).await?;
            stream.next_event_within(Duration::from_secs(10)).await?;
            pids.extend(pids_in(&pids_file, 2, Duration::from_secs(5)).await?);
            // A start whose body is still on its way when the signal comes.
            let url = reqwest::Url::parse(ctx.base_url())?;
            let port = url.port().context("a port in the base URL")?;
            let server = pid_listening_on(port).ok_or_else(|| anyhow!("no local server on port {port}"))?;
            let body = json!({"cmd": "sleep", "args": ["60"], "cwd": s(&dir)}).to_string();
            let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            let head = format!("POST /processes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
            tcp.write_all(head.as_bytes()).await?;
            tcp.write_all(&body.as_bytes()[..5]).await?;
            tokio::time::sleep(Duration::from_millis(200)).await;
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(server as i32), nix::sys::signal::Signal::SIGTERM)?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            tcp.write_all(&body.as_bytes()[5..]).await?;
            let mut reply = Vec::new();
            tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut reply)).await.map_err(|_| anyhow!("no answer"))??;
            let reply = String::from_utf8_lossy(&reply);
            ensure!(reply.starts_with("HTTP/1.1 503"), "{reply}");
            let json: Value = serde_json::from_str(reply.split("\r\n\r\n").nth(1).unwrap_or_default().trim()).unwrap_or(Value::Null);
            ensure!(json["code"] == "shutting_down", "{reply}");
            // The open stream sees its command end, then the stream ends.
            let mut names = Vec::new();
            while let Ok(Some(frame)) = stream.next_event_within(Duration::from_secs(10)).await {
                names.extend(frame.event);
            }
            ensure!(names.iter().any(|n| n == "exit"), "the follower saw the exit: {names:?}");
            all_gone(&pids, Duration::from_secs(15)).await?;
            Ok(())
        },
    }]
}
