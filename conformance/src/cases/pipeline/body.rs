//! Request bodies and their size limit, including requests an HTTP client
//! library would not send as-is.

use super::raw_http;
use crate::{Case, case, profiles};
use anyhow::ensure;

pub fn cases() -> Vec<Case> {
    vec![
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
    ]
}
