//! GET /files/download: bytes with `Content-Disposition: attachment` (issue 11, wire
//! contract `files_download`).

use super::support::{area, binary, download, put, refused, s};
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/download/001",
            spec: "files_download: GET /files/download?path= answers 200 with the bytes, `application/octet-stream` and `Content-Disposition: attachment; filename=\"<name>\"`; binary content arrives intact.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_download"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "download-001")?;
                let file = put(&dir, "report.bin", binary())?;
                let resp = download(&ctx, &s(&file)).await?;
                resp.expect_status(200)?;
                ensure!(resp.body[..] == binary()[..], "content differs");
                ensure!(resp.header("content-type") == Some("application/octet-stream"), "{}", resp.describe());
                ensure!(resp.header("content-disposition") == Some("attachment; filename=\"report.bin\""), "{}", resp.describe());
                Ok(())
            },
        },
        case! {
            id: "files/download/002",
            spec: "The file name is quoted and escaped (`\"` and `\\` backslash-escaped); a non-ASCII name adds RFC 6266 `filename*=UTF-8''` with the percent-encoded name beside an ASCII `filename`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_download"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "download-002")?;
                let odd = put(&dir, "my \"q\" \\ file.txt", "odd")?;
                let resp = download(&ctx, &s(&odd)).await?;
                resp.expect_status(200)?;
                let cd = resp.header("content-disposition").context("Content-Disposition")?;
                ensure!(cd == "attachment; filename=\"my \\\"q\\\" \\\\ file.txt\"", "{cd}");
                let accented = put(&dir, "résumé 1.txt", "cv")?;
                let resp = download(&ctx, &s(&accented)).await?;
                resp.expect_status(200)?;
                let cd = resp.header("content-disposition").context("Content-Disposition is ASCII")?;
                ensure!(cd.starts_with("attachment; filename=\""), "{cd}");
                ensure!(cd.ends_with("; filename*=UTF-8''r%C3%A9sum%C3%A9%201.txt"), "{cd}");
                ensure!(cd.is_ascii(), "{cd}");
                ensure!(&resp.body[..] == b"cv", "{}", resp.describe());
                Ok(())
            },
        },
        case! {
            id: "files/download/003",
            spec: "Downloading a directory is 400 `is_a_directory`; a missing path is 404 `not_found`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_download"],
            codes: ["is_a_directory", "not_found"],
            run: |ctx| async move {
                let dir = area(&ctx, "download-003")?;
                refused(&download(&ctx, &s(&dir)).await?, 400, "is_a_directory", "a directory")?;
                refused(&download(&ctx, &s(&dir.join("absent.txt"))).await?, 404, "not_found", "missing")?;
                Ok(())
            },
        },
    ]
}
