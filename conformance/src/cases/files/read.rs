//! GET /files/content: raw bytes, ranges (issue 11, wire contract `files_read`).

use super::support::{
    area, binary, download, first_difference, patterned, put, read, read_range, refused, s,
    snapshot,
};
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use reqwest::Method;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/read/001",
            spec: "files_read: GET /files/content?path= answers 200 with the file's raw bytes as `application/octet-stream`; binary (non-UTF-8) content comes back byte for byte.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "read-001")?;
                let text = put(&dir, "hello.txt", "hello, files\n")?;
                let bin = put(&dir, "blob.bin", binary())?;
                let empty = put(&dir, "empty.txt", "")?;
                let resp = read(&ctx, &s(&text)).await?;
                resp.expect_status(200)?;
                ensure!(resp.header("content-type") == Some("application/octet-stream"), "{}", resp.describe());
                ensure!(&resp.body[..] == b"hello, files\n", "{}", resp.describe());
                ensure!(resp.header("content-length") == Some("13"), "Content-Length is the file's size\n{}", resp.describe());
                let resp = read(&ctx, &s(&bin)).await?;
                resp.expect_status(200)?;
                ensure!(resp.body[..] == binary()[..], "binary content differs: {} bytes", resp.body.len());
                let resp = read(&ctx, &s(&empty)).await?;
                resp.expect_status(200)?;
                ensure!(resp.body.is_empty(), "{}", resp.describe());
                Ok(())
            },
        },
        case! {
            id: "files/read/002",
            spec: "files_read honours `Range: bytes=a-b` (also `a-` and the suffix `-n`): 206 with `Content-Range: bytes a-b/size` and exactly those bytes; `Accept-Ranges: bytes` is announced.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "read-002")?;
                let content: Vec<u8> = (0..100u8).collect();
                let file = s(&put(&dir, "digits.bin", &content)?);
                for (range, from, to) in [("bytes=10-19", 10usize, 19usize), ("bytes=90-", 90, 99), ("bytes=-5", 95, 99), ("bytes=0-0", 0, 0), ("bytes=95-500", 95, 99)] {
                    let resp = read_range(&ctx, &file, range).await?;
                    resp.expect_status(206).with_context(|| range.to_owned())?;
                    let want = format!("bytes {from}-{to}/100");
                    ensure!(resp.header("content-range") == Some(want.as_str()), "{range}: expected Content-Range {want}\n{}", resp.describe());
                    ensure!(resp.body[..] == content[from..=to], "{range}: wrong bytes\n{}", resp.describe());
                    ensure!(resp.header("content-type") == Some("application/octet-stream"), "{}", resp.describe());
                }
                let whole = read(&ctx, &file).await?;
                whole.expect_status(200)?;
                ensure!(whole.header("accept-ranges") == Some("bytes"), "Accept-Ranges: bytes\n{}", whole.describe());
                Ok(())
            },
        },
        case! {
            id: "files/read/003",
            spec: "A range that starts past the end of the file is 416 `range_not_satisfiable`; a malformed or multi-range header is ignored (200, the whole file).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read"],
            codes: ["range_not_satisfiable"],
            run: |ctx| async move {
                let dir = area(&ctx, "read-003")?;
                let file = s(&put(&dir, "ten.txt", "0123456789")?);
                for range in ["bytes=10-20", "bytes=100-", "bytes=5-2"] {
                    let resp = read_range(&ctx, &file, range).await?;
                    let err = refused(&resp, 416, "range_not_satisfiable", range)?;
                    if range == "bytes=10-20" {
                        snapshot(&ctx, "files__read__range_not_satisfiable", &err)?;
                    }
                }
                for range in ["lines=1-2", "bytes=0-1,4-5", "bytes=x-y"] {
                    let resp = read_range(&ctx, &file, range).await?;
                    resp.expect_status(200).with_context(|| range.to_owned())?;
                    ensure!(&resp.body[..] == b"0123456789", "{range}\n{}", resp.describe());
                }
                Ok(())
            },
        },
        case! {
            id: "files/read/004",
            spec: "A missing path is 404 `not_found` with the flat error body; reading a directory is 400 `is_a_directory`; reading something that is neither a file nor a directory (a FIFO) is 400 `not_a_file`, answered at once (the server never blocks opening it).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read"],
            codes: ["not_found", "is_a_directory", "not_a_file"],
            run: |ctx| async move {
                let dir = area(&ctx, "read-004")?;
                let resp = read(&ctx, &s(&dir.join("missing.txt"))).await?;
                let err = refused(&resp, 404, "not_found", "missing file")?;
                snapshot(&ctx, "files__read__not_found", &err)?;
                let resp = read(&ctx, &s(&dir)).await?;
                let err = refused(&resp, 400, "is_a_directory", "a directory")?;
                snapshot(&ctx, "files__read__is_a_directory", &err)?;
                let fifo = dir.join("pipe");
                nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644))?;
                let resp = read(&ctx, &s(&fifo)).await?;
                refused(&resp, 400, "not_a_file", "a FIFO")?;
                Ok(())
            },
        },
        case! {
            id: "files/read/005",
            spec: "A relative path is taken relative to the server's working directory (the runner's, for a launched server).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "read-005")?;
                let file = put(&dir, "relative.txt", "found relatively\n")?;
                let cwd = std::env::current_dir()?;
                let up = cwd.components().count().saturating_sub(1);
                let rel = format!("{}{}", "../".repeat(up), s(&file).trim_start_matches('/'));
                let resp = read(&ctx, &rel).await?;
                resp.expect_status(200)?;
                ensure!(&resp.body[..] == b"found relatively\n", "{rel}\n{}", resp.describe());
                Ok(())
            },
        },
        case! {
            id: "files/read/006",
            spec: "Query parameters are typed: an unknown one is 400 `invalid_request` naming it; a method the table does not list (POST) is the typed 404.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let dir = area(&ctx, "read-006")?;
                let file = s(&put(&dir, "a.txt", "a")?);
                let resp = ctx.send(ctx.get(&format!("/files/content?path={}&colour=red", super::support::enc(&file)))).await?;
                let err = refused(&resp, 400, "invalid_request", "unknown parameter")?;
                ensure!(err.to_string().contains("colour"), "names the parameter: {err}");
                let resp = ctx.send(ctx.request(Method::POST, &format!("/files/content?path={}", super::support::enc(&file)))).await?;
                refused(&resp, 404, "not_found", "POST /files/content")?;
                Ok(())
            },
        },
        case! {
            id: "files/read/007",
            spec: "A large file arrives byte for byte, however the server moves it (a streaming reader, `sendfile`): 9 MiB and 7 bytes of patterned content (no run of zeros a placeholder could hide in) read whole twice on a kept-alive connection, by ranges that cross MiB boundaries, and downloaded.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_download"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "read-007")?;
                let mib = 1024 * 1024;
                let content = patterned(9 * mib + 7);
                let file = s(&put(&dir, "large.bin", &content)?);
                for round in 0..2 {
                    let resp = read(&ctx, &file).await?;
                    resp.expect_status(200)?;
                    ensure!(resp.body.len() == content.len(), "round {round}: {} bytes of {}", resp.body.len(), content.len());
                    ensure!(resp.body[..] == content[..], "round {round}: first difference at byte {:?}", first_difference(&resp.body, &content));
                }
                for (from, to) in [(mib - 3, 4 * mib + 2), (5 * mib, 9 * mib + 6), (0, mib)] {
                    let resp = read_range(&ctx, &file, &format!("bytes={from}-{to}")).await?;
                    resp.expect_status(206)?;
                    ensure!(resp.body[..] == content[from..=to], "bytes={from}-{to}: first difference at byte {:?}", first_difference(&resp.body, &content[from..=to]));
                }
                let resp = download(&ctx, &file).await?;
                resp.expect_status(200)?;
                ensure!(resp.body[..] == content[..], "download: first difference at byte {:?}", first_difference(&resp.body, &content));
                Ok(())
            },
        },
        case! {
            id: "files/read/008",
            spec: "A trailing `/` names a directory, as the kernel reads it: `GET a.txt/` (or `a.txt/.`) of a file is 400 `not_a_directory`, never `a.txt`'s bytes; `PUT x.txt/` is 400 `is_a_directory` and writes nothing (issue 30, item 7); `files/info`, `DELETE /files` and `files/move` from `a.txt/` are 400 `not_a_directory` and `files/exists` answers false, `a.txt` untouched.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_read", "files_write", "files_info", "files_exists", "files_delete", "files_move"],
            codes: ["not_a_directory", "is_a_directory"],
            run: |ctx| async move {
                let dir = area(&ctx, "read-008")?;
                let file = s(&put(&dir, "a.txt", "inside\n")?);
                for raw in [format!("{file}/"), format!("{file}/.")] {
                    refused(&read(&ctx, &raw).await?, 400, "not_a_directory", &raw)?;
                }
                // The same on every route that locates a path (issue 31, item 3): `a.txt/` is
                // never `a.txt`, so info and delete refuse it, exists says no, and a move
                // from it moves nothing.
                let slashed = format!("{file}/");
                refused(&super::support::info(&ctx, &slashed).await?, 400, "not_a_directory", "info a.txt/")?;
                let resp = super::support::exists(&ctx, &slashed).await?;
                ensure!(resp.status == 200 && resp.json()?["exists"] == false, "exists a.txt/: {}", resp.describe());
                refused(&super::support::delete(&ctx, &slashed, "").await?, 400, "not_a_directory", "delete a.txt/")?;
                let moved = s(&dir.join("moved.txt"));
                refused(&super::support::mv(&ctx, &serde_json::json!({"from": slashed, "to": moved})).await?, 400, "not_a_directory", "move a.txt/")?;
                ensure!(std::fs::read(&file)? == b"inside\n" && !dir.join("moved.txt").exists(), "a.txt is untouched");
                let target = dir.join("x.txt");
                let resp = super::support::write(&ctx, &format!("{}/", s(&target)), "x", "").await?;
                refused(&resp, 400, "is_a_directory", "x.txt/")?;
                ensure!(!target.exists(), "nothing was written");
                Ok(())
            },
        },
    ]
}
