//! Webhook endpoints (agents spec 2.11, 4.10, 6): the routes, the body and URL rules, the
//! event types and the one-time secret. Deliveries are in `webhooks_delivery`.

use super::support::sessions::{Api, expect_error_param, id_of};
use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::{Context, ensure};
use base64::Engine as _;
use serde_json::{Value, json};

pub const ENDPOINTS: &str = "/v1/webhook_endpoints";
const PUBLIC_URL: &str = "https://hooks.example.com/svc";
const FOUR: [&str; 4] = [
    "agent.session.created",
    "agent.session.in_progress",
    "agent.session.idle",
    "agent.session.failed",
];

pub fn path(id: &str, rest: &str) -> String {
    format!("{ENDPOINTS}/{id}{rest}")
}

/// POST, expecting 200 JSON.
pub async fn ok(api: &Api, path: &str, body: &Value) -> anyhow::Result<Value> {
    let resp = api.send(api.post(path, body)).await?;
    resp.expect_status(200)?;
    resp.json()
}

/// Creates an endpoint; returns it (with its one-time secret).
pub async fn create(api: &Api, url: &str, types: &[&str]) -> anyhow::Result<Value> {
    let e = ok(
        api,
        ENDPOINTS,
        &json!({"url": url, "event_types": types, "name": "hooks"}),
    )
    .await?;
    check_secret(&e)?;
    Ok(e)
}

/// `whsec_` and base64 of at least 24 bytes (Standard Webhooks), once as `signing_secret`
/// (the SDK's name) and, when present, the same value as `secret` (the spec's name).
pub fn check_secret(e: &Value) -> anyhow::Result<String> {
    let secret = e["signing_secret"].as_str().context("signing_secret")?;
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|k| base64::engine::general_purpose::STANDARD.decode(k).ok())
        .with_context(|| format!("`{secret}` is not whsec_ and base64"))?;
    ensure!(key.len() >= 24, "a {}-byte key is too short", key.len());
    ensure!(e.get("secret").is_none_or(|s| s == secret), "{e}");
    Ok(secret.to_owned())
}

/// The endpoint object: the SDK's required fields, and never a secret.
fn check_endpoint(e: &Value) -> anyhow::Result<()> {
    ensure!(e["object"] == "webhook_endpoint", "{e}");
    ensure!(
        e["id"].is_string() && e["name"].is_string() && e["url"].is_string(),
        "{e}"
    );
    ensure!(
        e["created_at"].is_u64() && e["event_types"].is_array(),
        "{e}"
    );
    ensure!(
        e.get("signing_secret").is_none() && e.get("secret").is_none(),
        "a secret outside create and rotate: {e}"
    );
    Ok(())
}

/// Replaces the one-time secret after checking it, for snapshots.
pub fn redact_secret(mut e: Value) -> Value {
    for key in ["signing_secret", "secret"] {
        if e.get(key).is_some() {
            e[key] = json!("[secret]");
        }
    }
    e
}

async fn refused(api: &Api, path: &str, body: Value, param: &str) -> anyhow::Result<()> {
    let resp: Resp = api.send(api.post(path, &body)).await?;
    expect_error_param(&resp, 400, "invalid_request", param)
        .with_context(|| format!("body {body}"))?;
    Ok(())
}

fn body(url: &str) -> Value {
    json!({"url": url, "event_types": ["idle"], "name": "n"})
}

async fn lifecycle(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    let e = create(&api, PUBLIC_URL, &["agent.session.idle"]).await?;
    let secret = check_secret(&e)?;
    let id = id_of(&e)?;
    let got = api.json(&path(&id, "")).await?;
    check_endpoint(&got)?;
    ensure!(got["url"] == PUBLIC_URL && got["name"] == "hooks", "{got}");
    let second = create(&api, "https://other.example.com/h", &["idle"]).await?;
    // Other cases create endpoints meanwhile: positions are checked relative to ours.
    let all = api.json(&format!("{ENDPOINTS}?limit=100")).await?;
    let ids: Vec<&str> = all["data"]
        .as_array()
        .context("data")?
        .iter()
        .filter_map(|e| e["id"].as_str())
        .collect();
    let position = |want: &Value| ids.iter().position(|i| want == *i);
    let (Some(newer), Some(older)) = (position(&second["id"]), position(&e["id"])) else {
        anyhow::bail!("both endpoints listed: {ids:?}");
    };
    ensure!(newer < older, "newest first: {ids:?}");
    let first = api.json(&format!("{ENDPOINTS}?limit=1")).await?;
    ensure!(
        first["object"] == "list"
            && first["has_more"] == true
            && first["data"].as_array().map(Vec::len) == Some(1),
        "{first}"
    );
    let rest = api
        .json(&format!("{ENDPOINTS}?limit=1&after={}", ids[newer]))
        .await?;
    ensure!(
        rest["data"][0]["id"] == ids[newer + 1],
        "the page after {}: {rest}",
        ids[newer]
    );
    for listed in all["data"].as_array().into_iter().flatten() {
        check_endpoint(listed)?;
    }
    let same = ok(&api, &path(&id, ""), &json!({"name": "hooks"})).await?;
    ensure!(
        e["updated_at"].is_u64() && same["updated_at"] == e["updated_at"],
        "an unchanged update keeps updated_at: {same}"
    );
    // Timestamps are whole seconds: let one pass so a change must show.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let up = ok(
        &api,
        &path(&id, ""),
        &json!({"name": "renamed", "url": "https://hooks.example.com/v2"}),
    )
    .await?;
    check_endpoint(&up)?;
    ensure!(
        up["updated_at"].as_u64() > e["updated_at"].as_u64(),
        "a change moves updated_at: {up}"
    );
    ensure!(
        up["name"] == "renamed" && up["url"] == "https://hooks.example.com/v2",
        "{up}"
    );
    ensure!(
        up["event_types"] == json!(["agent.session.idle"]),
        "omitted fields unchanged: {up}"
    );
    for answer in [&got, &all, &rest, &up] {
        ensure!(
            !answer.to_string().contains(&secret[6..]),
            "the secret came back: {answer}"
        );
    }
    let gone = api.send(api.delete(&path(&id, ""))).await?;
    gone.expect_status(200)?;
    let deleted = gone.json()?;
    ensure!(
        deleted == json!({"id": id, "object": "webhook_endpoint.deleted", "deleted": true}),
        "{deleted}"
    );
    for resp in [
        api.send(api.get(&path(&id, ""))).await?,
        api.send(api.post(&path(&id, ""), &json!({"name": "x"})))
            .await?,
        api.send(api.delete(&path(&id, ""))).await?,
    ] {
        expect_error_param(&resp, 404, "resource_not_found", "webhook_endpoint_id")?;
    }
    ctx.snapshot("agents__webhooks__endpoint_with_secret", &redact_secret(e))?;
    ctx.snapshot("agents__webhooks__endpoint", &got)?;
    ctx.snapshot("agents__webhooks__deleted", &deleted)
}

async fn body_rules(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    let with = |key: &str, value: Value| {
        let mut b = body(PUBLIC_URL);
        b[key] = value;
        b
    };
    for key in [
        "secret",
        "signing_secret",
        "description",
        "metadata",
        "enabled",
    ] {
        refused(&api, ENDPOINTS, with(key, json!("x")), key).await?;
    }
    refused(
        &api,
        ENDPOINTS,
        json!({"url": PUBLIC_URL, "event_types": ["idle"]}),
        "name",
    )
    .await?;
    refused(
        &api,
        ENDPOINTS,
        json!({"name": "n", "event_types": ["idle"]}),
        "url",
    )
    .await?;
    refused(
        &api,
        ENDPOINTS,
        json!({"name": "n", "url": PUBLIC_URL}),
        "event_types",
    )
    .await?;
    refused(&api, ENDPOINTS, with("name", json!("")), "name").await?;
    refused(&api, ENDPOINTS, with("url", json!(42)), "url").await?;
    let id = id_of(&create(&api, PUBLIC_URL, &["idle"]).await?)?;
    refused(
        &api,
        &path(&id, ""),
        json!({"secret": "whsec_AAAA"}),
        "secret",
    )
    .await?;
    refused(
        &api,
        &path(&id, ""),
        json!({"event_types": []}),
        "event_types",
    )
    .await?;
    refused(&api, &path(&id, "/test"), json!({}), "event_type").await?;
    refused(
        &api,
        &path(&id, "/test"),
        json!({"event_type": "idle", "url": PUBLIC_URL}),
        "url",
    )
    .await?;
    Ok(())
}

/// Hosts in blocks the IANA special-purpose registries do not mark globally reachable, which
/// the older private-range rules let through: every one is refused wherever a caller gives
/// the server a URL to reach (webhook endpoints, vault credential URLs).
pub const SPECIAL_PURPOSE_HOSTS: &[&str] = &[
    "192.0.0.1",
    "192.0.0.170",
    "192.0.2.10",
    "198.51.100.7",
    "203.0.113.9",
    "192.88.99.1",
    "[2001:db8::1]",
    "[100::1]",
    "[64:ff9b:1::7f00:1]",
    "[::ffff:0:7f00:1]",
    "[2001::1]",
    "[2001:2::1]",
    "[3fff::1]",
    "[5f00::1]",
];

async fn special_purpose(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    for host in SPECIAL_PURPOSE_HOSTS {
        refused(&api, ENDPOINTS, body(&format!("https://{host}/h")), "url")
            .await
            .with_context(|| (*host).to_owned())?;
    }
    // Globally reachable exceptions inside refused blocks, and ordinary public hosts, stay open.
    for url in [
        "https://192.0.0.9/h",
        "https://[2001:1::1]/h",
        "https://[2606:4700::1111]/h",
    ] {
        create(&api, url, &["idle"]).await?;
    }
    Ok(())
}

async fn url_rules(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    for url in [
        "http://hooks.example.com/svc",
        "ftp://hooks.example.com/svc",
        "https://user@hooks.example.com/svc",
        "https://user:pw@hooks.example.com/svc",
        "https://hooks.example.com/svc?token=x",
        "https://hooks.example.com/svc?",
        "https://127.0.0.1/h",
        "https://2130706433/h",
        "https://10.1.2.3/h",
        "https://172.16.0.1/h",
        "https://192.168.1.1/h",
        "https://169.254.169.254/latest/meta-data",
        "https://0.0.0.0/h",
        "https://[::1]/h",
        "https://[::]/h",
        "https://[fe80::1]/h",
        "https://[fd00::1]/h",
        "https://[::ffff:127.0.0.1]/h",
        "https://[::ffff:10.0.0.1]/h",
        "https://localhost/h",
        "https://localhost./h",
        "https://hooks.localhost/h",
        "https://db.internal/h",
        "not a url",
    ] {
        refused(&api, ENDPOINTS, body(url), "url").await?;
    }
    let id = id_of(&create(&api, PUBLIC_URL, &["idle"]).await?)?;
    refused(
        &api,
        &path(&id, ""),
        json!({"url": "https://[::ffff:7f00:1]/h"}),
        "url",
    )
    .await?;
    refused(
        &api,
        &path(&id, ""),
        json!({"url": "http://hooks.example.com/h"}),
        "url",
    )
    .await?;
    for url in ["https://8.8.8.8/h", "https://[2001:4860:4860::8888]:8443/h"] {
        create(&api, url, &["idle"]).await?;
    }
    Ok(())
}

async fn dev_switches(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::as_token(&ctx, "grace-token");
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "https://[::1]:9/hook",
    ] {
        create(&api, url, &["idle"]).await?;
    }
    for url in [
        "http://u:p@127.0.0.1:9/hook",
        "http://127.0.0.1:9/hook?x=1",
        "ftp://127.0.0.1/h",
    ] {
        refused(&api, ENDPOINTS, body(url), "url").await?;
    }
    Ok(())
}

async fn event_types(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    let list = api.json("/v1/webhook_event_types").await?;
    ensure!(list == json!({"object": "list", "data": FOUR}), "{list}");
    let e = create(
        &api,
        PUBLIC_URL,
        &[
            "agent.session.created",
            "in_progress",
            "idle",
            "failed",
            "idle",
        ],
    )
    .await?;
    ensure!(
        e["event_types"] == json!(FOUR),
        "full names, no repeats: {e}"
    );
    for bad in [
        json!(["agent.session.action_required"]),
        json!(["action_required"]),
        json!(["response.completed"]),
        json!(["agent.session.deleted"]),
        json!([]),
        json!("idle"),
        json!([7]),
    ] {
        refused(
            &api,
            ENDPOINTS,
            json!({"url": PUBLIC_URL, "event_types": bad, "name": "n"}),
            "event_types",
        )
        .await?;
    }
    let id = id_of(&e)?;
    refused(
        &api,
        &path(&id, "/test"),
        json!({"event_type": "agent.session.action_required"}),
        "event_type",
    )
    .await?;
    ctx.snapshot("agents__webhooks__event_types", &list)
}

async fn rotate(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::new(&ctx);
    let e = create(&api, PUBLIC_URL, &["idle"]).await?;
    let old = check_secret(&e)?;
    let id = id_of(&e)?;
    refused(
        &api,
        &path(&id, "/rotate_secret"),
        json!({"keep_old_secret_active_for_24_hours": true}),
        "keep_old_secret_active_for_24_hours",
    )
    .await?;
    refused(
        &api,
        &path(&id, "/rotate_secret"),
        json!({"grace": 10}),
        "grace",
    )
    .await?;
    let rotated = ok(&api, &path(&id, "/rotate_secret"), &json!({})).await?;
    let new = check_secret(&rotated)?;
    ensure!(new != old, "the secret changed");
    ensure!(
        rotated["id"] == id.as_str() && rotated["object"] == "webhook_endpoint",
        "{rotated}"
    );
    let again = ok(
        &api,
        &path(&id, "/rotate_secret"),
        &json!({"keep_old_secret_active_for_24_hours": false}),
    )
    .await?;
    let newest = check_secret(&again)?;
    let got = api.json(&path(&id, "")).await?;
    check_endpoint(&got)?;
    for secret in [&old, &new, &newest] {
        ensure!(!got.to_string().contains(&secret[6..]), "{got}");
    }
    let missing = api
        .send(api.post(
            &path("we_000000000000000000000000", "/rotate_secret"),
            &json!({}),
        ))
        .await?;
    expect_error_param(&missing, 404, "resource_not_found", "webhook_endpoint_id")?;
    Ok(())
}

async fn isolation(ctx: Ctx) -> anyhow::Result<()> {
    let bob = Api::as_token(&ctx, "bob-token");
    let alice = Api::as_token(&ctx, "alice-token");
    let id = id_of(&create(&bob, PUBLIC_URL, &["idle"]).await?)?;
    let missing = "we_ffffffffffffffffffffffff";
    let norm = |r: &Resp, s: &str| (r.status, r.text().replace(s, "ID"));
    for (method, rest, body) in [
        ("GET", "", None),
        ("POST", "", Some(json!({"name": "mine"}))),
        ("DELETE", "", None),
        ("POST", "/rotate_secret", Some(json!({}))),
        ("POST", "/test", Some(json!({"event_type": "idle"}))),
    ] {
        let send = |target: &str| {
            let mut rb = alice.req(
                method.parse().unwrap_or(reqwest::Method::GET),
                &path(target, rest),
            );
            if let Some(b) = &body {
                rb = rb.json(b);
            }
            rb
        };
        let theirs = alice.send(send(&id)).await?;
        let none = alice.send(send(missing)).await?;
        expect_error_param(&theirs, 404, "resource_not_found", "webhook_endpoint_id")?;
        ensure!(
            norm(&theirs, &id) == norm(&none, missing),
            "{method} {rest}: another owner's endpoint answers like a missing one"
        );
    }
    let list = alice.json(ENDPOINTS).await?;
    ensure!(
        !list.to_string().contains(&id),
        "alice's list has no bob endpoint: {list}"
    );
    ensure!(
        bob.json(&path(&id, "")).await?["name"] == "hooks",
        "bob's endpoint is untouched"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/webhooks/001",
            spec: "Webhook endpoints: create (200 with the one-time `whsec_` secret), list (newest first, paged, no secret), get (no secret), update of `url`, `event_types`, `name` (updated_at moves only on a change), delete (then 404 naming webhook_endpoint_id).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_webhooks_create", "agents_webhooks_list", "agents_webhooks_get", "agents_webhooks_update", "agents_webhooks_delete"],
            codes: ["resource_not_found"],
            run: lifecycle,
        },
        case! {
            id: "agents/webhooks/002",
            spec: "POST /v1/webhook_endpoints: body only `url`, `event_types`, `name`; other keys, and missing or mistyped ones, are 400 naming the param (also on update and test).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_webhooks_create", "agents_webhooks_update", "agents_webhooks_test"],
            codes: ["invalid_request"],
            run: body_rules,
        },
        case! {
            id: "agents/webhooks/003",
            spec: "`url` must be https, without userinfo, without a query string, not a private or loopback address (in any spelling: decimal, IPv6, IPv4-mapped, `localhost.`); checked on create and on update.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_webhooks_create", "agents_webhooks_update"],
            codes: ["invalid_request"],
            run: url_rules,
        },
        case! {
            id: "agents/webhooks/004",
            spec: "Local development: `SVC_AGENTS_WEBHOOK_ALLOW_HTTP=1` and `SVC_AGENTS_ALLOW_PRIVATE_URLS=1` admit http and loopback URLs; userinfo and query strings stay refused.",
            profile: &profiles::AGENTS_WEBHOOKS,
            tags: [],
            endpoints: ["agents_webhooks_create"],
            codes: ["invalid_request"],
            run: dev_switches,
        },
        case! {
            id: "agents/webhooks/005",
            spec: "`event_types` accepts `agent.session.created`, `in_progress`, `idle`, `failed` (with or without the prefix, stored in full); `agent.session.action_required` and unknown types are 400; GET /v1/webhook_event_types lists the accepted names.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_webhook_event_types", "agents_webhooks_create", "agents_webhooks_test"],
            codes: ["invalid_request"],
            run: event_types,
        },
        case! {
            id: "agents/webhooks/006",
            spec: "POST .../rotate_secret: 200 with the new secret, shown only this once; `keep_old_secret_active_for_24_hours` (true) is 400: no overlap window.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_webhooks_rotate_secret", "agents_webhooks_get"],
            codes: ["invalid_request", "resource_not_found"],
            run: rotate,
        },
        case! {
            id: "agents/webhooks/007",
            spec: "Another owner's webhook endpoint answers exactly like a missing one on every route (get, update, delete, rotate_secret, test), and lists never include it.",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: [],
            endpoints: ["agents_webhooks_get", "agents_webhooks_update", "agents_webhooks_delete", "agents_webhooks_rotate_secret", "agents_webhooks_test", "agents_webhooks_list"],
            codes: ["resource_not_found"],
            run: isolation,
        },
        case! {
            id: "agents/webhooks/013",
            spec: "Every address the IANA special-purpose registries do not mark globally reachable is refused as a webhook `url` (IETF protocol assignments, documentation ranges, the 6to4 relay, discard-only, local-use NAT64, IPv4-translated, Teredo, benchmarking); the registries' globally reachable exceptions are accepted.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_webhooks_create"],
            codes: ["invalid_request"],
            run: special_purpose,
        },
    ]
}
