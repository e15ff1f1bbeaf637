//! Helpers of the `browser/*` cases (no cases here): the test's own pages on loopback, one
//! request helper per route, and a PNG's size from its header.

use crate::{Ctx, Resp};
use anyhow::ensure;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The form: typing into `#name` and clicking `#go` writes `hello <name>` into `#out`.
pub const FORM: &str = r#"<!doctype html><html><head><title>Form</title></head><body>
<input id="name"><button id="go" onclick="document.getElementById('out').textContent = 'hello ' + document.getElementById('name').value">Go</button>
<p id="out">waiting</p><div style="height: 2000px">tall</div></body></html>"#;

/// Serves on loopback: `/` the form, `/away` a redirect to a private address,
/// `/hang` never answers, anything else 404. Answers `host:port`.
pub async fn serve_pages() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                let reply = match path.as_str() {
                    "/" => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{FORM}",
                        FORM.len()
                    ),
                    "/away" => "HTTP/1.1 302 Found\r\nlocation: http://169.254.169.254/latest/meta-data/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                    "/hang" => {
                        tokio::time::sleep(std::time::Duration::from_secs(120)).await;
                        return;
                    }
                    _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope".to_owned(),
                };
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    Ok(addr)
}

pub async fn start(ctx: &Ctx) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/browser", &json!({"headless": true})))
        .await
}

pub async fn status(ctx: &Ctx) -> anyhow::Result<Value> {
    let resp = ctx.send(ctx.get("/browser")).await?;
    resp.expect_status(200)?;
    resp.json()
}

pub async fn stop(ctx: &Ctx) -> anyhow::Result<Resp> {
    ctx.send(ctx.delete("/browser")).await
}

pub async fn navigate(ctx: &Ctx, url: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/browser/navigate", &json!({"url": url})))
        .await
}

pub async fn click(ctx: &Ctx, selector: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/browser/click", &json!({"selector": selector})))
        .await
}

pub async fn type_text(ctx: &Ctx, selector: &str, text: &str) -> anyhow::Result<Resp> {
    let body = json!({"selector": selector, "text": text});
    ctx.send(ctx.post_json("/browser/type", &body)).await
}

pub async fn content(ctx: &Ctx) -> anyhow::Result<Resp> {
    ctx.send(ctx.get("/browser/content")).await
}

pub async fn screenshot(ctx: &Ctx, query: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.get(&format!("/browser/screenshot{query}")))
        .await
}

/// Width and height from the PNG's IHDR chunk (signature, length, `IHDR`, then both).
pub fn png_size(png: &[u8]) -> anyhow::Result<(u32, u32)> {
    ensure!(
        png.len() > 24 && &png[..8] == b"\x89PNG\r\n\x1a\n",
        "not a PNG"
    );
    ensure!(&png[12..16] == b"IHDR", "the first chunk is not IHDR");
    let be = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    Ok((be(16), be(20)))
}
