//! PUT /files/content with large bodies, however the server moves them (through its
//! memory, or spliced from the socket into the file): every byte lands, a request
//! pipelined right behind a body is answered (a server must stop at the body's end) or,
//! past a size where the server ends the connection after a write, refused by a closing
//! connection that said so; a body its client cuts off leaves nothing behind (issue 11,
//! `files_write`).

use super::support::{area, base, entry_of, first_difference, names_in, patterned, q, s, write};
use crate::{Case, Ctx, case, profiles, raw_wire};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use std::path::Path;
use std::time::{Duration, Instant};

const MIB: usize = 1024 * 1024;

fn same_file(path: &Path, want: &[u8], what: &str) -> anyhow::Result<()> {
    let got = std::fs::read(path).map_err(|e| anyhow!("{what}: reading {}: {e}", path.display()))?;
    ensure!(
        got == want,
        "{what}: {} bytes of {}, first difference at byte {:?}",
        got.len(),
        want.len(),
        first_difference(&got, want)
    );
    Ok(())
}

/// The raw head of a files request on `path`, with the runner's token.
fn head(ctx: &Ctx, method: Method, route: &str, path: &str, extra: &str) -> anyhow::Result<String> {
    let request = ctx.request(method, &q(route, path, "")).build()?;
    Ok(raw_wire::head(&request, extra))
}

/// A write of `content` to `target` with `GET /files/info` of it pipelined right behind the
/// body (`Connection: close`), all in one write to a fresh connection: what the server sent
/// until it closed, and how long that took.
async fn pipelined_behind_write(ctx: &Ctx, target: &Path, content: &[u8]) -> anyhow::Result<(String, Duration)> {
    let path = s(target);
    let mut wire = head(ctx, Method::PUT, "/files/content", &path, &format!("Content-Length: {}\r\n", content.len()))?.into_bytes();
    wire.extend_from_slice(content);
    wire.extend_from_slice(head(ctx, Method::GET, "/files/info", &path, "Connection: close\r\n")?.as_bytes());
    let started = Instant::now();
    let answer = raw_wire::exchange(ctx.base_url(), wire, false).await?;
    Ok((answer, started.elapsed()))
}

/// A write to `target` declaring `declared` bytes whose client sends `sent` and closes its
/// sending side: no answer is 200, and once the server noticed, `target`'s directory holds
/// exactly `left` (no temp file); then a write to `target` is served.
async fn cut_off_write(ctx: &Ctx, target: &Path, declared: usize, sent: &[u8], left: &[&str]) -> anyhow::Result<()> {
    let mut wire = head(ctx, Method::PUT, "/files/content", &s(target), &format!("Content-Length: {declared}\r\n"))?.into_bytes();
    wire.extend_from_slice(sent);
    let answer = raw_wire::exchange(ctx.base_url(), wire, true).await?;
    ensure!(!answer.contains(" 200 "), "a cut-off body is no write: {answer}");
    let dir = target.parent().ok_or_else(|| anyhow!("{} has no directory", target.display()))?;
    settles_to(dir, left).await?;
    let next = patterned(MIB + 5);
    write(ctx, &s(target), next.clone(), "").await?.expect_status(200)?;
    same_file(target, &next, "the next write")
}

/// Waits (up to 10 s) for `dir` to hold exactly `want`: a server notices a cut-off body
/// when the socket says so, a moment after the client gave up. Generous: the wait ends as
/// soon as `dir` holds `want`.
async fn settles_to(dir: &Path, want: &[&str]) -> anyhow::Result<()> {
    let mut names = Vec::new();
    for _ in 0..500 {
        names = names_in(dir)?;
        if names == want {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(anyhow!("{} holds {names:?}, want {want:?}", dir.display()))
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/write/007",
            spec: "Large bodies land byte for byte, however the server moves them: 4 MiB - 3 and 3 MiB + 4093 bytes of patterned content written one after the other on a kept-alive connection, and 3 MiB + 1 sent chunked (no declared length); no temp file remains.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "write-007")?;
                for (name, len) in [("a.bin", 4 * MIB - 3), ("b.bin", 3 * MIB + 4093)] {
                    let content = patterned(len);
                    let target = dir.join(name);
                    let entry = entry_of(&write(&ctx, &s(&target), content.clone(), "").await?)?;
                    ensure!(entry["size"] == len, "{name}: {entry}");
                    same_file(&target, &content, name)?;
                }
                let content = patterned(3 * MIB + 1);
                let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
                    content.chunks(300_007).map(|c| Ok(c.to_vec())).collect();
                let target = dir.join("chunked.bin");
                let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
                let entry = entry_of(&write(&ctx, &s(&target), body, "").await?)?;
                ensure!(entry["size"] == content.len(), "chunked: {entry}");
                same_file(&target, &content, "chunked")?;
                settles_to(&dir, &["a.bin", "b.bin", "chunked.bin"]).await
            },
        },
        case! {
            id: "files/write/008",
            spec: "A request pipelined in the same write right behind a 3 MiB + 11 body is answered as its own request (the body ends where its Content-Length says, not where a read happened to stop), and the file holds exactly the body.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write", "files_info"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "write-008")?;
                let target = dir.join("piped.bin");
                let len = 3 * MIB + 11;
                let content = patterned(len);
                let (answer, _) = pipelined_behind_write(&ctx, &target, &content).await?;
                ensure!(answer.matches("HTTP/1.1 200 OK").count() == 2, "two 200 answers: {answer}");
                ensure!(answer.matches(&format!("\"size\":{len}")).count() == 2, "both name the whole size: {answer}");
                same_file(&target, &content, "piped")
            },
        },
        case! {
            id: "files/write/009",
            spec: "A body its client cuts off (half of a declared 3 MiB, then the sending side closed) writes nothing: no answer is 200, the target does not exist, no temp file remains, and the server answers the next write.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "write-009")?;
                let len = 3 * MIB;
                cut_off_write(&ctx, &dir.join("cut.bin"), len, &patterned(len / 2), &[]).await
            },
        },
        case! {
            id: "files/write/010",
            spec: "A large body (12 MiB + 5, past any size where a server may end the connection after a write) lands byte for byte, and the connection stays framed: a request pipelined right behind the body is answered as its own, or the write's answer says `Connection: close` and the server closes after it without answering more (RFC 9112 section 9.6). A large body its client cuts off (10 of a declared 12 MiB, then the sending side closed) writes nothing and leaves no temp file, and the next write is served.",
            profile: &profiles::FILES_LARGE,
            tags: [],
            endpoints: ["files_write", "files_info"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "write-010")?;
                let target = dir.join("large.bin");
                let len = 12 * MIB + 5;
                let content = patterned(len);
                let (answer, took) = pipelined_behind_write(&ctx, &target, &content).await?;
                raw_wire::framed_after_write(&answer, len, took)?;
                same_file(&target, &content, "large")?;
                cut_off_write(&ctx, &dir.join("cut.bin"), 12 * MIB, &content[..10 * MIB], &["large.bin"]).await
            },
        },
        case! {
            id: "files/write_large/004",
            spec: "A write refused before its body is read (403 `read_only`) never costs the next request on a kept connection: 300 times a refused PUT with a 1-byte body and then `GET /health`, and 300 times with a 100 KB body, lose no answer: either the connection goes on, or the refusal says `Connection: close` and the next request goes on a new one (issue 30, item 5).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write", "health"],
            codes: ["read_only"],
            run: |ctx| async move {
                let frozen = base(&ctx)?.join("root/ro/frozen.txt");
                let health = raw_wire::head(&ctx.request(Method::GET, "/health").build()?, "").into_bytes();
                for len in [1, 100_000] {
                    let mut refused = head(&ctx, Method::PUT, "/files/content", &s(&frozen), &format!("Content-Length: {len}\r\n"))?.into_bytes();
                    refused.extend(std::iter::repeat_n(b'x', len));
                    let lost = raw_wire::lost_after_refusals(ctx.base_url(), &refused, 403, &health, 300).await?;
                    ensure!(lost == 0, "{lost} of 600 requests got no answer after refused {len}-byte writes");
                }
                ensure!(std::fs::read(&frozen)? == b"frozen\n", "nothing was written");
                Ok(())
            },
        },
    ]
}
