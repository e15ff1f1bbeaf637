//! What a stalled event stream reader costs the server (issue 14): a client that stops
//! reading must not make the server hold a copy of the session's history for it. Measured
//! from outside, through the server process's resident memory (`/proc`, same machine).

use std::time::Duration;

use anyhow::{Context, anyhow, bail, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use super::support::sessions::{Api, event_data, spath};
use crate::ctx::SseParser;
use crate::processes::{pid_listening_on, resident_bytes};
use crate::{Case, Ctx, case, profiles};

/// The reply of the turn every reader replays.
const REPLY_BYTES: usize = 8_000_000;
const STALLED_READERS: usize = 10;
/// What the stalled readers may cost the server, all together.
const MAX_GROWTH: u64 = 64 * 1024 * 1024;
const MIB: f64 = 1024.0 * 1024.0;

/// The pid of the server under test: whoever listens on the base URL's port here.
fn server_pid(ctx: &Ctx) -> anyhow::Result<u32> {
    let url = reqwest::Url::parse(ctx.base_url()).context("parsing the base URL")?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| anyhow!("no port in {}", ctx.base_url()))?;
    pid_listening_on(port).ok_or_else(|| {
        anyhow!(
            "no process on this machine visibly listens on port {port} ({}): this case measures \
             the server's memory through /proc and needs the server running locally as the same user",
            ctx.base_url()
        )
    })
}

fn rss(pid: u32) -> anyhow::Result<u64> {
    resident_bytes(pid).ok_or_else(|| anyhow!("no VmRSS in /proc/{pid}/status"))
}

/// Opens `path` on a socket with a small receive buffer, reads the response head and a
/// few KiB of body, then leaves the rest unread; returns the open socket.
async fn stalled_reader(ctx: &Ctx, path: &str) -> anyhow::Result<TcpStream> {
    let authority = crate::raw_wire::authority(ctx.base_url())?;
    let addr = tokio::net::lookup_host(&authority)
        .await
        .with_context(|| format!("resolving {authority}"))?
        .next()
        .ok_or_else(|| anyhow!("{authority} resolves to nothing"))?;
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_recv_buffer_size(4096)?;
    let mut stream = socket
        .connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    let auth = ctx
        .token()
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: text/event-stream\r\n{auth}\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let read = async {
        loop {
            let n = stream.read(&mut buf).await?;
            ensure!(n > 0, "the server closed before the response head");
            got.extend_from_slice(&buf[..n]);
            if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                // The head and a few KiB of the body, then the reader stalls.
                if got.len() >= end + 4 + 4096 {
                    return anyhow::Ok(end);
                }
            }
        }
    };
    let end = tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .map_err(|_| anyhow!("no response head and first KiB within 10 s"))??;
    let head = String::from_utf8_lossy(&got[..end]);
    ensure!(
        head.starts_with("HTTP/1.1 200"),
        "the event stream answered: {head}"
    );
    Ok(stream)
}

/// Ten readers that stop reading cost the server little, not a copy of the backlog each.
async fn stalled_readers(ctx: &Ctx, sid: &str) -> anyhow::Result<()> {
    let pid = server_pid(ctx)?;
    let before = rss(pid)?;
    let path = format!("{}?after=0", spath(sid, "/events"));
    let mut readers = Vec::new();
    for _ in 0..STALLED_READERS {
        readers.push(stalled_reader(ctx, &path).await?);
    }
    // Time for the server to fill whatever it will for readers that do not read.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss(pid)?;
    drop(readers);
    let growth = after.saturating_sub(before);
    ensure!(
        growth < MAX_GROWTH,
        "{STALLED_READERS} stalled readers of a session with a {REPLY_BYTES}-byte reply grew the \
         server (pid {pid}) from {:.1} MiB to {:.1} MiB RSS (+{:.1} MiB, limit {:.0} MiB): \
         what one connection is handed must be bounded, not a copy of the backlog",
        before as f64 / MIB,
        after as f64 / MIB,
        growth as f64 / MIB,
        MAX_GROWTH as f64 / MIB,
    );
    Ok(())
}

/// A reader that reads everything gets the whole replay, the large reply intact.
async fn full_reader(api: &Api, sid: &str) -> anyhow::Result<()> {
    let rb = api
        .get(&format!("{}?after=0", spath(sid, "/events")))
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .timeout(Duration::from_secs(60));
    let resp = api.send(rb).await?;
    resp.expect_status(200)?;
    let mut parser = SseParser::default();
    let mut frames = parser.push(&resp.body);
    frames.extend(parser.finish());
    let events = event_data(&frames, sid)?;
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|e| e["sequence_number"].as_u64())
        .collect();
    let want: Vec<u64> = (1..=events.len() as u64).collect();
    ensure!(seqs == want, "ids 1..n in order: {seqs:?}");
    ensure!(
        events
            .last()
            .is_some_and(|e| e["type"] == "agent.session.idle"),
        "the replay ends with agent.session.idle"
    );
    let text = |ty: &str, member: &str| -> String {
        events
            .iter()
            .filter(|e| e["type"] == ty)
            .filter_map(|e| e[member].as_str())
            .collect()
    };
    let deltas = text("agent.session.turn.output_text.delta", "delta");
    let done = text("agent.session.turn.output_text.done", "text");
    ensure!(
        deltas.len() >= REPLY_BYTES,
        "the replayed deltas carry {} bytes of text, expected at least {REPLY_BYTES}",
        deltas.len()
    );
    ensure!(
        deltas == done,
        "the replayed deltas ({} bytes) differ from output_text.done ({} bytes)",
        deltas.len(),
        done.len()
    );
    let item_text: usize = events
        .iter()
        .filter(|e| e["type"] == "agent.session.turn.item.done")
        .filter_map(|e| e["item"]["content"][0]["text"].as_str())
        .map(str::len)
        .sum();
    ensure!(
        item_text >= REPLY_BYTES,
        "item.done carries {item_text} bytes of text, expected at least {REPLY_BYTES}"
    );
    Ok(())
}

async fn run(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    let (sid, turn, _) = api
        .run_turn(
            "rt-one",
            &format!("[[scenario:large:{REPLY_BYTES}]] big reply"),
        )
        .await?;
    if turn["status"] != "completed" {
        bail!("the large turn did not complete: {turn}");
    }
    let stalled = stalled_readers(&ctx, &sid).await;
    // Whatever the memory figure, a full reader must still get everything.
    let full = full_reader(&api, &sid).await;
    match (stalled, full) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (Err(a), Err(b)) => Err(anyhow!("{a:#}\nand the full replay: {b:#}")),
    }
}

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "agents/events/020",
        spec: "A reader that stops reading costs the server a bounded amount of memory, not a copy of the session's history: 10 stalled `after=0` readers of a session with an 8 MB reply grow the server's RSS by less than 64 MiB, and a reader that reads everything still gets the whole reply.",
        profile: &profiles::AGENTS_SESSIONS,
        tags: ["needs:fake-runtimes"],
        endpoints: ["agents_sessions_events_stream"],
        codes: [],
        run: run,
    }]
}
