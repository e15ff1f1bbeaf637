//! The engine's door (spec 5, Engine): loopback is not enough on its own, since a
//! web page reaches loopback through the browser (it sends an `Origin`) or by DNS
//! rebinding (its `Host` names the attacker's domain). Such requests are refused
//! whatever token they carry; the rest need the descriptor's token, WebSocket
//! upgrades included.

use super::support::{error_snapshot, expect_error};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context as _, anyhow, ensure};
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, HOST, ORIGIN};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/door/001",
            spec: "A request whose `Host` is not loopback is refused, 403 `E1003`, even with the right token and on a route that does not exist (the door comes first): `Host: evil.example` and `Host: localhost.evil.example` (DNS rebinding) among them.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["health"],
            codes: ["E1003"],
            run: |ctx| async move {
                let port = port(&ctx)?;
                for host in [
                    "evil.example".to_owned(),
                    "localhost.evil.example".to_owned(),
                    format!("localhost.evil.example:{port}"),
                    format!("127.0.0.1.nip.io:{port}"),
                    format!("10.0.0.1:{port}"),
                    format!("[::2]:{port}"),
                ] {
                    for path in ["/v1/health", "/v1/no-such-route"] {
                        let resp = ctx.send(ctx.request(Method::GET, path).header(HOST, &host)).await?;
                        let body = expect_error(&resp, 403, "E1003").with_context(|| format!("Host: {host}, {path}"))?;
                        if host == "evil.example" && path == "/v1/health" {
                            error_snapshot(&ctx, "engine__door__host_refused", &body, &[])?;
                        }
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "engine/door/002",
            spec: "A request carrying any `Origin` header (a browser page) is refused, 403 `E1003`, whatever its value (the engine's own origin, `null`, another site) and whether or not it carries the token.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["health", "providers_list"],
            codes: ["E1003"],
            run: |ctx| async move {
                let own = ctx.base_url().to_owned();
                for origin in [own.as_str(), "null", "https://evil.example", "http://localhost"] {
                    for path in ["/v1/health", "/v1/providers"] {
                        let resp = ctx.send(ctx.request(Method::GET, path).header(ORIGIN, origin)).await?;
                        let body = expect_error(&resp, 403, "E1003").with_context(|| format!("Origin: {origin}"))?;
                        if origin == "null" && path == "/v1/health" {
                            error_snapshot(&ctx, "engine__door__origin_refused", &body, &[])?;
                        }
                    }
                    // Without the token too: a page is told 403, never asked for a token.
                    let resp = ctx.send(ctx.anonymous(Method::GET, "/v1/health").header(ORIGIN, origin)).await?;
                    expect_error(&resp, 403, "E1003")?;
                }
                let shutdown = ctx.send(ctx.request(Method::POST, "/v1/shutdown").header(ORIGIN, "https://evil.example")).await?;
                expect_error(&shutdown, 403, "E1003")?;
                ctx.send(ctx.request(Method::GET, "/v1/health")).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "engine/door/003",
            spec: "Loopback hosts pass the door, by name or address, with or without a port: `Host: 127.0.0.1:PORT`, `[::1]:PORT`, `localhost:PORT` and `127.0.0.1` are answered.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["health"],
            codes: [],
            run: |ctx| async move {
                let port = port(&ctx)?;
                for host in [
                    format!("127.0.0.1:{port}"),
                    format!("[::1]:{port}"),
                    format!("localhost:{port}"),
                    "127.0.0.1".to_owned(),
                    format!("LOCALHOST:{port}"),
                ] {
                    let resp = ctx.send(ctx.request(Method::GET, "/v1/health").header(HOST, &host)).await?;
                    resp.expect_status(200).with_context(|| format!("Host: {host}"))?;
                    ensure!(resp.json()?["protocol"] == "svc-engine/1", "{}", resp.describe());
                }
                Ok(())
            },
        },
        case! {
            id: "engine/door/004",
            spec: "Every request needs `Authorization: Bearer <token>` with the descriptor's token, health included: none, a wrong one, another scheme or the token elsewhere is 401 `E1001`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["health", "providers_list", "shutdown"],
            codes: ["E1001"],
            run: |ctx| async move {
                let token = token(&ctx)?;
                let none = ctx.send(ctx.anonymous(Method::GET, "/v1/health")).await?;
                let body = expect_error(&none, 401, "E1001")?;
                error_snapshot(&ctx, "engine__door__no_token", &body, &[])?;
                let wrong = ctx.send(ctx.anonymous(Method::GET, "/v1/health").bearer_auth(format!("{token}x"))).await?;
                expect_error(&wrong, 401, "E1001")?;
                let short = ctx.send(ctx.anonymous(Method::GET, "/v1/health").bearer_auth(&token[..token.len() / 2])).await?;
                expect_error(&short, 401, "E1001")?;
                let basic = ctx.send(ctx.anonymous(Method::GET, "/v1/health").header(AUTHORIZATION, format!("Basic {token}"))).await?;
                expect_error(&basic, 401, "E1001")?;
                let elsewhere = ctx.send(ctx.anonymous(Method::GET, "/v1/health").header("x-access-token", &token)).await?;
                expect_error(&elsewhere, 401, "E1001")?;
                for (method, path) in [(Method::GET, "/v1/providers"), (Method::POST, "/v1/shutdown"), (Method::GET, "/v1/sandboxes")] {
                    let resp = ctx.send(ctx.anonymous(method, path).bearer_auth("not-the-token")).await?;
                    expect_error(&resp, 401, "E1001")?;
                }
                // The engine is still up: the refused shutdown did nothing.
                ctx.send(ctx.request(Method::GET, "/v1/health")).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "engine/door/005",
            spec: "WebSocket upgrades pass the same door: a terminal upgrade carrying an `Origin` is refused 403 `E1003`, one without the token 401 `E1001`, before any sandbox is looked up.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["terminal"],
            codes: ["E1003", "E1001"],
            run: |ctx| async move {
                let token = token(&ctx)?;
                let bearer = format!("Bearer {token}");
                let path = "/v1/sandboxes/no-such-sandbox/terminal";
                let with_origin = ctx.ws_refused(path, &[("authorization", &bearer), ("origin", "https://evil.example")]).await?;
                expect_error(&with_origin, 403, "E1003")?;
                let own_origin = ctx.ws_refused(path, &[("authorization", &bearer), ("origin", ctx.base_url())]).await?;
                expect_error(&own_origin, 403, "E1003")?;
                let anonymous = ctx.ws_refused(path, &[]).await?;
                expect_error(&anonymous, 401, "E1001")?;
                let wrong = ctx.ws_refused(path, &[("authorization", "Bearer wrong")]).await?;
                expect_error(&wrong, 401, "E1001")?;
                Ok(())
            },
        },
        case! {
            id: "engine/door/006",
            spec: "A request with no `Host` at all (HTTP/1.0) is not from a loopback name either: 403 `E1003`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["health"],
            codes: ["E1003"],
            run: |ctx| async move {
                let token = token(&ctx)?;
                refused_raw(&ctx, &format!("GET /v1/health HTTP/1.0\r\nAuthorization: Bearer {token}\r\n\r\n"), 403, "E1003").await?;
                // The same request with a loopback Host is answered: the Host made the difference.
                let (status, body) = raw(&ctx, &format!("GET /v1/health HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n")).await?;
                ensure!(status == 200, "expected 200 with a loopback Host, got {status}: {body}");
                Ok(())
            },
        },
        case! {
            id: "engine/door/007",
            spec: "Exactly one `Host` and one token: a request with two `Host` headers is 403 `E1003` even when both are loopback (a proxy might act on the other), one with two `Authorization` headers is 401 `E1001` even when both carry the token.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["health"],
            codes: ["E1003", "E1001"],
            run: |ctx| async move {
                let token = token(&ctx)?;
                let port = port(&ctx)?;
                refused_raw(&ctx, &format!("GET /v1/health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nHost: localhost:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"), 403, "E1003").await.context("two Hosts")?;
                refused_raw(&ctx, &format!("GET /v1/health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nAuthorization: Bearer {token}\r\n\r\n"), 401, "E1001").await.context("two tokens")?;
                Ok(())
            },
        },
        case! {
            id: "engine/door/008",
            spec: "The authority a request names is judged wherever it is written: an empty `Host:` is 403 `E1003`, and so is an absolute-form request line naming another host (`GET http://evil.example/v1/health` with a loopback `Host`); an absolute-form line naming the engine itself is answered (issue 30, item 7).",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["health"],
            codes: ["E1003"],
            run: |ctx| async move {
                let token = token(&ctx)?;
                let port = port(&ctx)?;
                for request in [
                    format!("GET /v1/health HTTP/1.0\r\nHost:\r\nAuthorization: Bearer {token}\r\n\r\n"),
                    format!("GET /v1/health HTTP/1.0\r\nHost: \r\nAuthorization: Bearer {token}\r\n\r\n"),
                    format!("GET http://evil.example/v1/health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"),
                    format!("GET http://evil.example:{port}/v1/health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"),
                ] {
                    refused_raw(&ctx, &request, 403, "E1003").await.with_context(|| format!("{request:?}"))?;
                }
                let (status, body) = raw(&ctx, &format!("GET http://127.0.0.1:{port}/v1/health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n")).await?;
                ensure!(status == 200, "an absolute-form line naming the engine: expected 200, got {status}: {body}");
                Ok(())
            },
        },
    ]
}

/// The engine's token, from its descriptor.
fn token(ctx: &Ctx) -> anyhow::Result<String> {
    ctx.token()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("the engine's token is unknown"))
}

/// Writes `request` as is ([`raw`]) and checks it is refused: `status`, an error body
/// with `code`.
async fn refused_raw(ctx: &Ctx, request: &str, status: u16, code: &str) -> anyhow::Result<()> {
    let (got, body) = raw(ctx, request).await?;
    ensure!(got == status, "expected {status}, got {got}: {body}");
    let body: serde_json::Value =
        serde_json::from_str(&body).with_context(|| format!("not JSON: {body}"))?;
    super::support::check_error_body(&body, code)
}

/// The engine's port, from its base URL.
fn port(ctx: &Ctx) -> anyhow::Result<u16> {
    reqwest::Url::parse(ctx.base_url())?
        .port()
        .ok_or_else(|| anyhow!("the base URL {} has no port", ctx.base_url()))
}

/// Writes `request` to the engine's socket as is; answers the status and the body
/// (the engine closes an HTTP/1.0 connection after answering).
async fn raw(ctx: &Ctx, request: &str) -> anyhow::Result<(u16, String)> {
    crate::raw_wire::answer(ctx.base_url(), request).await
}
