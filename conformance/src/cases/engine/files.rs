//! Files of a sandbox (spec 4.4): content as raw bytes both ways, list, info,
//! exists, mkdir, move, remove, every path kept inside the sandbox's folder
//! (relative paths start there).

use super::support::{
    check_entry, delete, error_snapshot, expect_error, get, post, q, req, sandbox, sb, sh, snapshot,
};
use crate::{Case, Ctx, Resp, case, profiles, raw_wire};
use anyhow::{Context as _, anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/files/001",
            spec: "PUT .../files/content?path= writes the raw body (any bytes) and answers the file's entry info `{name, path, type, size, mode, modified_at}`; GET .../files/content?path= answers exactly those bytes as `application/octet-stream` with their length (5 MiB too, twice on one connection).",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_write", "files_read"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let bytes: Vec<u8> = (0..=255u8).chain(b"\r\n\0end".iter().copied()).collect();
                let resp = put(&ctx, &id, "data/blob.bin&parents=true", bytes.clone()).await?;
                resp.expect_status(200)?;
                let entry = resp.json()?;
                check_entry(&entry)?;
                ensure!(entry["name"] == "blob.bin" && entry["type"] == "file" && entry["size"] == bytes.len() && entry["path"].as_str().is_some_and(|p| p.ends_with("data/blob.bin")), "{entry}");
                snapshot(&ctx, "engine__files__written", &entry)?;
                let resp = read(&ctx, &id, "data/blob.bin").await?;
                resp.expect_status(200)?;
                ensure!(resp.header("content-type") == Some("application/octet-stream"), "{}", resp.describe());
                ensure!(resp.header("content-length") == Some(bytes.len().to_string().as_str()), "{}", resp.describe());
                ensure!(resp.body.as_ref() == bytes.as_slice(), "the bytes read are the bytes written");
                // A larger body goes through whole however it is moved (streamed, `sendfile`),
                // twice on one kept-alive connection; no zero byte, so no run of zeros could
                // pass for it.
                let big: Vec<u8> = (0..5 * 1024 * 1024 + 7u32).map(|i| (i % 251 + 1) as u8).collect();
                put(&ctx, &id, "big.bin", big.clone()).await?.expect_status(200)?;
                for round in 0..2 {
                    let back = read(&ctx, &id, "big.bin").await?;
                    ensure!(back.status == 200 && back.body.as_ref() == big.as_slice(), "round {round}: 5 MiB round trip ({} bytes back)", back.body.len());
                }
                let empty = put(&ctx, &id, "empty", Vec::new()).await?;
                ensure!(empty.status == 200 && empty.json()?["size"] == 0, "{}", empty.describe());
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/002",
            spec: "`overwrite=false` on a file that exists is 400 `E4004` (the file unchanged), `overwrite=true` replaces it; without `parents=true` a missing parent directory is 404 `E2004`; writing onto a directory is 400 `E4006`.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_write"],
            codes: ["E4004", "E2004", "E4006"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                put(&ctx, &id, "keep.txt", b"first".to_vec()).await?.expect_status(200)?;
                let body = expect_error(&put(&ctx, &id, "keep.txt&overwrite=false", b"second".to_vec()).await?, 400, "E4004")?;
                error_snapshot(&ctx, "engine__files__exists", &body, &[(&id, "[sandbox_id]")])?;
                ensure!(read(&ctx, &id, "keep.txt").await?.body.as_ref() == b"first", "a refused write changes nothing");
                put(&ctx, &id, "keep.txt&overwrite=true", b"third".to_vec()).await?.expect_status(200)?;
                ensure!(read(&ctx, &id, "keep.txt").await?.body.as_ref() == b"third", "overwrite=true replaces it");
                expect_error(&put(&ctx, &id, "no/such/dir/f.txt&parents=false", b"x".to_vec()).await?, 404, "E2004")?;
                post(&ctx, &sb(&id, "/files/mkdir"), &json!({"path": "adir"})).await?.expect_status(200)?;
                expect_error(&put(&ctx, &id, "adir&overwrite=true", b"x".to_vec()).await?, 400, "E4006")?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/003",
            spec: "GET .../files/list?path=&depth= answers `{entries: [entry info...]}` of a directory down to `depth` (1-10, default 1); depth 0 or 11 is 400 `E4001`; listing a file is 400 `E4006`.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_list"],
            codes: ["E4001", "E4006"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                for f in ["t/a.txt", "t/d/b.txt", "t/d/e/c.txt"] {
                    put(&ctx, &id, &format!("{f}&parents=true"), f.as_bytes().to_vec()).await?.expect_status(200)?;
                }
                let list = |query: String| { let (ctx, id) = (ctx.clone(), id.clone()); async move {
                    let resp = get(&ctx, &sb(&id, &format!("/files/list?{query}"))).await?;
                    resp.expect_status(200)?;
                    let body = resp.json()?;
                    ensure!(body.as_object().is_some_and(|m| m.len() == 1), "the answer is `{{entries}}`: {body}");
                    let entries = body["entries"].as_array().cloned().ok_or_else(|| anyhow!("`entries` is a list: {body}"))?;
                    for e in &entries { check_entry(e)?; }
                    Ok::<_, anyhow::Error>(entries)
                }};
                let tails = |entries: &[Value]| -> Vec<String> {
                    let mut t: Vec<String> = entries.iter().filter_map(|e| e["path"].as_str()).map(|p| p.rsplit_once("/t/").map_or(p, |(_, r)| r).to_owned()).collect();
                    t.sort();
                    t
                };
                ensure!(tails(&list("path=t".into()).await?) == ["a.txt", "d"], "depth 1 by default");
                let two = list("path=t&depth=2".into()).await?;
                ensure!(tails(&two) == ["a.txt", "d", "d/b.txt", "d/e"], "depth 2: {:?}", tails(&two));
                ensure!(tails(&list("path=t&depth=10".into()).await?) == ["a.txt", "d", "d/b.txt", "d/e", "d/e/c.txt"], "depth 10 is all");
                let mut sorted = two.clone();
                sorted.sort_by_key(|e| e["path"].as_str().unwrap_or_default().to_owned());
                snapshot(&ctx, "engine__files__list", &json!({"entries": sorted}))?;
                for bad in ["path=t&depth=0", "path=t&depth=11", "path=t&depth=x", "depth=1", "path=t&depth=1&depth=2"] {
                    let resp = get(&ctx, &sb(&id, &format!("/files/list?{bad}"))).await?;
                    let body = expect_error(&resp, 400, "E4001").with_context(|| bad.to_owned())?;
                    if bad == "path=t&depth=11" {
                        error_snapshot(&ctx, "engine__files__depth_refused", &body, &[])?;
                    }
                }
                expect_error(&get(&ctx, &sb(&id, "/files/list?path=t/a.txt")).await?, 400, "E4006")?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/004",
            spec: "GET .../files/info?path= answers the entry info of a file or directory; GET .../files/exists?path= answers `{exists}`, false for a missing path; info of a missing path is 404 `E2004`.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_info", "files_exists"],
            codes: ["E2004"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                put(&ctx, &id, "i/f.txt&parents=true", b"12345".to_vec()).await?.expect_status(200)?;
                let resp = get(&ctx, &sb(&id, "/files/info?path=i/f.txt")).await?;
                resp.expect_status(200)?;
                let file = resp.json()?;
                check_entry(&file)?;
                ensure!(file["name"] == "f.txt" && file["type"] == "file" && file["size"] == 5, "{file}");
                snapshot(&ctx, "engine__files__info", &file)?;
                let dir = get(&ctx, &sb(&id, "/files/info?path=i")).await?.json()?;
                check_entry(&dir)?;
                ensure!(dir["type"] == "dir" && dir["name"] == "i", "{dir}");
                for (path, exists) in [("i/f.txt", true), ("i", true), ("i/nothing", false)] {
                    let resp = get(&ctx, &sb(&id, &format!("/files/exists?path={}", q(path)))).await?;
                    resp.expect_status(200)?;
                    ensure!(resp.json()? == json!({"exists": exists}), "{path}: {}", resp.describe());
                }
                let body = expect_error(&get(&ctx, &sb(&id, "/files/info?path=i/nothing")).await?, 404, "E2004")?;
                error_snapshot(&ctx, "engine__files__not_found", &body, &[(&id, "[sandbox_id]")])?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/005",
            spec: "POST .../files/mkdir `{path, parents?}` makes a directory and answers its entry info; with `parents: false` an existing path is 400 `E4004` and a missing parent 404 `E2004`; an unknown field is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_mkdir"],
            codes: ["E4004", "E2004", "E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let resp = post(&ctx, &sb(&id, "/files/mkdir"), &json!({"path": "m/n/o", "parents": true})).await?;
                resp.expect_status(200)?;
                let entry = resp.json()?;
                check_entry(&entry)?;
                ensure!(entry["type"] == "dir" && entry["name"] == "o", "{entry}");
                snapshot(&ctx, "engine__files__mkdir", &entry)?;
                expect_error(&post(&ctx, &sb(&id, "/files/mkdir"), &json!({"path": "m/n/o", "parents": false})).await?, 400, "E4004")?;
                expect_error(&post(&ctx, &sb(&id, "/files/mkdir"), &json!({"path": "x/y", "parents": false})).await?, 404, "E2004")?;
                expect_error(&post(&ctx, &sb(&id, "/files/mkdir"), &json!({"path": "z", "mode": "0700"})).await?, 400, "E4001")?;
                expect_error(&post(&ctx, &sb(&id, "/files/mkdir"), &json!({})).await?, 400, "E4001")?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/006",
            spec: "POST .../files/move `{from, to, overwrite?}` renames and answers the entry info at the new path; onto an existing path without `overwrite: true` is 400 `E4004`; a missing `from` is 404 `E2004`.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_move"],
            codes: ["E4004", "E2004"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                put(&ctx, &id, "from.txt", b"moving".to_vec()).await?.expect_status(200)?;
                put(&ctx, &id, "there.txt", b"in the way".to_vec()).await?.expect_status(200)?;
                let resp = post(&ctx, &sb(&id, "/files/move"), &json!({"from": "from.txt", "to": "to.txt"})).await?;
                resp.expect_status(200)?;
                let entry = resp.json()?;
                check_entry(&entry)?;
                ensure!(entry["name"] == "to.txt" && entry["size"] == 6, "{entry}");
                snapshot(&ctx, "engine__files__moved", &entry)?;
                ensure!(get(&ctx, &sb(&id, "/files/exists?path=from.txt")).await?.json()? == json!({"exists": false}), "the old path is gone");
                expect_error(&post(&ctx, &sb(&id, "/files/move"), &json!({"from": "to.txt", "to": "there.txt"})).await?, 400, "E4004")?;
                ensure!(read(&ctx, &id, "there.txt").await?.body.as_ref() == b"in the way", "a refused move changes nothing");
                post(&ctx, &sb(&id, "/files/move"), &json!({"from": "to.txt", "to": "there.txt", "overwrite": true})).await?.expect_status(200)?;
                ensure!(read(&ctx, &id, "there.txt").await?.body.as_ref() == b"moving", "overwrite: true replaces it");
                expect_error(&post(&ctx, &sb(&id, "/files/move"), &json!({"from": "never.txt", "to": "x.txt"})).await?, 404, "E2004")?;
                expect_error(&post(&ctx, &sb(&id, "/files/move"), &json!({"from": "there.txt"})).await?, 400, "E4001")?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/007",
            spec: "DELETE .../files?path= removes a file and answers `{path, deleted: true}`; a non-empty directory needs `recursive=true` (else 400 `E4006`); a missing path is 404 `E2004`.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_remove"],
            codes: ["E4006", "E2004"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                put(&ctx, &id, "r/inner/f.txt&parents=true", b"x".to_vec()).await?.expect_status(200)?;
                put(&ctx, &id, "lone.txt", b"x".to_vec()).await?.expect_status(200)?;
                let resp = delete(&ctx, &sb(&id, "/files?path=lone.txt")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["deleted"] == true && body["path"].as_str().is_some_and(|p| p.ends_with("lone.txt")) && body.as_object().is_some_and(|m| m.len() == 2), "{body}");
                snapshot(&ctx, "engine__files__removed", &body)?;
                let err = expect_error(&delete(&ctx, &sb(&id, "/files?path=r")).await?, 400, "E4006")?;
                error_snapshot(&ctx, "engine__files__not_empty", &err, &[(&id, "[sandbox_id]")])?;
                ensure!(get(&ctx, &sb(&id, "/files/exists?path=r/inner/f.txt")).await?.json()? == json!({"exists": true}), "a refused remove removes nothing");
                delete(&ctx, &sb(&id, "/files?path=r&recursive=true")).await?.expect_status(200)?;
                ensure!(get(&ctx, &sb(&id, "/files/exists?path=r")).await?.json()? == json!({"exists": false}), "recursive removes it whole");
                expect_error(&delete(&ctx, &sb(&id, "/files?path=lone.txt")).await?, 404, "E2004")?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/008",
            spec: "A path that leaves the sandbox's folder (`../../etc/passwd`, an absolute path outside it) is 400 `E4005` on every file route, and nothing outside is read or written.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_read", "files_write", "files_list", "files_info", "files_exists", "files_mkdir", "files_move", "files_remove"],
            codes: ["E4005"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                put(&ctx, &id, "inside.txt", b"x".to_vec()).await?.expect_status(200)?;
                let outside = super::support::outside_dir()?;
                let target = outside.path().join("planted.txt");
                let target_s = target.to_string_lossy().into_owned();
                for escape in ["../../etc/passwd", "/etc/passwd", "a/../../../etc/passwd", target_s.as_str()] {
                    let e = q(escape);
                    let tries: Vec<Try> = vec![
                        (Method::GET, format!("/files/content?path={e}"), None, None),
                        (Method::PUT, format!("/files/content?path={e}&overwrite=true"), None, Some(b"planted".to_vec())),
                        (Method::GET, format!("/files/list?path={e}"), None, None),
                        (Method::GET, format!("/files/info?path={e}"), None, None),
                        (Method::GET, format!("/files/exists?path={e}"), None, None),
                        (Method::POST, "/files/mkdir".into(), Some(json!({"path": escape, "parents": true})), None),
                        (Method::POST, "/files/move".into(), Some(json!({"from": "inside.txt", "to": escape})), None),
                        (Method::POST, "/files/move".into(), Some(json!({"from": escape, "to": "stolen.txt"})), None),
                        (Method::DELETE, format!("/files?path={e}"), None, None),
                    ];
                    for (method, rest, json_body, raw) in tries {
                        let mut rb = req(&ctx, method.clone(), &sb(&id, &rest));
                        if let Some(b) = json_body { rb = rb.json(&b); }
                        if let Some(b) = raw { rb = rb.body(b); }
                        let resp = ctx.send(rb).await?;
                        let body = expect_error(&resp, 400, "E4005").with_context(|| format!("{method} {rest} ({escape})"))?;
                        if escape == "../../etc/passwd" && method == Method::GET && rest.starts_with("/files/content") {
                            error_snapshot(&ctx, "engine__files__escape", &body, &[(&id, "[sandbox_id]")])?;
                        }
                    }
                }
                ensure!(!target.exists(), "nothing was written outside the sandbox");
                ensure!(get(&ctx, &sb(&id, "/files/exists?path=inside.txt")).await?.json()? == json!({"exists": true}), "nothing inside was moved out");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/009",
            spec: "A link inside the sandbox that points out of it is no way out: reading or writing through it is 400 `E4005`.",
            profile: &profiles::LOCAL,
            tags: ["feature:files", "feature:commands"],
            endpoints: ["files_read", "files_write"],
            codes: ["E4005"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let outside = super::support::outside_dir()?;
                std::fs::write(outside.path().join("secret.txt"), "outside")?;
                sh(&ctx, &id, &format!("ln -s {} out", crate::launch::shell_quote(&outside.path().to_string_lossy()))).await?;
                expect_error(&read(&ctx, &id, "out/secret.txt").await?, 400, "E4005")?;
                expect_error(&put(&ctx, &id, "out/planted.txt", b"x".to_vec()).await?, 400, "E4005")?;
                ensure!(!outside.path().join("planted.txt").exists(), "nothing was written through the link");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/010",
            spec: "Reading a missing file is 404 `E2004`; reading a directory is 400 `E4006`; a file query without `path`, with it twice or with a parameter it does not know is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_read"],
            codes: ["E2004", "E4006", "E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                post(&ctx, &sb(&id, "/files/mkdir"), &json!({"path": "d"})).await?.expect_status(200)?;
                expect_error(&read(&ctx, &id, "missing.txt").await?, 404, "E2004")?;
                expect_error(&read(&ctx, &id, "d").await?, 400, "E4006")?;
                for bad in ["", "?path=", "?path=a&path=b", "?path=a&colour=red"] {
                    let resp = get(&ctx, &sb(&id, &format!("/files/content{bad}"))).await?;
                    expect_error(&resp, 400, "E4001").with_context(|| bad.to_owned())?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/011",
            spec: "Files and commands share the sandbox's folder: a relative path names the same file for both.",
            profile: &profiles::LOCAL,
            tags: ["feature:files", "feature:commands"],
            endpoints: ["files_write", "files_read", "commands_run"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                put(&ctx, &id, "shared/in.txt&parents=true", b"from files".to_vec()).await?.expect_status(200)?;
                ensure!(sh(&ctx, &id, "cat shared/in.txt; echo from commands > shared/out.txt").await? == "from files", "a command reads what files wrote");
                ensure!(read(&ctx, &id, "shared/out.txt").await?.body.as_ref() == b"from commands\n", "files read what a command wrote");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/012",
            spec: "A request pipelined in the same write right behind a 3 MiB + 11 body is answered as its own (the body ends where its Content-Length says), the file holding exactly the body; a body its client cuts off (half of a declared 3 MiB, then the sending side closed) writes nothing and leaves no temp file.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_write", "files_info", "files_exists", "files_list", "files_read"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let len = 3 * 1024 * 1024 + 11;
                let (answer, body, _) = pipelined_behind_write(&ctx, &id, "piped.bin", len).await?;
                ensure!(answer.matches("HTTP/1.1 200 OK").count() == 2, "two 200 answers: {answer}");
                ensure!(answer.matches(&format!("\"size\":{len}")).count() == 2, "both name the whole size: {answer}");
                written_whole(&ctx, &id, "piped.bin", &body).await?;
                cut_off_write(&ctx, &id, len, &body[..len / 2]).await?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/013",
            spec: "A large body (12 MiB + 5, past any size where an engine may end the connection after a write) lands byte for byte, and the connection stays framed: a request pipelined right behind it is answered as its own, or the write's answer says `Connection: close` and the engine closes after it without answering more (RFC 9112 section 9.6); a large body its client cuts off (10 of a declared 12 MiB) writes nothing and leaves no temp file.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_write", "files_info", "files_exists", "files_list", "files_read"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let len = 12 * 1024 * 1024 + 5;
                let (answer, body, took) = pipelined_behind_write(&ctx, &id, "large.bin", len).await?;
                raw_wire::framed_after_write(&answer, len, took)?;
                written_whole(&ctx, &id, "large.bin", &body).await?;
                cut_off_write(&ctx, &id, 12 * 1024 * 1024, &body[..10 * 1024 * 1024]).await?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/014",
            spec: "A write refused before its body is read (`path=../escape.txt`, 400 `E4005`) never costs the next request on a kept connection: 200 times a refused PUT with a 1-byte body and then `GET /v1/health`, and 200 times with a 100 KB body, lose no answer: either the connection goes on, or the refusal says `Connection: close` and the next request goes on a new one (issue 30, item 5).",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_write", "health"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let health = raw_wire::head(&req(&ctx, Method::GET, "/v1/health").build()?, "").into_bytes();
                for len in [1, 100_000] {
                    let request = req(&ctx, Method::PUT, &sb(&id, "/files/content?path=../escape.txt")).build()?;
                    let mut refused = raw_wire::head(&request, &format!("Content-Length: {len}\r\n")).into_bytes();
                    refused.extend(std::iter::repeat_n(b'x', len));
                    let lost = raw_wire::lost_after_refusals(ctx.base_url(), &refused, 400, &health, 200).await?;
                    ensure!(lost == 0, "{lost} of 400 requests got no answer after refused {len}-byte writes");
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/015",
            spec: "A trailing `/` names a directory, as the kernel reads it: of a file `a.txt`, `files/info` and `DELETE .../files` of `a.txt/`, and a move from it, are 400 `E4006`, `files/exists` answers false; `a.txt` is untouched.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_info", "files_exists", "files_remove", "files_move"],
            codes: ["E4006"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                put(&ctx, &id, "a.txt", b"inside".to_vec()).await?.expect_status(200)?;
                expect_error(&get(&ctx, &sb(&id, "/files/info?path=a.txt/")).await?, 400, "E4006").context("info a.txt/")?;
                let resp = get(&ctx, &sb(&id, "/files/exists?path=a.txt/")).await?;
                ensure!(resp.status == 200 && resp.json()? == json!({"exists": false}), "exists a.txt/: {}", resp.describe());
                expect_error(&delete(&ctx, &sb(&id, "/files?path=a.txt/")).await?, 400, "E4006").context("delete a.txt/")?;
                expect_error(&post(&ctx, &sb(&id, "/files/move"), &json!({"from": "a.txt/", "to": "b.txt"})).await?, 400, "E4006").context("move a.txt/")?;
                ensure!(read(&ctx, &id, "a.txt").await?.body.as_ref() == b"inside", "a.txt is untouched");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/files/016",
            spec: "PUT .../files/content?metadata= (a JSON object of string values, as URL-encoded JSON text) keeps it with the file: the write's entry info, `files/info` and `files/list` answer it as `metadata` (absent when there is none); a write without it leaves the file none; a key that breaks the rules (empty, not printable ASCII) is 400 `E4001` and writes nothing. A provider that keeps no metadata refuses it (`E8004`) before it writes. Entry info names the owner and the group as the sandbox sees them: `user` for what the API made, where the provider has owners.",
            profile: &profiles::LOCAL,
            tags: ["feature:files"],
            endpoints: ["files_write", "files_info", "files_list"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let tags = json!({"owner": "me", "stage": "draft 2"});
                let asked = format!("tagged.txt&metadata={}", q(&tags.to_string()));
                let resp = put(&ctx, &id, &asked, b"x".to_vec()).await?;
                // The example plugin keeps plain files: it refuses, and nothing is written.
                if ctx.provider() == Some("dir") {
                    expect_error(&resp, 501, "E8004")?;
                    let exists = get(&ctx, &sb(&id, "/files/exists?path=tagged.txt")).await?.json()?;
                    ensure!(exists["exists"] == false, "a refused write leaves nothing: {exists}");
                    super::support::kill(&ctx, &id).await;
                    return Ok(());
                }
                resp.expect_status(200)?;
                let written = resp.json()?;
                check_entry(&written)?;
                ensure!(written["metadata"] == tags, "the write answers its metadata: {written}");
                let info = get(&ctx, &sb(&id, "/files/info?path=tagged.txt")).await?.json()?;
                ensure!(info["metadata"] == tags, "files/info answers it: {info}");
                let listed = get(&ctx, &sb(&id, "/files/list?path=.")).await?.json()?;
                let entry = listed["entries"].as_array().and_then(|a| a.iter().find(|e| e["name"] == "tagged.txt")).cloned().unwrap_or_default();
                ensure!(entry["metadata"] == tags, "files/list answers it: {listed}");
                // Who owns it, as the sandbox names its users; a provider without owners
                // (memory) leaves both out.
                for key in ["owner", "group"] {
                    ensure!(info.get(key).is_none_or(|v| v == "user"), "`{key}` is `user`: {info}");
                }
                ensure!(info.get("owner").is_some() || ctx.provider() == Some("memory"), "local names the owner: {info}");
                let plain = put(&ctx, &id, "tagged.txt", b"y".to_vec()).await?.json()?;
                ensure!(plain.get("metadata").is_none(), "a write without metadata leaves none: {plain}");
                for bad in [json!({"": "v"}), json!({"k": "tab\there"}), json!({"k": 1})] {
                    let asked = format!("bad.txt&metadata={}", q(&bad.to_string()));
                    expect_error(&put(&ctx, &id, &asked, b"x".to_vec()).await?, 400, "E4001").with_context(|| format!("metadata {bad}"))?;
                }
                let exists = get(&ctx, &sb(&id, "/files/exists?path=bad.txt")).await?.json()?;
                ensure!(exists["exists"] == false, "a refused write leaves nothing: {exists}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}

/// A write of `len` patterned bytes to `name` with `GET .../files/info` of it pipelined right
/// behind the body (`Connection: close`), all in one write to a fresh connection: what the
/// engine sent until it closed, the body, and how long that took.
async fn pipelined_behind_write(
    ctx: &Ctx,
    id: &str,
    name: &str,
    len: usize,
) -> anyhow::Result<(String, Vec<u8>, std::time::Duration)> {
    let body: Vec<u8> = (0..len as u32).map(|i| (i % 251 + 1) as u8).collect();
    let head_of = |method: Method, route: &str, extra: String| -> anyhow::Result<String> {
        let request = req(ctx, method, &sb(id, &format!("{route}?path={name}"))).build()?;
        Ok(raw_wire::head(&request, &extra))
    };
    let mut wire = head_of(Method::PUT, "/files/content", format!("Content-Length: {len}\r\n"))?.into_bytes();
    wire.extend_from_slice(&body);
    wire.extend_from_slice(head_of(Method::GET, "/files/info", "Connection: close\r\n".to_owned())?.as_bytes());
    let started = std::time::Instant::now();
    let answer = raw_wire::exchange(ctx.base_url(), wire, false).await?;
    Ok((answer, body, started.elapsed()))
}

/// `name` reads back as exactly `body`.
async fn written_whole(ctx: &Ctx, id: &str, name: &str, body: &[u8]) -> anyhow::Result<()> {
    let back = read(ctx, id, name).await?;
    ensure!(back.status == 200 && back.body.as_ref() == body, "the file is the body ({} bytes back)", back.body.len());
    Ok(())
}

/// A write to `cut.bin` declaring `declared` bytes whose client sends `sent` and closes its
/// sending side: no 200, and (once the provider noticed) neither the file nor a temp file
/// beside it (any name the provider gives one).
async fn cut_off_write(ctx: &Ctx, id: &str, declared: usize, sent: &[u8]) -> anyhow::Result<()> {
    let request = req(ctx, Method::PUT, &sb(id, "/files/content?path=cut.bin")).build()?;
    let mut wire = raw_wire::head(&request, &format!("Content-Length: {declared}\r\n")).into_bytes();
    wire.extend_from_slice(sent);
    let answer = raw_wire::exchange(ctx.base_url(), wire, true).await?;
    ensure!(!answer.contains(" 200 "), "a cut-off body is no write: {answer}");
    super::support::eventually(CUT_OFF_SETTLES, "no trace of the cut-off write", || async {
        let exists = get(ctx, &sb(id, "/files/exists?path=cut.bin")).await?.json()?;
        let listed = get(ctx, &sb(id, "/files/list?path=.")).await?.json()?;
        let names: Vec<String> = listed["entries"].as_array().map(|a| a.iter().filter_map(|e| e["name"].as_str().map(str::to_owned)).collect()).unwrap_or_default();
        Ok((exists["exists"] == false && names.iter().all(|n| !n.contains("cut") && !n.starts_with(".svc-write-"))).then_some(()))
    })
    .await
}

/// How long a provider may take to clear away a write whose body was cut off: it notices
/// when the engine's body read fails, a moment after the client gave up, and a plugin
/// provider only when the engine's cancel reaches it behind whatever else is queued for it
/// (another case's large body). Generous: the wait ends as soon as the trace is gone.
const CUT_OFF_SETTLES: std::time::Duration = std::time::Duration::from_secs(10);

/// A request of the escape case: method, path after the sandbox, a JSON body or raw bytes.
type Try = (Method, String, Option<Value>, Option<Vec<u8>>);

/// `PUT .../files/content?path=<path_and_query>` with a raw body.
async fn put(ctx: &Ctx, id: &str, path_and_query: &str, body: Vec<u8>) -> anyhow::Result<Resp> {
    let rb = req(
        ctx,
        Method::PUT,
        &sb(id, &format!("/files/content?path={path_and_query}")),
    )
    .header("content-type", "application/octet-stream")
    .body(body);
    ctx.send(rb).await
}

/// `GET .../files/content?path=`.
async fn read(ctx: &Ctx, id: &str, path: &str) -> anyhow::Result<Resp> {
    get(ctx, &sb(id, &format!("/files/content?path={}", q(path)))).await
}
