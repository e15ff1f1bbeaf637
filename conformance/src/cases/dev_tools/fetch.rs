//! POST /http/fetch: every private spelling refused, the deny list, a page the case
//! serves, the cap, bytes that are not UTF-8, redirects judged again, a failed exchange.

use super::page_server::{self, BINARY, CLOSED, PAGE};
use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::{Context as _, ensure};
use base64::Engine as _;
use serde_json::{Value, json};

async fn fetch(ctx: &Ctx, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/http/fetch", body)).await
}

/// The answer with the headers that vary by run (`date`) dropped.
fn stable(body: &Value) -> Value {
    let mut out = body.clone();
    if let Some(headers) = out["headers"].as_object_mut() {
        headers.remove("date");
    }
    out
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "dev_tools/fetch/001",
            spec: "http_fetch: private, loopback, link-local and metadata addresses are 403 `url_denied` in every spelling (dotted, short, decimal, hex, IPv6, IPv4-mapped IPv6, a reserved name), before anything is sent.",
            profile: &profiles::DEV_TOOLS,
            tags: [],
            endpoints: ["http_fetch"],
            codes: ["url_denied"],
            run: |ctx| async move {
                for url in [
                    "http://127.0.0.1/", "http://127.1/", "http://2130706433/", "http://0x7f000001/",
                    "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://169.254.169.254/latest/meta-data/",
                    "http://10.0.0.1/", "http://10.255.1.2:8080/", "http://192.168.1.1/", "http://[fd00::1]/",
                    "http://[fe80::1]/", "http://localhost/", "http://localhost:9000/health", "http://0/",
                    "https://metadata.google.internal/computeMetadata/v1/",
                ] {
                    let resp = fetch(&ctx, &json!({"url": url})).await?;
                    let err = resp.expect_error(403, "url_denied").with_context(|| url.to_owned())?;
                    ensure!(err["param"] == "url", "{url}: {err}");
                    ensure!(err["error"].as_str().is_some_and(|m| m.contains("private")), "{url}: {err}");
                }
                let resp = fetch(&ctx, &json!({"url": "http://169.254.169.254/latest/meta-data/"})).await?;
                ctx.snapshot("dev_tools__fetch__url_denied", &resp.json()?)?;
                Ok(())
            },
        },
        case! {
            id: "dev_tools/fetch/002",
            spec: "http_fetch: a host on `dev_tools.url_deny` is 403 `url_denied`; a URL that is not http or https, or no URL, is 400 `url_invalid`; bad members are 400 `invalid_request`.",
            profile: &profiles::DEV_TOOLS,
            tags: [],
            endpoints: ["http_fetch"],
            codes: ["url_denied", "url_invalid", "invalid_request"],
            run: |ctx| async move {
                let resp = fetch(&ctx, &json!({"url": "https://api.denied.example/x"})).await?;
                let err = resp.expect_error(403, "url_denied")?;
                ensure!(err["error"].as_str().is_some_and(|m| m.contains("url_deny")), "{err}");
                for body in [json!({"url": "ftp://example.com/"}), json!({"url": "not a url"}), json!({"url": "file:///etc/passwd"}), json!({})] {
                    fetch(&ctx, &body).await?.expect_error(400, "url_invalid").with_context(|| body.to_string())?;
                }
                let resp = fetch(&ctx, &json!({"url": "gopher://example.com/"})).await?;
                ctx.snapshot("dev_tools__fetch__url_invalid", &resp.json()?)?;
                for body in [
                    json!({"url": "https://example.com/", "max_bytes": 0}),
                    json!({"url": "https://example.com/", "timeout": 0}),
                    json!({"url": "https://example.com/", "timeout": 301}),
                    json!({"url": "https://example.com/", "follow": true}),
                ] {
                    fetch(&ctx, &body).await?.expect_error(400, "invalid_request").with_context(|| body.to_string())?;
                }
                Ok(())
            },
        },
        case! {
            id: "dev_tools/fetch/003",
            spec: "http_fetch: a page served by the test on a loopback host:port that `dev_tools.url_allow` names exactly is fetched: `{status, headers, body, truncated}`; method, headers and body are sent.",
            profile: &profiles::DEV_TOOLS_LOCAL,
            tags: [],
            endpoints: ["http_fetch"],
            codes: [],
            run: |ctx| async move {
                let base = page_server::start();
                let resp = fetch(&ctx, &json!({"url": format!("{base}/page")})).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["status"] == 200 && body["body"] == PAGE && body["truncated"] == false, "{body}");
                ensure!(body["headers"]["x-page-server"] == "1" && body.get("body_b64").is_none(), "{body}");
                ctx.snapshot("dev_tools__fetch__page", &stable(&body))?;
                let resp = fetch(&ctx, &json!({
                    "url": format!("{base}/echo"), "method": "PUT", "headers": {"x-test": "abc"}, "body": "payload",
                })).await?;
                let body = resp.json()?;
                ensure!(body["body"] == "PUT x-test=abc body=payload", "{body}");
                Ok(())
            },
        },
        case! {
            id: "dev_tools/fetch/004",
            spec: "http_fetch: a body past `max_bytes` is cut there with `truncated: true`; a body that is not UTF-8 comes as `body_b64` (exact bytes) beside the lossy `body`.",
            profile: &profiles::DEV_TOOLS_LOCAL,
            tags: [],
            endpoints: ["http_fetch"],
            codes: [],
            run: |ctx| async move {
                let base = page_server::start();
                let resp = fetch(&ctx, &json!({"url": format!("{base}/big"), "max_bytes": 1000})).await?;
                let body = resp.json()?;
                ensure!(body["truncated"] == true && body["body"].as_str().map(str::len) == Some(1000), "{}", body["truncated"]);
                let resp = fetch(&ctx, &json!({"url": format!("{base}/binary")})).await?;
                let body = resp.json()?;
                let bytes = base64::engine::general_purpose::STANDARD.decode(body["body_b64"].as_str().unwrap_or_default())?;
                ensure!(bytes == BINARY && body["body"].is_string(), "{body}");
                ctx.snapshot("dev_tools__fetch__binary", &stable(&body))?;
                Ok(())
            },
        },
        case! {
            id: "dev_tools/fetch/005",
            spec: "http_fetch: every redirect is judged again: a redirect within the allowed host is followed, one to a metadata address, to another loopback port or to the same server by the name `localhost` is 403 `url_denied`.",
            profile: &profiles::DEV_TOOLS_LOCAL,
            tags: [],
            endpoints: ["http_fetch"],
            codes: ["url_denied"],
            run: |ctx| async move {
                let base = page_server::start();
                let resp = fetch(&ctx, &json!({"url": format!("{base}/to-page")})).await?;
                let body = resp.json()?;
                ensure!(body["status"] == 200 && body["body"] == PAGE, "followed: {body}");
                for path in ["/to-metadata", "/to-loopback", "/to-localhost"] {
                    let resp = fetch(&ctx, &json!({"url": format!("{base}{path}")})).await?;
                    resp.expect_error(403, "url_denied").with_context(|| path.to_owned())?;
                }
                let resp = fetch(&ctx, &json!({"url": format!("{base}/to-metadata")})).await?;
                ctx.snapshot("dev_tools__fetch__redirect_denied", &resp.json()?)?;
                // Outside the allow list, even the direct URL of a private host is refused.
                let resp = fetch(&ctx, &json!({"url": "http://127.0.0.1:28462/"})).await?;
                resp.expect_error(403, "url_denied")?;
                Ok(())
            },
        },
        case! {
            id: "dev_tools/fetch/006",
            spec: "http_fetch: an allowed host where nothing answers is 502 `fetch_failed`; `/capabilities` shows the host lists under `params` of `http_fetch`.",
            profile: &profiles::DEV_TOOLS_LOCAL,
            tags: [],
            endpoints: ["http_fetch", "capabilities"],
            codes: ["fetch_failed"],
            run: |ctx| async move {
                let resp = fetch(&ctx, &json!({"url": format!("http://{CLOSED}/"), "timeout": 5})).await?;
                let err = resp.expect_error(502, "fetch_failed")?;
                ensure!(err["param"] == "url", "{err}");
                let caps = ctx.send(ctx.get("/capabilities")).await?.json()?;
                let params = &caps["endpoints"]["http_fetch"]["params"];
                ensure!(*params == json!({"url_allow": ["127.0.0.1:28461", "127.0.0.1:28463"], "url_deny": []}), "{params}");
                Ok(())
            },
        },
    ]
}
