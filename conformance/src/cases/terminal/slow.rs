//! A terminal client that cannot keep up (issue 12): it is dropped, the other clients keep
//! getting everything, and the server's memory stays bounded. Measured from outside through
//! the server process's resident memory (`/proc`, same machine).

use super::support::{ALICE, TERMINAL, WAIT, attach, call, id_of, read_until, terminal, type_line};
use crate::processes::{pid_listening_on, resident_bytes};
use crate::{Case, Ctx, WsStream, case};
use anyhow::{Context, anyhow, ensure};
use futures::StreamExt;
use reqwest::Method;
use serde_json::json;
use tokio::net::TcpSocket;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// What the shell prints while one client reads and the other does not.
const FLOOD_BYTES: usize = 50_000_000;
/// What the stalled client may cost the server, at most.
const MAX_GROWTH: u64 = 48 * 1024 * 1024;

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "terminal/slow/001",
        spec: "A client that cannot keep up is dropped, never allowed to grow server memory, while the other clients keep getting every byte.",
        profile: &TERMINAL,
        tags: ["needs:terminal-port"],
        endpoints: ["pty_connect", "pty_get"],
        codes: [],
        run: |ctx| async move {
            let server = server_pid(&ctx)?;
            let before = rss(server)?;
            let id = id_of(&terminal(&ctx, json!({})).await?);
            let mut stalled = stalled_client(&ctx, &id).await?;
            let mut reader = attach(&ctx, &id, ALICE).await?;
            type_line(&mut reader, &format!("stty -opost; yes | head -c {FLOOD_BYTES}; printf '%s-%s\\n' all done")).await?;
            let read = read_until(&mut reader, b"all-done").await?;
            ensure!(read.bytes.len() >= FLOOD_BYTES, "the reader got {} of {FLOOD_BYTES} bytes", read.bytes.len());
            let after = rss(server)?;
            ensure!(
                after.saturating_sub(before) < MAX_GROWTH,
                "the server grew from {before} to {after} bytes while a client stalled"
            );
            let got = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}"), None).await?.json()?;
            ensure!(got["clients"] == 1, "the stalled client was dropped: {got}");
            // What the stalled client finds when it reads at last: part of the output, then
            // the end of the socket.
            let mut received = 0usize;
            let ended = tokio::time::timeout(WAIT, async {
                while let Some(frame) = stalled.next().await {
                    match frame {
                        Ok(Message::Binary(b)) => received += b.len(),
                        Ok(Message::Close(_)) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
            })
            .await;
            ensure!(ended.is_ok(), "the stalled client's socket ended");
            ensure!(received < FLOOD_BYTES, "the stalled client got everything ({received} bytes): it was not dropped");
            Ok(())
        },
    }]
}

/// The pid of the server under test: whoever listens on the base URL's port here.
fn server_pid(ctx: &Ctx) -> anyhow::Result<u32> {
    let url = reqwest::Url::parse(ctx.base_url()).context("parsing the base URL")?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| anyhow!("no port in {}", ctx.base_url()))?;
    pid_listening_on(port).ok_or_else(|| {
        anyhow!("no process here visibly listens on port {port}: this case reads the server's memory in /proc")
    })
}

fn rss(pid: u32) -> anyhow::Result<u64> {
    resident_bytes(pid).ok_or_else(|| anyhow!("no VmRSS in /proc/{pid}/status"))
}

/// A client with a 4 KiB receive buffer that reads nothing after the handshake.
async fn stalled_client(ctx: &Ctx, id: &str) -> anyhow::Result<WsStream> {
    let base = reqwest::Url::parse(ctx.terminal_url()?)?;
    let host = base
        .host_str()
        .ok_or_else(|| anyhow!("no host in {base}"))?
        .trim_matches(['[', ']']);
    let port = base
        .port_or_known_default()
        .ok_or_else(|| anyhow!("no port in {base}"))?;
    let addr = tokio::net::lookup_host((host, port))
        .await?
        .next()
        .ok_or_else(|| anyhow!("{host} resolves to nothing"))?;
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_recv_buffer_size(4096)?;
    let tcp = socket.connect(addr).await?;
    let url = format!(
        "ws://{}:{port}/pty/{id}/connect",
        base.host_str().unwrap_or(host)
    );
    let mut req = url.as_str().into_client_request()?;
    req.headers_mut()
        .insert("authorization", format!("Bearer {ALICE}").parse()?);
    let (ws, _) =
        tokio_tungstenite::client_async(req, tokio_tungstenite::MaybeTlsStream::Plain(tcp))
            .await
            .context("the stalled client's handshake")?;
    Ok(ws)
}
