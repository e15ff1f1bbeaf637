//! POST /files/upload: multipart, file parts and a text part `path` (issue 11, wire
//! contract `files_upload`; guards `extension_not_allowed`, `payload_too_large`).

use super::support::{Part, area, binary, check_entry, put, refused, s, snapshot, upload};
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use reqwest::Method;

/// The `files` profile's per-file limit (`paths.max_file_bytes`).
const MAX_FILE: usize = 4 * 1024 * 1024;
/// The `files` profile's cap on file parts (`paths.max_upload_files`).
const MAX_PARTS: usize = 5;

fn file<'a>(filename: &'a str, bytes: &'a [u8]) -> Part<'a> {
    Part::File {
        field: "file",
        filename,
        bytes,
    }
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/upload/001",
            spec: "files_upload: POST /files/upload `multipart/form-data` with a text part `path` (the target directory) and one or more file parts writes each file there and answers 200 `{files: [entry...]}` in part order; binary content arrives intact.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_upload"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "upload-001")?;
                let bin = binary();
                let resp = upload(&ctx, &[Part::Text("path", &s(&dir)), file("notes.txt", b"uploaded notes\n"), file("blob.bin", &bin)]).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let files = body["files"].as_array().context("`files` is an array")?;
                ensure!(files.len() == 2 && body.as_object().is_some_and(|o| o.len() == 1), "{body}");
                for e in files {
                    check_entry(e)?;
                }
                ensure!(files[0]["path"] == s(&dir.join("notes.txt")) && files[0]["size"] == 15, "{body}");
                ensure!(files[1]["path"] == s(&dir.join("blob.bin")) && files[1]["size"] == bin.len(), "{body}");
                ensure!(std::fs::read(dir.join("notes.txt"))? == b"uploaded notes\n", "content");
                ensure!(std::fs::read(dir.join("blob.bin"))? == bin, "binary content differs");
                snapshot(&ctx, "files__upload__files", &body)?;
                Ok(())
            },
        },
        case! {
            id: "files/upload/002",
            spec: "The `path` part may come after the file parts; an existing file of the same name is replaced.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_upload"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "upload-002")?;
                put(&dir, "again.md", "old")?;
                let resp = upload(&ctx, &[file("again.md", b"# new\n"), Part::Text("path", &s(&dir))]).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["files"][0]["path"] == s(&dir.join("again.md")), "{body}");
                ensure!(std::fs::read(dir.join("again.md"))? == b"# new\n", "replaced");
                Ok(())
            },
        },
        case! {
            id: "files/upload/003",
            spec: "The extension guard applies to each file: a name whose extension is not in `paths.upload_extensions` (or has none) is 403 `extension_not_allowed`, and that file is not written.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_upload"],
            codes: ["extension_not_allowed"],
            run: |ctx| async move {
                let dir = area(&ctx, "upload-003")?;
                let resp = upload(&ctx, &[Part::Text("path", &s(&dir)), file("run.sh", b"#!/bin/sh\n")]).await?;
                let err = refused(&resp, 403, "extension_not_allowed", "run.sh")?;
                snapshot(&ctx, "files__upload__extension_not_allowed", &err)?;
                for name in ["Makefile", "archive.tar.gz", "txt"] {
                    let resp = upload(&ctx, &[Part::Text("path", &s(&dir)), file(name, b"x")]).await?;
                    refused(&resp, 403, "extension_not_allowed", name)?;
                }
                let resp = upload(&ctx, &[Part::Text("path", &s(&dir)), file("fine.txt", b"ok"), file("evil.exe", b"MZ")]).await?;
                refused(&resp, 403, "extension_not_allowed", "a refused file after an accepted one")?;
                ensure!(!dir.join("evil.exe").exists(), "the refused file is not written");
                Ok(())
            },
        },
        case! {
            id: "files/upload/004",
            spec: "A file part over the per-file limit (`paths.max_file_bytes`) is 413 `payload_too_large`; nothing is written.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_upload"],
            codes: ["payload_too_large"],
            run: |ctx| async move {
                let dir = area(&ctx, "upload-004")?;
                let big = vec![b'z'; MAX_FILE + 1];
                let resp = upload(&ctx, &[Part::Text("path", &s(&dir)), file("big.bin", &big)]).await?;
                refused(&resp, 413, "payload_too_large", "over the per-file limit")?;
                ensure!(std::fs::read_dir(&dir)?.count() == 0, "nothing written");
                let fits = vec![b'z'; MAX_FILE];
                upload(&ctx, &[Part::Text("path", &s(&dir)), file("fits.bin", &fits)]).await?.expect_status(200)?;
                ensure!(std::fs::metadata(dir.join("fits.bin"))?.len() == MAX_FILE as u64, "the limit itself fits");
                Ok(())
            },
        },
        case! {
            id: "files/upload/005",
            spec: "Malformed uploads: no `path` part is 400 `invalid_path`; a file name with a `/`, `..` or empty is 400 `invalid_path`; no file part, or a body that is not multipart, is 400 `invalid_request`; a missing target directory is 404 `not_found`, a file as target 400 `not_a_directory`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_upload"],
            codes: ["invalid_path", "invalid_request", "not_found", "not_a_directory"],
            run: |ctx| async move {
                let dir = area(&ctx, "upload-005")?;
                let target = s(&dir);
                refused(&upload(&ctx, &[file("a.txt", b"a")]).await?, 400, "invalid_path", "no path part")?;
                for name in ["../escape.txt", "sub/a.txt", "..", ""] {
                    let resp = upload(&ctx, &[Part::Text("path", &target), file(name, b"a")]).await?;
                    refused(&resp, 400, "invalid_path", name)?;
                }
                refused(&upload(&ctx, &[Part::Text("path", &target)]).await?, 400, "invalid_request", "no file part")?;
                let resp = ctx.send(ctx.request(Method::POST, "/files/upload").header("content-type", "application/json").body("{}")).await?;
                refused(&resp, 400, "invalid_request", "not multipart")?;
                let resp = upload(&ctx, &[Part::Text("path", &s(&dir.join("absent"))), file("a.txt", b"a")]).await?;
                refused(&resp, 404, "not_found", "missing target")?;
                let plain = put(&dir, "plain.txt", "x")?;
                let resp = upload(&ctx, &[Part::Text("path", &s(&plain)), file("a.txt", b"a")]).await?;
                refused(&resp, 400, "not_a_directory", "a file as target")?;
                ensure!(!dir.join("escape.txt").exists() && !dir.parent().unwrap_or(&dir).join("escape.txt").exists(), "nothing escaped");
                Ok(())
            },
        },
        case! {
            id: "files/upload/006",
            spec: "The attack of issue 30: one upload with more file parts than `paths.max_upload_files` (an upload of 10,000 parts made 10,000 files) is 413 `payload_too_large` naming the cap, and leaves nothing written: neither the parts before the cap nor a replaced file; the cap itself is accepted.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_upload"],
            codes: ["payload_too_large"],
            run: |ctx| async move {
                let dir = area(&ctx, "upload-006")?;
                let target = s(&dir);
                put(&dir, "p0.txt", "old")?;
                let names: Vec<String> = (0..=MAX_PARTS).map(|i| format!("p{i}.txt")).collect();
                let mut parts = vec![Part::Text("path", &target)];
                parts.extend(names.iter().map(|n| file(n, b"new")));
                let resp = upload(&ctx, &parts).await?;
                let err = refused(&resp, 413, "payload_too_large", "one part over the cap")?;
                ensure!(err["error"].as_str().is_some_and(|m| m.contains("max_upload_files")), "{err}");
                let left: Vec<_> = std::fs::read_dir(&dir)?.map(|e| e.map(|e| e.file_name())).collect::<Result<_, _>>()?;
                ensure!(left == ["p0.txt"], "a refused upload leaves nothing: {left:?}");
                ensure!(std::fs::read(dir.join("p0.txt"))? == b"old", "the existing file is untouched");
                // The parts before `path` (held in memory) are refused the same way.
                let mut parts: Vec<Part> = names.iter().map(|n| file(n, b"new")).collect();
                parts.push(Part::Text("path", &target));
                refused(&upload(&ctx, &parts).await?, 413, "payload_too_large", "held parts over the cap")?;
                ensure!(std::fs::read_dir(&dir)?.count() == 1, "still nothing written");
                parts.truncate(MAX_PARTS - 1);
                parts.push(Part::Text("path", &target));
                parts.push(file("last.txt", b"new"));
                let resp = upload(&ctx, &parts).await?;
                resp.expect_status(200)?;
                ensure!(resp.json()?["files"].as_array().map(Vec::len) == Some(MAX_PARTS), "the cap itself fits");
                Ok(())
            },
        },
    ]
}
