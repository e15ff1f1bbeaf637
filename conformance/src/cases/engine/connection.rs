//! The connection (spec 2.3, 5.4, 5.5): the engine keeps no account of its own,
//! so every request brings one, as the header `X-Svc-Connection` (unpadded
//! base64url JSON) or as the same fields in a POST body; its fingerprint owns the
//! sandboxes, so two accounts never see each other's.

use super::support::{
    account, account_fields, as_conn, create_as, error_snapshot, expect_error, own, sb,
};
use crate::engine::connection_header;
use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::{Context as _, ensure};
use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/connection/001",
            spec: "A header `X-Svc-Connection` that is not unpadded base64url of a connection JSON object (not base64, not JSON, not an object, a field the connection does not have) is 400 `E4002`.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_list", "sandboxes_create"],
            codes: ["E4002"],
            run: |ctx| async move {
                let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
                for bad in [
                    "%%% not base64 %%%".to_owned(),
                    b64("not json"),
                    b64("[\"local\"]"),
                    b64(r#"{"provider": "local", "colour": "red"}"#),
                    b64(r#"{"provider": 7}"#),
                ] {
                    for method in [Method::GET, Method::POST] {
                        let mut rb = as_conn(&ctx, Some(&bad), method.clone(), "/v1/sandboxes");
                        if method == Method::POST { rb = rb.json(&json!({"timeout": 60})); }
                        let body = expect_error(&ctx.send(rb).await?, 400, "E4002").with_context(|| format!("{method} with X-Svc-Connection {bad:?}"))?;
                        if bad == b64("not json") && method == Method::GET {
                            error_snapshot(&ctx, "engine__connection__bad_header", &body, &[])?;
                        }
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "engine/connection/002",
            spec: "A connection naming a provider the engine does not have is 400 `E4002`, whether it comes in the header or in a POST body.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_create", "sandboxes_list"],
            codes: ["E4002"],
            run: |ctx| async move {
                let nope = connection_header(&json!({"provider": "no-such-provider"}));
                let body = expect_error(&ctx.send(as_conn(&ctx, Some(&nope), Method::GET, "/v1/sandboxes")).await?, 400, "E4002")?;
                ensure!(body["error"]["message"].as_str().is_some_and(|m| m.contains("no-such-provider")), "the message names it: {body}");
                error_snapshot(&ctx, "engine__connection__unknown_provider", &body, &[])?;
                let in_body = ctx.send(as_conn(&ctx, None, Method::POST, "/v1/sandboxes").json(&json!({"timeout": 60, "provider": "no-such-provider"}))).await?;
                expect_error(&in_body, 400, "E4002")?;
                Ok(())
            },
        },
        case! {
            id: "engine/connection/003",
            spec: "The connection's fields may come in a POST body instead of the header: the body's `api_key` makes the same account as the header's; the same field given both ways with two values is 400 `E4002`, with one value it is accepted.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_create", "sandboxes_info"],
            codes: ["E4002", "E2009"],
            run: |ctx| async move {
                // The whole connection in the body (a `rest` provider's also names its remote).
                let with_timeout = |mut fields: Value, timeout: u64| { fields["timeout"] = json!(timeout); fields };
                let resp = ctx.send(as_conn(&ctx, None, Method::POST, "/v1/sandboxes").json(&with_timeout(account_fields(&ctx, "conformance-body-key"), 120))).await?;
                resp.expect_status(201)?;
                let record = resp.json()?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                let same = account(&ctx, "conformance-body-key");
                ctx.track_sandbox(Some(same.clone()), &id);
                info(&ctx, Some(&same), &id).await?.expect_status(200)?;
                expect_error(&info(&ctx, own(&ctx).as_deref(), &id).await?, 404, "E2009").context("the body's account is not the keyless one")?;
                let clash = ctx.send(as_conn(&ctx, Some(&account(&ctx, "key-one")), Method::POST, "/v1/sandboxes").json(&with_timeout(account_fields(&ctx, "key-two"), 60))).await?;
                expect_error(&clash, 400, "E4002")?;
                let agree = ctx.send(as_conn(&ctx, Some(&account(&ctx, "key-one")), Method::POST, "/v1/sandboxes").json(&with_timeout(account_fields(&ctx, "key-one"), 60))).await?;
                agree.expect_status(201)?;
                let agreed = agree.json()?["sandbox_id"].as_str().unwrap_or_default().to_owned();
                ctx.track_sandbox(Some(account(&ctx, "key-one")), &agreed);
                info(&ctx, Some(&account(&ctx, "key-one")), &agreed).await?.expect_status(200)?;
                for (conn, sid) in [(same, id), (account(&ctx, "key-one"), agreed)] {
                    ctx.send(as_conn(&ctx, Some(&conn), Method::DELETE, &sb(&sid, ""))).await?;
                }
                Ok(())
            },
        },
        case! {
            id: "engine/connection/004",
            spec: "Another account's sandbox (a different `api_key`, so a different fingerprint) is 404 `E2009` on every route and absent from that account's list; its attempts leave the owner's sandbox running.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes", "feature:commands", "feature:files"],
            endpoints: ["sandboxes_info", "sandboxes_kill", "sandboxes_list", "sandboxes_connect", "commands_run", "files_read"],
            codes: ["E2009"],
            run: |ctx| async move {
                let alice = account(&ctx, "conformance-alice");
                let bob = account(&ctx, "conformance-bob");
                let record = create_as(&ctx, Some(&alice), &json!({"timeout": 300})).await?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                let tries: Vec<(Method, String, Option<Value>)> = vec![
                    (Method::GET, sb(&id, ""), None),
                    (Method::GET, sb(&id, "/running"), None),
                    (Method::POST, sb(&id, "/connect"), Some(json!({}))),
                    (Method::POST, sb(&id, "/commands/run"), Some(json!({"cmd": "echo stolen"}))),
                    (Method::GET, sb(&id, "/files/content?path=x"), None),
                    (Method::DELETE, sb(&id, ""), None),
                ];
                for (method, path, body) in tries {
                    let mut rb = as_conn(&ctx, Some(&bob), method.clone(), &path);
                    if let Some(b) = body { rb = rb.json(&b); }
                    let err = expect_error(&ctx.send(rb).await?, 404, "E2009").with_context(|| format!("bob: {method} {path}"))?;
                    if method == Method::GET && path == sb(&id, "") {
                        error_snapshot(&ctx, "engine__connection__other_account", &err, &[(&id, "[sandbox_id]")])?;
                    }
                }
                let listed = ctx.send(as_conn(&ctx, Some(&bob), Method::GET, "/v1/sandboxes")).await?.json()?;
                ensure!(listed["sandboxes"].as_array().is_some_and(|l| l.iter().all(|s| s["sandbox_id"] != id.as_str())), "bob's list: {listed}");
                let mine = ctx.send(as_conn(&ctx, Some(&alice), Method::GET, "/v1/sandboxes")).await?.json()?;
                ensure!(mine["sandboxes"].as_array().is_some_and(|l| l.iter().any(|s| s["sandbox_id"] == id.as_str())), "alice's list: {mine}");
                let running = ctx.send(as_conn(&ctx, Some(&alice), Method::GET, &sb(&id, "/running"))).await?.json()?;
                ensure!(running == json!({"running": true}), "bob's kill did nothing: {running}");
                ctx.send(as_conn(&ctx, Some(&alice), Method::DELETE, &sb(&id, ""))).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "engine/connection/005",
            spec: "A request without any connection means the default provider `local`: a sandbox created so is `local`'s, and the connection `{provider: \"local\"}` is the same account.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: ["sandboxes_create", "sandboxes_info"],
            codes: [],
            run: |ctx| async move {
                let record = create_as(&ctx, None, &json!({"timeout": 120})).await?;
                ensure!(record["provider"] == "local", "{record}");
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                let named = connection_header(&json!({"provider": "local"}));
                let resp = info(&ctx, Some(&named), &id).await?;
                resp.expect_status(200)?;
                ensure!(resp.json()?["sandbox_id"] == id.as_str(), "{}", resp.describe());
                ctx.send(as_conn(&ctx, None, Method::DELETE, &sb(&id, ""))).await?.expect_status(200)?;
                Ok(())
            },
        },
    ]
}

async fn info(ctx: &Ctx, conn: Option<&str>, id: &str) -> anyhow::Result<Resp> {
    ctx.send(as_conn(ctx, conn, Method::GET, &sb(id, ""))).await
}
