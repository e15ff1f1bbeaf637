//! The request pipeline shared by every endpoint (second document, 4.1 and 7.1).

use super::raw_http;
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, ensure};
use reqwest::Method;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "pipeline/match/001",
            spec: "Match method and path to an endpoint. No match: 404 with message `Not found: <path>`.",
            profile: &profiles::ANY,
            tags: [],
            endpoints: [],
            codes: ["not_found"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::GET, "/no/such/route")).await?;
                let body = resp.expect_error(404, "not_found")?;
                ensure!(body["error"] == "Not found: /no/such/route", "message: {body}");
                Ok(())
            },
        },
        case! {
            id: "pipeline/match/002",
            spec: "A known path with a method no endpoint has is no match: 404, not 405.",
            profile: &profiles::ANY,
            tags: [],
            endpoints: [],
            codes: ["not_found"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::PATCH, "/health")).await?;
                let body = resp.expect_error(404, "not_found")?;
                ensure!(body["error"] == "Not found: /health", "message: {body}");
                Ok(())
            },
        },
        case! {
            id: "pipeline/match/003",
            spec: "Under /v1 an unmatched route gets the nested error object and `X-Svc-Local: 1`.",
            profile: &profiles::ANY,
            tags: [],
            endpoints: [],
            codes: ["not_found"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::GET, "/v1/no/such/route")).await?;
                let body = resp.expect_error(404, "not_found")?;
                ensure!(body["error"]["type"] == "not_found_error", "type: {body}");
                ensure!(body["error"]["message"] == "Not found: /v1/no/such/route", "message: {body}");
                ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local missing");
                Ok(())
            },
        },
        case! {
            id: "pipeline/query/001",
            spec: "A repeated query parameter: 400 `duplicate_parameter`.",
            profile: &profiles::ANY,
            tags: [],
            endpoints: ["health"],
            codes: ["duplicate_parameter"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::GET, "/health?probe=1&probe=2")).await?;
                let body = resp.expect_error(400, "duplicate_parameter")?;
                ensure!(body["param"] == "probe", "the body names the parameter: {body}");
                ctx.send(ctx.anonymous(Method::GET, "/health?probe=1&other=2")).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/body/001",
            spec: "The body size limit (10 MiB by default) is checked before the body is read: a declared length over it is 413 `payload_too_large` at once.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["capabilities_check"],
            codes: ["payload_too_large"],
            run: |ctx| async move {
                let over = 10 * 1024 * 1024 + 1;
                let head = format!("POST /capabilities/check HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {over}");
                // No body follows: an answer proves the limit was checked before reading.
                let resp = raw_http::send(ctx.base_url(), &head, b"").await?;
                ensure!(resp.status == 413, "expected 413, got {}\n{}", resp.status, resp.head);
                ensure!(resp.json()?["code"] == "payload_too_large", "body: {}", resp.body);
                let exact = 10 * 1024 * 1024;
                let body = format!("{{\"endpoint\":\"health\"}}{}", " ".repeat(exact - 21));
                let head = format!("POST /capabilities/check HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {exact}");
                let resp = raw_http::send(ctx.base_url(), &head, body.as_bytes()).await?;
                ensure!(resp.status == 200, "a body of exactly 10 MiB is accepted, got {}\n{}", resp.status, resp.body);
                Ok(())
            },
        },
        case! {
            id: "pipeline/body/002",
            spec: "A chunked body with no declared length is cut off at the limit while it is read: 413 `payload_too_large`.",
            profile: &profiles::LIMITS,
            tags: [],
            endpoints: ["capabilities_check"],
            codes: ["payload_too_large"],
            run: |ctx| async move {
                let head = "POST /capabilities/check HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked";
                let resp = raw_http::send(ctx.base_url(), head, &raw_http::chunked(4096)).await?;
                ensure!(resp.status == 413, "expected 413, got {}\n{}", resp.status, resp.head);
                ensure!(resp.json()?["code"] == "payload_too_large", "body: {}", resp.body);
                ensure!(resp.json()?["endpoint"] == "capabilities_check", "body: {}", resp.body);
                Ok(())
            },
        },
        case! {
            id: "pipeline/body/003",
            spec: "A chunked body under the endpoint's limit is read normally.",
            profile: &profiles::LIMITS,
            tags: [],
            endpoints: ["capabilities_check"],
            codes: [],
            run: |ctx| async move {
                let json = br#"{"endpoint":"health"}"#;
                let mut body = format!("{:x}\r\n", json.len()).into_bytes();
                body.extend_from_slice(json);
                body.extend_from_slice(b"\r\n0\r\n\r\n");
                let head = "POST /capabilities/check HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked";
                let resp = raw_http::send(ctx.base_url(), head, &body).await?;
                ensure!(resp.status == 200, "expected 200, got {}\n{}", resp.status, resp.body);
                ensure!(resp.json()?["allowed"] == true, "body: {}", resp.body);
                Ok(())
            },
        },
        case! {
            id: "pipeline/errors/001",
            spec: "An endpoint that a later version builds answers one typed 501 `not_implemented` naming the endpoint.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: [],
            codes: ["not_implemented"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.get("/files/list?path=/tmp")).await?;
                let body = resp.expect_error(501, "not_implemented")?;
                ensure!(body["endpoint"] == "files_list", "body: {body}");
                ensure!(body["type"] == "NotImplementedError", "body: {body}");
                Ok(())
            },
        },
        case! {
            id: "pipeline/errors/002",
            spec: "Under /v1 errors use the nested object (`type` `not_found_error` for 404), every answer has `X-Svc-Local: 1`, refusals carry `x-should-retry: false`.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: [],
            codes: ["endpoint_disabled"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.get("/v1/models")).await?;
                let body = resp.expect_error(404, "endpoint_disabled")?;
                ensure!(body["error"]["type"] == "not_found_error", "body: {body}");
                ensure!(body["error"]["param"].is_null(), "param is present and null: {body}");
                ensure!(body["error"]["rule"] == "default:opt-in:agents", "body: {body}");
                ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local missing");
                ensure!(resp.header("x-should-retry") == Some("false"), "x-should-retry missing");
                ctx.snapshot("pipeline__errors__v1_endpoint_disabled", &body)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/errors/003",
            spec: "Outside /v1 the error body is flat: `error` message, `type`, `code`, and `endpoint` and `rule` on policy denials; `X-Svc-Local: 1` as on every answer.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["browser_start"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.post_json("/browser", &json!({}))).await?;
                let body = resp.expect_error(404, "endpoint_disabled")?;
                ensure!(body["endpoint"] == "browser_start" && body["rule"] == "default:opt-in:browser", "body: {body}");
                ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local is on every answer, errors included");
                ctx.snapshot("pipeline__errors__flat_endpoint_disabled", &body)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/local/001",
            spec: "Every response, errors included, carries `X-Svc-Local: 1`: health, capabilities, commands, an unmatched path, a pending endpoint, a bad body, and the typed size refusals of the HTTP layer, inside and outside /v1.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["health", "capabilities", "commands_list", "capabilities_check", "files_list"],
            codes: ["not_found", "not_implemented", "invalid_request", "uri_too_long", "headers_too_large", "endpoint_disabled"],
            run: |ctx| async move {
                let long = format!("?q={}", "a".repeat(9000));
                let big = "b".repeat(40 * 1024);
                let requests = [
                    ("GET /health", ctx.get("/health"), 200),
                    ("GET /capabilities", ctx.get("/capabilities"), 200),
                    ("GET /commands", ctx.get("/commands"), 200),
                    ("GET /no/such/path", ctx.get("/no/such/path"), 404),
                    ("GET /files/list", ctx.get("/files/list?path=/tmp"), 501),
                    ("POST /capabilities/check", ctx.request(Method::POST, "/capabilities/check").header("content-type", "application/json").body("{not json"), 400),
                    ("GET /v1/models", ctx.get("/v1/models"), 404),
                    ("long URI", ctx.get(&format!("/health{long}")), 414),
                    ("long /v1 URI", ctx.get(&format!("/v1/models{long}")), 414),
                    ("big headers", ctx.get("/capabilities").header("x-big", big.as_str()), 431),
                ];
                for (what, rb, status) in requests {
                    let resp = ctx.send(rb).await?;
                    resp.expect_status(status).with_context(|| what.to_owned())?;
                    ensure!(resp.header("x-svc-local") == Some("1"), "{what}: X-Svc-Local missing\n{}", resp.describe());
                }
                Ok(())
            },
        },
        case! {
            id: "pipeline/local/002",
            spec: "A refused token (401) carries `X-Svc-Local: 1` too.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::GET, "/capabilities")).await?;
                resp.expect_error(401, "unauthorized")?;
                ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local missing on 401\n{}", resp.describe());
                Ok(())
            },
        },
        case! {
            id: "pipeline/limits/003",
            spec: "The HTTP layer's size limits answer typed errors, in the body shape of the path: a request target over 8 KiB is 414 `uri_too_long`, headers over 32 KiB are 431 `headers_too_large`; just under the limits the request is served.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["health"],
            codes: ["uri_too_long", "headers_too_large"],
            run: |ctx| async move {
                let over = format!("/health?q={}", "a".repeat(8 * 1024));
                ctx.send(ctx.get(&over)).await?.expect_error(414, "uri_too_long")?;
                ctx.send(ctx.get(&format!("/v1/models?q={}", "a".repeat(8 * 1024)))).await?.expect_error(414, "uri_too_long")?;
                let under = format!("/health?q={}", "a".repeat(8 * 1024 - 10));
                ctx.send(ctx.get(&under)).await?.expect_status(200)?;
                let big = "b".repeat(33 * 1024);
                ctx.send(ctx.get("/health").header("x-big", big.as_str())).await?.expect_error(431, "headers_too_large")?;
                ctx.send(ctx.get("/v1/models").header("x-big", big.as_str())).await?.expect_error(431, "headers_too_large")?;
                let fits = "b".repeat(30 * 1024);
                ctx.send(ctx.get("/health").header("x-big", fits.as_str())).await?.expect_status(200)?;
                Ok(())
            },
        },
    ]
}

pub(super) async fn audit_lines(ctx: &Ctx, min: usize) -> anyhow::Result<Vec<serde_json::Value>> {
    let dir = ctx
        .dir()
        .ok_or_else(|| anyhow::anyhow!("needs the profile directory"))?;
    let path = dir.join("audit.jsonl");
    // The audit writer runs beside the request path: give it a moment.
    for _ in 0..50 {
        let text = tokio::fs::read_to_string(&path).await.unwrap_or_default();
        // Only whole lines: the writer may be in the middle of the next one.
        let whole = text.rfind('\n').map_or("", |end| &text[..end]);
        let lines: Vec<serde_json::Value> = whole
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        if lines.len() >= min {
            return Ok(lines);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    anyhow::bail!(
        "the audit file {} has fewer than {min} lines",
        path.display()
    )
}
