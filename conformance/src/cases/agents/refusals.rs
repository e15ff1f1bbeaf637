//! The agents group's refusal routes (first document, 1.5 and 4.1).

use crate::{Case, Ctx, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use serde_json::json;

async fn refused(ctx: &Ctx, method: Method, path: &str) -> anyhow::Result<()> {
    let resp = ctx.send(ctx.request(method, path).json(&json!({}))).await?;
    let body = resp.expect_error(404, "agents.not_implemented_locally")?;
    ensure!(body["error"]["type"] == "not_found_error", "{body}");
    ensure!(
        body["x_svc"]["runtimes"] == "/v1/agents/runtimes",
        "x_svc.runtimes: {body}"
    );
    ensure!(
        resp.header("x-should-retry") == Some("false"),
        "x-should-retry: false"
    );
    ensure!(resp.header("x-svc-local") == Some("1"), "X-Svc-Local: 1");
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/refusals/001",
            spec: "POST /v1/agents/environments/{environment_id}/register answers 404 `agents.not_implemented_locally`.",
            profile: &profiles::AGENTS,
            tags: [],
            endpoints: ["agents_cannot_executor_registration"],
            codes: ["agents.not_implemented_locally"],
            run: |ctx| async move { refused(&ctx, Method::POST, "/v1/agents/environments/env_abc/register").await },
        },
        case! {
            id: "agents/refusals/002",
            spec: "GET /v1/agents/environments/{environment_id}/connect answers 404 `agents.not_implemented_locally`.",
            profile: &profiles::AGENTS,
            tags: [],
            endpoints: ["agents_cannot_executor_channel"],
            codes: ["agents.not_implemented_locally"],
            run: |ctx| async move { refused(&ctx, Method::GET, "/v1/agents/environments/env_abc/connect").await },
        },
        case! {
            id: "agents/refusals/003",
            spec: "POST /v1/responses/input_tokens is a refusal: 404 `agents.not_implemented_locally`.",
            profile: &profiles::AGENTS,
            tags: [],
            endpoints: ["agents_cannot_responses_input_tokens"],
            codes: ["agents.not_implemented_locally"],
            run: |ctx| async move { refused(&ctx, Method::POST, "/v1/responses/input_tokens").await },
        },
        case! {
            id: "agents/refusals/004",
            spec: "DELETE /v1/models/{model} is a refusal: 404 `agents.not_implemented_locally` (delete a definition with DELETE /v1/agents/{agent_id}).",
            profile: &profiles::AGENTS,
            tags: [],
            endpoints: ["agents_cannot_models_delete"],
            codes: ["agents.not_implemented_locally"],
            run: |ctx| async move {
                refused(&ctx, Method::DELETE, "/v1/models/rt-one").await?;
                let body = ctx.send(ctx.request(Method::DELETE, "/v1/models/rt-one")).await?.json()?;
                ctx.snapshot("agents__refusals__models_delete", &body)
            },
        },
    ]
}
