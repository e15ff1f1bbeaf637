//! Matching a request to an endpoint: no match is a 404, under /v1 in the
//! nested error shape.

use crate::{Case, case, profiles};
use anyhow::ensure;
use reqwest::Method;

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
    ]
}
