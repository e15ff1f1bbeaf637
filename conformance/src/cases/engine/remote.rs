//! The provider kinds (spec 1, engine): "The engine hosts provider kinds `builtin`,
//! `rest`, `exec` ... and `node`; clients cannot tell the kinds apart." The sandbox
//! routes run against each kind as copies of the provider cases (`engine@<id>/...`);
//! these cases check what only a `rest` provider can show: how it fails when the
//! service behind it refuses, is gone, or does not answer.

use super::support::{as_conn, expect_error};
use crate::engine::connection_header;
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};

/// The id of the engine's provider of kind `kind`, if it has one.
async fn provider_of_kind(ctx: &Ctx, kind: &str) -> anyhow::Result<Option<String>> {
    let body = ctx
        .send(ctx.request(Method::GET, "/v1/providers"))
        .await?
        .json()?;
    Ok(body["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["kind"] == kind && p["error"].is_null())
        .and_then(|p| p["id"].as_str().map(str::to_owned)))
}

/// A `rest` connection to `api_url`, with `extra` merged in.
async fn rest_connection(
    ctx: &Ctx,
    api_url: &str,
    api_key: &str,
    extra: Value,
) -> anyhow::Result<String> {
    let id = provider_of_kind(ctx, "rest")
        .await?
        .ok_or_else(|| anyhow!("the engine lists no provider of kind `rest`"))?;
    let mut conn = json!({"provider": id, "api_url": api_url, "api_key": api_key});
    if let (Some(conn), Some(extra)) = (conn.as_object_mut(), extra.as_object()) {
        conn.extend(extra.clone());
    }
    Ok(connection_header(&conn))
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/remote/001",
            spec: "The engine hosts the provider kinds `builtin`, `rest`, `exec` and `node`: with a plugin installed, `GET /v1/providers` lists a provider of each kind, none with an error.",
            profile: &profiles::ENGINE,
            tags: ["needs:engine-plugins"],
            endpoints: ["providers_list"],
            codes: [],
            run: |ctx| async move {
                for kind in ["builtin", "rest", "exec", "node"] {
                    ensure!(provider_of_kind(&ctx, kind).await?.is_some(), "no working provider of kind `{kind}`");
                }
                Ok(())
            },
        },
        case! {
            id: "engine/remote/002",
            spec: "A `rest` provider whose remote engine refuses the connection's `api_key` answers 401 `E1002` (`ProviderAuthenticationError`), not the remote's own `E1001`: the engine's token was right, the provider's credential was not.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["sandboxes_list", "sandboxes_create"],
            codes: ["E1002"],
            run: |ctx| async move {
                // The remote is this engine itself, reached as a service with a wrong key.
                let conn = rest_connection(&ctx, ctx.base_url(), "not-the-token", json!({})).await?;
                let listed = ctx.send(as_conn(&ctx, Some(&conn), Method::GET, "/v1/sandboxes")).await?;
                let body = expect_error(&listed, 401, "E1002")?;
                ensure!(body["error"]["type"] == "ProviderAuthenticationError", "{body}");
                ensure!(!body.to_string().contains("not-the-token"), "the api_key is never echoed: {body}");
                let created = ctx.send(as_conn(&ctx, Some(&conn), Method::POST, "/v1/sandboxes").json(&json!({"timeout": 60}))).await?;
                expect_error(&created, 401, "E1002")?;
                Ok(())
            },
        },
        case! {
            id: "engine/remote/003",
            spec: "A `rest` provider whose remote cannot be reached (nothing listens at `api_url`) answers 500 `E9001` (`ProviderError`) naming the URL; the engine goes on serving.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["sandboxes_list", "health"],
            codes: ["E9001"],
            run: |ctx| async move {
                // A port that was free a moment ago: bound, then released.
                let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
                let url = format!("http://127.0.0.1:{port}");
                let conn = rest_connection(&ctx, &url, "any", json!({})).await?;
                let resp = ctx.send(as_conn(&ctx, Some(&conn), Method::GET, "/v1/sandboxes")).await?;
                let body = expect_error(&resp, 500, "E9001")?;
                ensure!(body["error"]["message"].as_str().is_some_and(|m| m.contains(&url)), "the message names the URL: {body}");
                ctx.send(ctx.request(Method::GET, "/v1/health")).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "engine/remote/004",
            spec: "A `rest` provider whose remote accepts the connection but never answers gives up after `provider_options.timeout_ms` and answers 500 `E9002` (`ProviderTimeoutError`), never a hung request.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["sandboxes_list"],
            codes: ["E9002"],
            run: |ctx| async move {
                let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                let url = format!("http://{}", silent.local_addr()?);
                // Accepts and keeps every connection, reads nothing, answers nothing.
                let keeper = tokio::spawn(async move {
                    let mut held = Vec::new();
                    while let Ok((stream, _)) = silent.accept().await {
                        held.push(stream);
                    }
                });
                let conn = rest_connection(&ctx, &url, "any", json!({"provider_options": {"timeout_ms": 300}})).await?;
                let started = std::time::Instant::now();
                let resp = ctx.send(as_conn(&ctx, Some(&conn), Method::GET, "/v1/sandboxes")).await;
                keeper.abort();
                let body = expect_error(&resp?, 500, "E9002")?;
                ensure!(body["error"]["type"] == "ProviderTimeoutError", "{body}");
                ensure!(started.elapsed() < std::time::Duration::from_secs(10), "answered after {:?}", started.elapsed());
                Ok(())
            },
        },
        case! {
            id: "engine/remote/005",
            spec: "A `rest` connection without `api_url` or `api_key` is a configuration error: 400 `E4002` naming the missing field.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["sandboxes_list"],
            codes: ["E4002"],
            run: |ctx| async move {
                let id = provider_of_kind(&ctx, "rest").await?.ok_or_else(|| anyhow!("no provider of kind `rest`"))?;
                for (conn, field) in [(json!({"provider": id, "api_key": "k"}), "api_url"), (json!({"provider": id, "api_url": ctx.base_url()}), "api_key")] {
                    let resp = ctx.send(as_conn(&ctx, Some(&connection_header(&conn)), Method::GET, "/v1/sandboxes")).await?;
                    let body = expect_error(&resp, 400, "E4002")?;
                    ensure!(body["error"]["message"].as_str().is_some_and(|m| m.contains(field)), "the message names `{field}`: {body}");
                }
                Ok(())
            },
        },
    ]
}
