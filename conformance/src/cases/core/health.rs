//! Core cases: health.

use reqwest::Method;

use crate::{Case, case, profiles};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "core/health/001",
            spec: "GET /health answers 200 without a token, with a JSON body whose status is \"ok\".",
            profile: &profiles::ANY,
            tags: [],
            endpoints: ["health"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::GET, "/health")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                anyhow::ensure!(body["status"] == "ok", "expected status \"ok\", got {body}");
                Ok(())
            },
        },
        case! {
            id: "core/health/002",
            spec: "Under the default profile GET /health is served as application/json.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["health"],
            codes: [],
            run: health_is_json,
        },
    ]
}

async fn health_is_json(ctx: crate::Ctx) -> anyhow::Result<()> {
    let resp = ctx.send(ctx.get("/health")).await?;
    resp.expect_status(200)?;
    let ct = resp.header("content-type").unwrap_or_default();
    anyhow::ensure!(
        ct.starts_with("application/json"),
        "expected Content-Type application/json, got {ct:?}"
    );
    Ok(())
}
