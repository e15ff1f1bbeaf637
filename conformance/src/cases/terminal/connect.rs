//! pty_connect: GET /pty/{id}/connect on the terminal port (issue 12): bytes both ways in
//! binary frames, the replay buffer first, several clients at once, the close when the
//! shell exits, and the token only in a header.

use super::support::{
    ALICE, TERMINAL, attach, call, id_of, read_to_close, read_until, refused, terminal, type_line,
};
use crate::{Case, case};
use anyhow::ensure;
use futures::SinkExt;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "terminal/connect/001",
            spec: "Output produced while nobody is attached is kept in a bounded buffer and replayed on attach, before live output.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_connect"],
            codes: [],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let mut first = attach(&ctx, &id, ALICE).await?;
                type_line(&mut first, "sleep 1; printf '%s-%s\\n' made alone").await?;
                first.close(None).await?;
                drop(first);
                tokio::time::sleep(Duration::from_millis(2500)).await;
                let got = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}"), None).await?.json()?;
                ensure!(got["clients"] == 0, "nobody attached while the output was made: {got}");
                let mut late = attach(&ctx, &id, ALICE).await?;
                read_until(&mut late, b"made-alone").await?;
                type_line(&mut late, "printf '%s-%s\\n' then live").await?;
                read_until(&mut late, b"then-live").await?;
                Ok(())
            },
        },
        case! {
            id: "terminal/connect/002",
            spec: "Several clients may attach at once: each sees all the output, and input from either reaches the shell.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_connect"],
            codes: [],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let mut a = attach(&ctx, &id, ALICE).await?;
                let mut b = attach(&ctx, &id, ALICE).await?;
                type_line(&mut a, "printf '%s-%s\\n' from a").await?;
                read_until(&mut a, b"from-a").await?;
                read_until(&mut b, b"from-a").await?;
                type_line(&mut b, "printf '%s-%s\\n' from b").await?;
                read_until(&mut a, b"from-b").await?;
                read_until(&mut b, b"from-b").await?;
                Ok(())
            },
        },
        case! {
            id: "terminal/connect/003",
            spec: "Output bytes arrive exactly as the program wrote them, non-UTF-8 included (binary frames, never decoded).",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_connect"],
            codes: [],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let mut ws = attach(&ctx, &id, ALICE).await?;
                type_line(&mut ws, "printf '<\\377\\376\\000\\201>'").await?;
                read_until(&mut ws, b"<\xff\xfe\x00\x81>").await?;
                Ok(())
            },
        },
        case! {
            id: "terminal/connect/004",
            spec: "When the shell exits, attached clients get the remaining output and then a close frame (1000, saying how it exited); the terminal is gone.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_connect", "pty_get"],
            codes: ["not_found"],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let mut ws = attach(&ctx, &id, ALICE).await?;
                type_line(&mut ws, "printf '%s-%s' last words; exit 3").await?;
                let read = read_to_close(&mut ws).await?;
                ensure!(read.has(b"last-words"), "the last output before the close: {:?}", read.text());
                let (code, reason) = read.close.clone().unwrap_or_default();
                ensure!(code == 1000 && reason.contains('3'), "{code} {reason:?}");
                ctx.snapshot("terminal__exit_close", &json!({"code": code, "reason": reason}))?;
                let after = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}"), None).await?;
                refused(&after, 404, "not_found", None)?;
                Ok(())
            },
        },
        case! {
            id: "terminal/connect/005",
            spec: "A text frame other than a resize gets a close frame with a reason (1003; a size out of range 1007); the terminal itself goes on.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_connect"],
            codes: [],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                for (text, want) in [("ls -la\n", 1003u16), (r#"{"type":"resize","cols":0,"rows":5}"#, 1007)] {
                    let mut ws = attach(&ctx, &id, ALICE).await?;
                    ws.send(Message::Text(text.into())).await?;
                    let read = read_to_close(&mut ws).await?;
                    let (code, reason) = read.close.clone().unwrap_or_default();
                    ensure!(code == want && !reason.is_empty(), "{text:?}: {code} {reason:?}");
                    if want == 1003 {
                        ctx.snapshot("terminal__text_frame_close", &json!({"code": code, "reason": reason}))?;
                    }
                }
                let got = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}"), None).await?;
                got.expect_status(200)?;
                let mut ws = attach(&ctx, &id, ALICE).await?;
                type_line(&mut ws, "printf '%s-%s\\n' still here").await?;
                read_until(&mut ws, b"still-here").await?;
                Ok(())
            },
        },
        case! {
            id: "terminal/connect/006",
            spec: "The token travels in the `Authorization` or `X-Access-Token` header, never the query string: without a header the handshake is 401 `unauthorized`, even with `?token=` or `?access_token=` holding a valid token.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_connect"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let path = format!("/pty/{id}/connect");
                for query in ["", "?token=alice-token", "?access_token=alice-token"] {
                    let resp = ctx.ws_terminal_refused(&format!("{path}{query}"), &[]).await?;
                    let err = refused(&resp, 401, "unauthorized", None)?;
                    if query.is_empty() {
                        ctx.snapshot("terminal__unauthorized", &err)?;
                    }
                }
                let resp = ctx.ws_terminal_refused(&path, &[("authorization", "Bearer wrong-token")]).await?;
                refused(&resp, 401, "unauthorized", None)?;
                let mut ws = ctx.ws_terminal(&path, &[("x-access-token", ALICE)]).await?;
                type_line(&mut ws, "printf '%s-%s\\n' header works").await?;
                read_until(&mut ws, b"header-works").await?;
                Ok(())
            },
        },
        case! {
            id: "terminal/connect/007",
            spec: "The terminal port serves only pty_connect, and the main port does not serve it; a plain GET without the WebSocket handshake is 400 `invalid_request`.",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_connect"],
            codes: ["invalid_request", "not_found"],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let on_main = call(&ctx, ALICE, Method::GET, &format!("/pty/{id}/connect"), None).await?;
                refused(&on_main, 404, "not_found", None)?;
                let client = ctx.client();
                let terminal_url = ctx.terminal_url()?.to_string();
                let plain = ctx.send(client.get(format!("{terminal_url}/pty/{id}/connect")).bearer_auth(ALICE)).await?;
                refused(&plain, 400, "invalid_request", None)?;
                let list_there = ctx.send(client.get(format!("{terminal_url}/pty")).bearer_auth(ALICE)).await?;
                refused(&list_there, 404, "not_found", None)?;
                Ok(())
            },
        },
        case! {
            id: "terminal/connect/008",
            spec: "A handshake carrying an `Origin` (a web page: a browser sends one on every WebSocket, and lets any page open one to any host) is 403 `origin_refused` before any terminal is looked up, whatever the origin, even with a good token; the same handshake without `Origin` attaches (issue 30, item 7).",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: ["pty_connect"],
            codes: ["origin_refused"],
            run: |ctx| async move {
                let id = id_of(&terminal(&ctx, json!({})).await?);
                let path = format!("/pty/{id}/connect");
                let bearer = format!("Bearer {ALICE}");
                let own = ctx.terminal_url()?.to_owned();
                for origin in ["https://evil.example", own.as_str(), "null"] {
                    let resp = ctx.ws_terminal_refused(&path, &[("authorization", &bearer), ("origin", origin)]).await?;
                    refused(&resp, 403, "origin_refused", None)?;
                }
                let resp = ctx.ws_terminal_refused("/pty/no-such-terminal/connect", &[("authorization", &bearer), ("origin", "https://evil.example")]).await?;
                refused(&resp, 403, "origin_refused", None)?;
                let mut ws = attach(&ctx, &id, ALICE).await?;
                type_line(&mut ws, "printf '%s-%s\\n' no origin").await?;
                read_until(&mut ws, b"no-origin").await?;
                Ok(())
            },
        },
        case! {
            id: "terminal/connect/009",
            spec: "A request with a body that the terminal port refuses before reading it (`POST /pty`, which only the main port serves: 404) never costs the next request on a kept connection: 200 times the refused POST with a 1-byte body and then `GET /pty`, and 200 times with a 100 KB body, lose no answer: either the connection goes on, or the refusal says `Connection: close` and the next request goes on a new one (as files/write_large/004 on the main port).",
            profile: &TERMINAL,
            tags: ["needs:terminal-port"],
            endpoints: [],
            codes: ["not_found"],
            run: |ctx| async move {
                let terminal_url = ctx.terminal_url()?.to_owned();
                let client = ctx.client();
                let next = crate::raw_wire::head(&client.get(format!("{terminal_url}/pty")).bearer_auth(ALICE).build()?, "").into_bytes();
                for len in [1, 100_000] {
                    let post = client.post(format!("{terminal_url}/pty")).bearer_auth(ALICE).header("content-type", "application/json").build()?;
                    let mut refused = crate::raw_wire::head(&post, &format!("Content-Length: {len}\r\n")).into_bytes();
                    refused.extend(std::iter::repeat_n(b' ', len));
                    let lost = crate::raw_wire::lost_after_refusals(&terminal_url, &refused, 404, &next, 200).await?;
                    ensure!(lost == 0, "{lost} of 400 requests lost after refused {len}-byte POSTs");
                }
                Ok(())
            },
        },
    ]
}
