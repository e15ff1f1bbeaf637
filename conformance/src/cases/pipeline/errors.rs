//! Typed errors and their two body shapes, flat and under /v1.

use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        // pipeline/errors/001 called a pending endpoint for its typed 501 `not_implemented`.
        // Every endpoint of the table is served now (issue 13), so no call can reach that
        // answer; the router's unit test `a_pending_row_answers_not_implemented` proves it.
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
    ]
}
