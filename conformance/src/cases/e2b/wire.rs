//! envd's wire (`E2B_SANDBOX_URL`): the Connect protocol with the JSON codec, a
//! sandbox named by `E2b-Sandbox-Id` and opened by its `X-Access-Token`.

use super::support::{END, Front, connect_error, envelope, stream};
use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use base64::Engine as _;
use serde_json::{Value, json};

fn start(cmd: &str) -> Value {
    json!({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}})
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "e2b/wire/001",
            spec: "A server stream (`process.Process/Start`) answers 200 `application/connect+json` in envelopes: `start` with the pid, `data` with the output as base64, `end` with the exit code, then one end frame (flag 2) `{}`; a request field the front does not know is ignored.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_process_start"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let mut request = start("echo hi; exit 3");
                request["aFieldFromTheFuture"] = json!(true);
                let (status, frames) = stream(&front, front.envd(&made, "/process.Process/Start"), &envelope(0, &request)).await?;
                ensure!(status == 200, "status {status}");
                let events: Vec<&Value> = frames.iter().filter(|(f, _)| f & END == 0).map(|(_, v)| &v["event"]).collect();
                ensure!(events.first().is_some_and(|e| e["start"]["pid"].as_u64().is_some_and(|p| p > 0)), "{frames:?}");
                let stdout: Vec<u8> = events.iter().filter_map(|e| e["data"]["stdout"].as_str())
                    .flat_map(|b| base64::engine::general_purpose::STANDARD.decode(b).unwrap_or_default()).collect();
                ensure!(stdout == b"hi\n", "stdout {stdout:?}");
                let end = events.iter().find(|e| e.get("end").is_some()).ok_or_else(|| anyhow!("no end event: {frames:?}"))?;
                ensure!(end["end"]["exitCode"] == 3 && end["end"]["exited"] == true, "{end}");
                ensure!(frames.last().is_some_and(|(_, v)| *v == json!({})), "{frames:?}");
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/002",
            spec: "A stream that fails still answers 200, its error in the end frame `{\"error\": {code, message}}`: `Connect` to a pid that does not exist is `not_found`; a truncated envelope is `invalid_argument`, a compressed one `unimplemented`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_process_connect", "e2b_process_start"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let missing = envelope(0, &json!({"process": {"pid": 4_000_000}}));
                let mut truncated = envelope(0, &start("true"));
                truncated.truncate(truncated.len() - 2);
                let mut compressed = envelope(0, &start("true"));
                compressed[0] = 0x01;
                for (method, body, want) in [
                    ("/process.Process/Connect", missing, "not_found"),
                    ("/process.Process/Start", truncated, "invalid_argument"),
                    ("/process.Process/Start", compressed, "unimplemented"),
                ] {
                    let (status, frames) = stream(&front, front.envd(&made, method), &body).await?;
                    ensure!(status == 200, "{method}: status {status}");
                    ensure!(frames.len() == 1, "{method}: {frames:?}");
                    let (code, _) = connect_error(&frames[0].1["error"])?;
                    ensure!(code == want, "{method}: `{code}`, want `{want}`");
                }
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/003",
            spec: "A unary call answers `application/json`; its errors have the code's HTTP status and `{code: \"not_found\", message}`: `Stat` of a missing path 404 `not_found`, a body that is not JSON 400 `invalid_argument`, a `SendSignal` of an unknown signal 400; unknown fields are ignored.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_fs_stat", "e2b_process_send_signal", "e2b_fs_list_dir"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let (status, body) = front.unary(&made, "/filesystem.Filesystem/Stat", &json!({"path": "/tmp/no-such-file", "future": 1})).await?;
                ensure!(status == 404 && connect_error(&body)?.0 == "not_found", "{status} {body}");
                let resp = ctx.send(front.envd(&made, "/filesystem.Filesystem/Stat").header("content-type", "application/json").body("{nope")).await?;
                ensure!(resp.status == 400 && connect_error(&resp.json()?)?.0 == "invalid_argument", "{} {}", resp.status, resp.text());
                let (status, body) = front.unary(&made, "/process.Process/SendSignal", &json!({"process": {"pid": 1}, "signal": "SIGNAL_SIGHUP"})).await?;
                ensure!(status == 400 && connect_error(&body)?.0 == "invalid_argument", "{status} {body}");
                let (status, body) = front.unary(&made, "/filesystem.Filesystem/ListDir", &json!({"path": "/tmp", "depth": 1, "unknownField": "x"})).await?;
                ensure!(status == 200 && body["entries"].is_array(), "{status} {body}");
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/004",
            spec: "int64 fields are JSON strings (proto3 JSON): an entry's `size` from `Stat` is `\"5\"` for a file of 5 bytes written through `POST /files`; `mode` (uint32) is a number.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_files_write", "e2b_fs_stat"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let path = "/tmp/five.txt";
                let written = ctx.send(front.envd(&made, &format!("/files?path={path}")).header("content-type", "application/octet-stream").body("12345")).await?;
                written.expect_status(200)?;
                let (status, body) = front.unary(&made, "/filesystem.Filesystem/Stat", &json!({"path": path})).await?;
                ensure!(status == 200, "{status} {body}");
                ensure!(body["entry"]["size"] == json!("5"), "size is not the string \"5\": {body}");
                ensure!(body["entry"]["mode"].is_u64() && body["entry"]["type"] == "FILE_TYPE_FILE", "{body}");
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/005",
            spec: "A quiet stream gets keep-alive messages (`{\"event\": {\"keepalive\": {}}}`) at the `Keepalive-Ping-Interval` the client asks for, before its end.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_process_start"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let rb = front.envd(&made, "/process.Process/Start").header("keepalive-ping-interval", "0.2");
                let (_, frames) = stream(&front, rb, &envelope(0, &start("sleep 1.2"))).await?;
                let pings = frames.iter().filter(|(_, v)| v["event"].get("keepalive").is_some()).count();
                ensure!(pings >= 2, "{pings} keep-alives in a 1.2 s quiet stream at 0.2 s: {frames:?}");
                let end = frames.iter().position(|(_, v)| v["event"].get("end").is_some()).ok_or_else(|| anyhow!("no end"))?;
                ensure!(end == frames.len() - 2, "the end event is not just before the end frame: {frames:?}");
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/006",
            spec: "envd refuses a missing or wrong `X-Access-Token` (another sandbox's included), and the right one sent twice, with 401 `unauthenticated` on a unary call and 401 `{code: 401}` on `/files`; `/health` answers 204 without one while the sandbox runs and 502 \"was not found\" once it is killed.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_fs_stat", "e2b_files_write", "e2b_health", "e2b_sandboxes_kill"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let other = front.create().await?;
                for token in [None, Some("wrong"), Some(other.token.as_str())] {
                    let (status, body) = front.unary_as(&made.id, token, "/filesystem.Filesystem/Stat", &json!({"path": "/"})).await?;
                    ensure!(status == 401 && connect_error(&body)?.0 == "unauthenticated", "{token:?}: {status} {body}");
                    let files = ctx.send(front.envd_as(&made.id, token, "/files?path=/etc/hostname").header("content-type", "application/octet-stream").body("x")).await?;
                    ensure!(files.status == 401 && files.json()?["code"] == 401, "{token:?}: {} {}", files.status, files.text());
                }
                // The right token sent twice is no token: which copy a proxy acts on is anyone's guess.
                let twice = front.envd(&made, "/filesystem.Filesystem/Stat").header("x-access-token", &made.token).header("content-type", "application/json").body(json!({"path": "/"}).to_string());
                let twice = ctx.send(twice).await?;
                let body = twice.json()?;
                ensure!(twice.status == 401 && connect_error(&body)? == ("unauthenticated", "more than one `X-Access-Token`: send the token once"), "Stat with the token twice: {} {body}", twice.status);
                let twice = ctx.send(front.envd(&made, "/files?path=/tmp/twice").header("x-access-token", &made.token).header("content-type", "application/octet-stream").body("x")).await?;
                ensure!(twice.status == 401 && twice.json()?["code"] == 401, "/files with the token twice: {} {}", twice.status, twice.text());
                ctx.send(front.health(&made.id)).await?.expect_status(204)?;
                ctx.send(front.control(reqwest::Method::DELETE, &format!("/sandboxes/{}", made.id))).await?.expect_status(204)?;
                let gone = ctx.send(front.health(&made.id)).await?;
                ensure!(gone.status == 502 && gone.text().contains("was not found"), "{} {}", gone.status, gone.text());
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/007",
            spec: "The code interpreter's `/contexts` and `/contexts/{id}` answer without a token (the SDK sends none there), but refuse a token that is present and wrong (another sandbox's included) with 401; any other path of that port (`/contextsX`, `/execute`) needs the sandbox's own token, and a path that climbs out of `/contexts/` runs nothing.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_code_contexts_list", "e2b_code_contexts_create", "e2b_code_contexts_delete", "e2b_code_execute"],
            codes: [],
            run: |ctx| async move {
                use reqwest::Method;
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let other = front.create().await?;
                let listed = ctx.send(front.code_as(Method::GET, &made.id, None, "/contexts")).await?;
                ensure!(listed.status == 200, "no token: {} {}", listed.status, listed.text());
                for token in [Some("wrong"), Some(other.token.as_str())] {
                    let resp = ctx.send(front.code_as(Method::GET, &made.id, token, "/contexts")).await?;
                    ensure!(resp.status == 401, "{token:?} on /contexts: {} {}", resp.status, resp.text());
                    let resp = ctx.send(front.code_as(Method::POST, &made.id, token, "/contexts").json(&json!({"language": "python"}))).await?;
                    ensure!(resp.status == 401, "{token:?} creating a context: {} {}", resp.status, resp.text());
                    let resp = ctx.send(front.code_as(Method::DELETE, &made.id, token, "/contexts/some-context")).await?;
                    ensure!(resp.status == 401, "{token:?} on /contexts/some-context: {} {}", resp.status, resp.text());
                }
                for token in [None, Some("wrong")] {
                    let resp = ctx.send(front.code_as(Method::GET, &made.id, token, "/contextsX")).await?;
                    ensure!(resp.status == 401, "{token:?} on /contextsX: {} {}", resp.status, resp.text());
                    let resp = ctx.send(front.code_as(Method::POST, &made.id, token, "/execute").json(&json!({"code": "1"}))).await?;
                    ensure!(resp.status == 401, "{token:?} on /execute: {} {}", resp.status, resp.text());
                    for path in ["/contexts/../execute", "/contexts/%2e%2e/execute"] {
                        let resp = ctx.send(front.code_as(Method::POST, &made.id, token, path).json(&json!({"code": "1"}))).await?;
                        ensure!(resp.status != 200, "{token:?} on {path}: {} {}", resp.status, resp.text());
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/008",
            spec: "A sandbox that is gone is answered as E2B answers it on each of its doors, from one error table: a Connect call (`Stat`) 503 `unavailable`, `/files` and the code interpreter's `/contexts` 502 `{code: 502}`, each saying \"The sandbox ID was not found\"; the control plane 404 saying it \"doesn't exist\".",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_sandboxes_kill", "e2b_fs_stat", "e2b_files_read", "e2b_code_contexts_list", "e2b_sandboxes_info"],
            codes: [],
            run: |ctx| async move {
                use reqwest::Method;
                let (front, made) = Front::with_sandbox(&ctx).await?;
                ctx.send(front.control(Method::DELETE, &format!("/sandboxes/{}", made.id))).await?.expect_status(204)?;
                let gone = format!("The sandbox {} was not found", made.id);
                let (status, body) = front.unary(&made, "/filesystem.Filesystem/Stat", &json!({"path": "/"})).await?;
                ensure!(status == 503 && connect_error(&body)? == ("unavailable", gone.as_str()), "Stat: {status} {body}");
                let files = ctx.send(front.port_as(Method::GET, "49983", &made.id, Some(&made.token), "/files?path=/etc/hostname")).await?;
                let contexts = ctx.send(front.code_as(Method::GET, &made.id, Some(&made.token), "/contexts")).await?;
                for (what, resp) in [("/files", files), ("/contexts", contexts)] {
                    let body = resp.json()?;
                    ensure!(resp.status == 502 && body == json!({"code": 502, "message": gone}), "{what}: {} {body}", resp.status);
                }
                let detail = ctx.send(front.control(Method::GET, &format!("/sandboxes/{}", made.id))).await?;
                let body = detail.json()?;
                ensure!(detail.status == 404 && body["code"] == 404, "detail: {} {body}", detail.status);
                ensure!(body["message"].as_str().is_some_and(|m| m.contains("doesn't exist")), "detail: {body}");
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/009",
            spec: "An envd write refused before its body is read (`POST /files` without `X-Access-Token`, 401) never costs the next request on a kept connection: 200 times the refused write with a 1-byte body and then `GET /health`, and 200 times with a 100 KB body, lose no answer: either the connection goes on, or the refusal says `Connection: close` and the next request goes on a new one (as engine/files/014 on the engine's port).",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_files_write", "e2b_health"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let health = front.health(&made.id).build()?;
                let health = crate::raw_wire::head(&health, "").into_bytes();
                for len in [1, 100_000] {
                    let write = front.envd_as(&made.id, None, "/files?path=/tmp/refused.bin").header("content-type", "application/octet-stream").build()?;
                    let mut refused = crate::raw_wire::head(&write, &format!("Content-Length: {len}\r\n")).into_bytes();
                    refused.extend(std::iter::repeat_n(b'x', len));
                    let lost = crate::raw_wire::lost_after_refusals(&front.url, &refused, 401, &health, 200).await?;
                    ensure!(lost == 0, "{lost} of 400 requests lost after refused {len}-byte writes");
                }
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/010",
            spec: "A request names its sandbox clearly or is refused before any token is asked: an `E2b-Sandbox-Id` or `E2b-Sandbox-Port` sent twice, empty or not text is 400 `{code: 400}` naming the header (never taken for a control-plane call, whose key it carries); a port the front does not serve is 502 naming the port.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: [],
            codes: [],
            run: |ctx| async move {
                use reqwest::Method;
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let not_text = reqwest::header::HeaderValue::from_bytes(b"sb\xff").map_err(|e| anyhow!("{e}"))?;
                let unclear = [
                    ("e2b-sandbox-id", front.control(Method::GET, "/v2/sandboxes").header("e2b-sandbox-id", not_text)),
                    ("e2b-sandbox-id", front.control(Method::GET, "/v2/sandboxes").header("e2b-sandbox-id", "")),
                    ("e2b-sandbox-id", front.envd(&made, "/filesystem.Filesystem/Stat").header("e2b-sandbox-id", &made.id).header("content-type", "application/json").body(json!({"path": "/"}).to_string())),
                    ("e2b-sandbox-port", front.envd(&made, "/filesystem.Filesystem/Stat").header("e2b-sandbox-port", "49983").header("content-type", "application/json").body(json!({"path": "/"}).to_string())),
                ];
                for (header, request) in unclear {
                    let resp = ctx.send(request).await?;
                    let body = resp.json()?;
                    ensure!(resp.status == 400 && body["code"] == 400, "{header}: {} {body}", resp.status);
                    ensure!(body["message"].as_str().is_some_and(|m| m.contains(header)), "{header}: {body}");
                }
                let closed = ctx.send(front.port_as(Method::GET, "8080", &made.id, Some(&made.token), "/health")).await?;
                let body = closed.json()?;
                ensure!(closed.status == 502 && body["message"].as_str().is_some_and(|m| m.contains("port 8080")), "port 8080: {} {body}", closed.status);
                Ok(())
            },
        },
        case! {
            id: "e2b/wire/011",
            spec: "`POST /files` takes a raw body sent gzip-compressed (`Content-Encoding: gzip`, the SDKs' `gzip=True`) and writes the inflated bytes; a body that is not gzip after all is 400 `{code: 400}` and writes nothing; another encoding (`br`) is 415.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_files_write", "e2b_files_read"],
            codes: [],
            run: |ctx| async move {
                use std::io::Write as _;
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let plain: Vec<u8> = b"inflated on the way in\n".repeat(10_000);
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                gz.write_all(&plain)?;
                let zipped = gz.finish()?;
                let write = |path: &str, encoding: &str, body: Vec<u8>| {
                    front.envd(&made, &format!("/files?path={path}")).header("content-type", "application/octet-stream").header("content-encoding", encoding).body(body)
                };
                let written = ctx.send(write("/home/user/zipped.txt", "gzip", zipped)).await?;
                ensure!(written.status == 200, "gzip upload: {} {}", written.status, written.text());
                let read = ctx.send(front.port_as(reqwest::Method::GET, "49983", &made.id, Some(&made.token), "/files?path=/home/user/zipped.txt")).await?;
                ensure!(read.status == 200 && read.body[..] == plain[..], "read back: {} ({} bytes, {} expected)", read.status, read.body.len(), plain.len());
                let corrupt = ctx.send(write("/home/user/corrupt.txt", "gzip", b"not gzip at all".to_vec())).await?;
                let body = corrupt.json()?;
                ensure!(corrupt.status == 400 && body["code"] == 400, "a body that is not gzip: {} {body}", corrupt.status);
                let brotli = ctx.send(write("/home/user/brotli.txt", "br", b"x".to_vec())).await?;
                ensure!(brotli.status == 415 && brotli.json()?["code"] == 415, "br: {} {}", brotli.status, brotli.text());
                for path in ["/home/user/corrupt.txt", "/home/user/brotli.txt"] {
                    let gone = ctx.send(front.port_as(reqwest::Method::GET, "49983", &made.id, Some(&made.token), &format!("/files?path={path}"))).await?;
                    ensure!(gone.status == 404, "{path} was written: {} {}", gone.status, gone.text());
                }
                Ok(())
            },
        },
    ]
}
