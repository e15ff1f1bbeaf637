//! PUT /files/content: raw body, atomic, `overwrite` and `parents` (issue 11, wire contract
//! `files_write`; guards `file_exists`, `payload_too_large`).

use super::support::{area, binary, entry_of, names_in, put, read, refused, s, snapshot, write};
use crate::{Case, case, profiles};
use anyhow::{Context, bail, ensure};

/// The `files` profile's per-file limit (`paths.max_file_bytes`).
const MAX_FILE: usize = 4 * 1024 * 1024;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/write/001",
            spec: "files_write: PUT /files/content?path= with a raw body writes the file and answers 200 with its entry info `{name, path, type, size, mode, modified_at}`; binary content is stored byte for byte.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write", "files_read"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "write-001")?;
                let target = dir.join("notes.txt");
                let entry = entry_of(&write(&ctx, &s(&target), "first line\n", "").await?)?;
                ensure!(entry["type"] == "file" && entry["size"] == 11 && entry["name"] == "notes.txt", "{entry}");
                ensure!(entry["path"] == s(&target), "the absolute path written: {entry}");
                ensure!(std::fs::read(&target)? == b"first line\n", "content on disk");
                snapshot(&ctx, "files__write__entry", &entry)?;
                let blob = dir.join("blob.bin");
                let entry = entry_of(&write(&ctx, &s(&blob), binary(), "").await?)?;
                ensure!(entry["size"] == binary().len(), "{entry}");
                ensure!(std::fs::read(&blob)? == binary(), "binary content on disk differs");
                let back = read(&ctx, &s(&blob)).await?;
                back.expect_status(200)?;
                ensure!(back.body[..] == binary()[..], "binary content read back differs");
                let empty = entry_of(&write(&ctx, &s(&dir.join("empty.txt")), "", "").await?)?;
                ensure!(empty["size"] == 0, "{empty}");
                Ok(())
            },
        },
        case! {
            id: "files/write/002",
            spec: "An existing file is replaced unless `overwrite=false`, which is 409 `file_exists` and leaves it unchanged; `overwrite=false` still creates a new file.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write"],
            codes: ["file_exists"],
            run: |ctx| async move {
                let dir = area(&ctx, "write-002")?;
                let file = put(&dir, "keep.txt", "old")?;
                let entry = entry_of(&write(&ctx, &s(&file), "new content", "").await?)?;
                ensure!(entry["size"] == 11 && std::fs::read(&file)? == b"new content", "{entry}");
                let resp = write(&ctx, &s(&file), "third", "&overwrite=false").await?;
                let err = refused(&resp, 409, "file_exists", "overwrite=false on an existing file")?;
                snapshot(&ctx, "files__write__file_exists", &err)?;
                ensure!(std::fs::read(&file)? == b"new content", "left unchanged");
                entry_of(&write(&ctx, &s(&dir.join("fresh.txt")), "x", "&overwrite=false").await?)?;
                entry_of(&write(&ctx, &s(&file), "fourth", "&overwrite=true").await?)?;
                ensure!(std::fs::read(&file)? == b"fourth", "overwrite=true replaces");
                ensure!(names_in(&dir)? == ["fresh.txt", "keep.txt"], "no temp file left: {:?}", names_in(&dir)?);
                Ok(())
            },
        },
        case! {
            id: "files/write/003",
            spec: "A missing parent directory is 404 `not_found` unless `parents=true`, which creates it; writing onto a directory is 400 `is_a_directory`; a bad flag value is 400 `invalid_request`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write"],
            codes: ["not_found", "is_a_directory", "invalid_request"],
            run: |ctx| async move {
                let dir = area(&ctx, "write-003")?;
                let deep = dir.join("a/b/c.txt");
                let resp = write(&ctx, &s(&deep), "deep", "").await?;
                refused(&resp, 404, "not_found", "missing parent")?;
                ensure!(!dir.join("a").exists(), "nothing created");
                let entry = entry_of(&write(&ctx, &s(&deep), "deep", "&parents=true").await?)?;
                ensure!(entry["path"] == s(&deep) && std::fs::read(&deep)? == b"deep", "{entry}");
                let resp = write(&ctx, &s(&dir.join("a")), "onto a dir", "").await?;
                refused(&resp, 400, "is_a_directory", "a directory")?;
                let resp = write(&ctx, &s(&dir.join("x.txt")), "x", "&overwrite=maybe").await?;
                let err = refused(&resp, 400, "invalid_request", "overwrite=maybe")?;
                ensure!(err.to_string().contains("overwrite"), "names the parameter: {err}");
                Ok(())
            },
        },
        case! {
            id: "files/write/004",
            spec: "Writes are atomic (a temp file beside the target, then rename): readers running during repeated 3 MiB writes only ever see the whole old or the whole new content, and no temp file remains.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write", "files_read"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "write-004")?;
                let target = dir.join("big.bin");
                let size = 3 * 1024 * 1024;
                let a = vec![b'a'; size];
                let b = vec![b'b'; size];
                std::fs::write(&target, &a)?;
                let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                let mut readers = Vec::new();
                for _ in 0..3 {
                    let ctx = ctx.clone();
                    let path = s(&target);
                    let done = done.clone();
                    readers.push(tokio::spawn(async move {
                        let mut reads = 0u32;
                        while !done.load(std::sync::atomic::Ordering::Relaxed) || reads == 0 {
                            let resp = read(&ctx, &path).await?;
                            resp.expect_status(200)?;
                            let body = &resp.body[..];
                            let whole = body.len() == size && (body.iter().all(|c| *c == b'a') || body.iter().all(|c| *c == b'b'));
                            if !whole {
                                bail!("a reader saw {} bytes, mixed or cut", body.len());
                            }
                            reads += 1;
                        }
                        Ok(reads)
                    }));
                }
                for round in 0..8 {
                    let content = if round % 2 == 0 { b.clone() } else { a.clone() };
                    entry_of(&write(&ctx, &s(&target), content, "").await?)?;
                }
                done.store(true, std::sync::atomic::Ordering::Relaxed);
                for reader in readers {
                    reader.await.context("reader task")??;
                }
                ensure!(std::fs::read(&target)? == a, "the last write won");
                ensure!(names_in(&dir)? == ["big.bin"], "no temp file left: {:?}", names_in(&dir)?);
                Ok(())
            },
        },
        case! {
            id: "files/write/005",
            spec: "A body over the per-file limit (`paths.max_file_bytes`, here 4 MiB) is 413 `payload_too_large`, with or without Content-Length; nothing is written and no temp file remains; exactly the limit is accepted.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write"],
            codes: ["payload_too_large"],
            run: |ctx| async move {
                let dir = area(&ctx, "write-005")?;
                let over = dir.join("over.bin");
                let resp = write(&ctx, &s(&over), vec![7u8; MAX_FILE + 1], "").await?;
                let err = refused(&resp, 413, "payload_too_large", "declared length over the limit")?;
                snapshot(&ctx, "files__write__payload_too_large", &err)?;
                ensure!(names_in(&dir)?.is_empty(), "nothing written: {:?}", names_in(&dir)?);
                let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..5).map(|_| Ok(vec![1u8; 1024 * 1024])).collect();
                let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
                let resp = write(&ctx, &s(&over), body, "").await?;
                refused(&resp, 413, "payload_too_large", "chunked body over the limit")?;
                ensure!(names_in(&dir)?.is_empty(), "nothing written: {:?}", names_in(&dir)?);
                let fits = dir.join("fits.bin");
                let entry = entry_of(&write(&ctx, &s(&fits), vec![7u8; MAX_FILE], "").await?)?;
                ensure!(entry["size"] == MAX_FILE, "{entry}");
                let existing = put(&dir, "kept.txt", "kept")?;
                let resp = write(&ctx, &s(&existing), vec![7u8; MAX_FILE + 1], "").await?;
                refused(&resp, 413, "payload_too_large", "over the limit onto an existing file")?;
                ensure!(std::fs::read(&existing)? == b"kept", "the existing file is untouched");
                ensure!(names_in(&dir)? == ["fits.bin", "kept.txt"], "no temp file left: {:?}", names_in(&dir)?);
                Ok(())
            },
        },
        case! {
            id: "files/write/006",
            spec: "`sync=true` flushes the written file and its rename to the disk before the answer; the answer and the file are those of any write (and `sync` is a boolean, else 400 `invalid_request`).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_write"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let dir = area(&ctx, "write-006")?;
                let target = dir.join("durable.bin");
                let bytes = binary();
                let entry = entry_of(&write(&ctx, &s(&target), bytes.clone(), "&sync=true").await?)?;
                ensure!(entry["size"] == bytes.len() && std::fs::read(&target)? == bytes, "{entry}");
                ensure!(names_in(&dir)? == ["durable.bin"], "no temp file left: {:?}", names_in(&dir)?);
                let resp = write(&ctx, &s(&target), "x", "&sync=maybe").await?;
                refused(&resp, 400, "invalid_request", "sync=maybe")?;
                ensure!(std::fs::read(&target)? == bytes, "a refused write changes nothing");
                Ok(())
            },
        },
    ]
}
