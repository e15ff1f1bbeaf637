//! Authentication: tokens, identities and ambiguous credentials.

use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use serde_json::json;

pub(super) fn with_token(
    ctx: &Ctx,
    method: Method,
    path: &str,
    token: &str,
) -> reqwest::RequestBuilder {
    ctx.anonymous(method, path).bearer_auth(token)
}

async fn identity_of(ctx: &Ctx, rb: reqwest::RequestBuilder) -> anyhow::Result<String> {
    let resp: Resp = ctx.send(rb).await?;
    resp.expect_status(200)?;
    Ok(resp.json()?["identity_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "pipeline/auth/001",
            spec: "Authenticate: missing or wrong token: 401 `unauthorized`.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.anonymous(Method::GET, "/capabilities")).await?;
                resp.expect_error(401, "unauthorized")?;
                let resp = ctx.send(with_token(&ctx, Method::GET, "/capabilities", "not-a-token")).await?;
                resp.expect_error(401, "unauthorized")?;
                let resp = ctx.send(ctx.anonymous(Method::GET, "/capabilities").header("authorization", "Basic YWRtaW4tdG9rZW4=")).await?;
                resp.expect_error(401, "unauthorized")?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/002",
            spec: "The token is accepted as `Authorization: Bearer <token>` or as `X-Access-Token`, and names the caller's identity.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let id = identity_of(&ctx, with_token(&ctx, Method::GET, "/capabilities", "admin-token")).await?;
                ensure!(id == "admin", "Bearer: {id}");
                let id = identity_of(&ctx, ctx.anonymous(Method::GET, "/capabilities").header("x-access-token", "reader-token")).await?;
                ensure!(id == "reader", "X-Access-Token: {id}");
                let id = identity_of(&ctx, with_token(&ctx, Method::GET, "/capabilities", "deployer-token")).await?;
                ensure!(id == "deployer", "token from token_env: {id}");
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/003",
            spec: "Two different `X-Access-Token` values: 400 `ambiguous_credentials`; the same value twice is one credential.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["ambiguous_credentials"],
            run: |ctx| async move {
                let rb = ctx.anonymous(Method::GET, "/capabilities")
                    .header("x-access-token", "admin-token")
                    .header("x-access-token", "reader-token");
                ctx.send(rb).await?.expect_error(400, "ambiguous_credentials")?;
                let rb = ctx.anonymous(Method::GET, "/capabilities")
                    .header("x-access-token", "admin-token")
                    .header("x-access-token", "admin-token");
                ctx.send(rb).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/004",
            spec: "Two different credential values in one request (Bearer and X-Access-Token) are ambiguous: 400.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["ambiguous_credentials"],
            run: |ctx| async move {
                let rb = with_token(&ctx, Method::GET, "/capabilities", "admin-token").header("x-access-token", "reader-token");
                ctx.send(rb).await?.expect_error(400, "ambiguous_credentials")?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/005",
            spec: "GET /health is the only route that skips authentication.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["health", "commands_list"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                ctx.send(ctx.anonymous(Method::GET, "/health")).await?.expect_status(200)?;
                ctx.send(ctx.anonymous(Method::GET, "/commands")).await?.expect_error(401, "unauthorized")?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/006",
            spec: "Authentication comes before policy: a disabled endpoint answers 401 to a caller without a token, 404 `endpoint_disabled` to one with.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["browser_status"],
            codes: ["unauthorized", "endpoint_disabled"],
            run: |ctx| async move {
                ctx.send(ctx.anonymous(Method::GET, "/browser")).await?.expect_error(401, "unauthorized")?;
                let resp = ctx.send(with_token(&ctx, Method::GET, "/browser", "admin-token")).await?;
                resp.expect_error(404, "endpoint_disabled")?;
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/007",
            spec: "`SVC_SERVER_TOKEN` alone gives one identity holding every scope; without it the caller is refused.",
            profile: &profiles::SERVER_TOKEN,
            tags: [],
            endpoints: ["capabilities"],
            codes: ["unauthorized"],
            run: |ctx| async move {
                ctx.send(ctx.anonymous(Method::GET, "/capabilities")).await?.expect_error(401, "unauthorized")?;
                let resp = ctx.send(with_token(&ctx, Method::GET, "/capabilities", "the-one-token")).await?;
                resp.expect_status(200)?;
                let doc = resp.json()?;
                ensure!(doc["scopes"] == json!(["*"]), "scopes: {}", doc["scopes"]);
                ensure!(doc["endpoints"]["commands_run"]["allowed"] == true, "every scope");
                Ok(())
            },
        },
        case! {
            id: "pipeline/auth/008",
            spec: "With no token configured every caller is the identity `anonymous`.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["capabilities"],
            codes: [],
            run: |ctx| async move {
                let id = identity_of(&ctx, ctx.anonymous(Method::GET, "/capabilities")).await?;
                ensure!(id == "anonymous", "identity: {id}");
                let id = identity_of(&ctx, with_token(&ctx, Method::GET, "/capabilities", "whatever")).await?;
                ensure!(id == "anonymous", "a token to a server without tokens changes nothing: {id}");
                Ok(())
            },
        },
    ]
}
