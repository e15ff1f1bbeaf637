//! Rate, concurrency and HTTP-layer size limits.

use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::json;
use std::time::Duration;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "pipeline/limits/001",
            spec: "Rate limits: past the limit, 429 `rate_limited` with an integer `Retry-After`.",
            profile: &profiles::LIMITS,
            tags: [],
            endpoints: ["commands_list"],
            codes: ["rate_limited"],
            run: |ctx| async move {
                ctx.send(ctx.get("/commands")).await?.expect_status(200)?;
                ctx.send(ctx.get("/commands")).await?.expect_status(200)?;
                let resp = ctx.send(ctx.get("/commands")).await?;
                let body = resp.expect_error(429, "rate_limited")?;
                ensure!(body["endpoint"] == "commands_list", "body: {body}");
                let retry: u64 = resp.header("retry-after").unwrap_or_default().parse()
                    .map_err(|_| anyhow::anyhow!("Retry-After must be an integer: {:?}", resp.header("retry-after")))?;
                ensure!((1..=60).contains(&retry), "Retry-After {retry} within the 2/m window");
                Ok(())
            },
        },
        case! {
            id: "pipeline/limits/002",
            spec: "Concurrency limits: with every slot in use, 429 `concurrency_limited` with `Retry-After`; the slot frees when the call ends.",
            profile: &profiles::LIMITS,
            tags: [],
            endpoints: ["commands_run"],
            codes: ["concurrency_limited"],
            run: |ctx| async move {
                let first = ctx.send(ctx.post_json("/commands/nap", &json!({})));
                let second = async {
                    tokio::time::sleep(Duration::from_millis(400)).await;
                    ctx.send(ctx.post_json("/commands/nap", &json!({}))).await
                };
                let (first, second) = tokio::join!(first, second);
                first?.expect_status(200)?;
                let second = second?;
                second.expect_error(429, "concurrency_limited")?;
                ensure!(second.header("retry-after").is_some_and(|v| v.parse::<u64>().is_ok()), "integer Retry-After");
                ctx.send(ctx.post_json("/commands/nap", &json!({}))).await?.expect_status(200)?;
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
