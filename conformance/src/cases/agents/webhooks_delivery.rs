//! Webhook deliveries, received by a local receiver the case starts: the Standard Webhooks
//! signature checked here with the secret alone (HMAC-SHA256, independently of the
//! server), the test route, retries, and the events sessions send.

use super::support::sessions::{Api, RUNTIMES, expect_error_param, id_of};
use super::webhooks::{ENDPOINTS, check_secret, create, ok, path};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, bail, ensure};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wiremock::matchers::{method, path as at};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// How long a delivery may take to arrive.
const ARRIVAL: Duration = Duration::from_secs(15);

/// A receiver at `/hook` answering `statuses` to the first requests, then 200.
async fn receiver(statuses: &[u16]) -> MockServer {
    let server = MockServer::start().await;
    for (i, status) in statuses.iter().enumerate() {
        Mock::given(method("POST"))
            .and(at("/hook"))
            .respond_with(ResponseTemplate::new(*status))
            .up_to_n_times(1)
            .with_priority(u8::try_from(i + 1).unwrap_or(u8::MAX))
            .mount(&server)
            .await;
    }
    Mock::given(method("POST"))
        .and(at("/hook"))
        .respond_with(ResponseTemplate::new(200))
        .with_priority(u8::MAX)
        .mount(&server)
        .await;
    server
}

fn hook(server: &MockServer) -> String {
    format!("{}/hook", server.uri())
}

/// Waits for `n` requests and returns them all.
async fn received(server: &MockServer, n: usize) -> anyhow::Result<Vec<Request>> {
    let deadline = Instant::now() + ARRIVAL;
    loop {
        let got = server.received_requests().await.unwrap_or_default();
        if got.len() >= n {
            return Ok(got);
        }
        if Instant::now() > deadline {
            bail!(
                "{n} deliveries expected within {ARRIVAL:?}, got {}",
                got.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn header<'a>(req: &'a Request, name: &str) -> anyhow::Result<&'a str> {
    req.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .with_context(|| format!("no `{name}` header"))
}

/// `v1,` and base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under the key `whsec_` wraps.
fn signature(secret: &str, id: &str, timestamp: &str, body: &[u8]) -> anyhow::Result<String> {
    let key = STANDARD.decode(secret.strip_prefix("whsec_").unwrap_or(secret))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key)?;
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    Ok(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// Verifies one delivery as a Standard Webhooks receiver would (fresh timestamp, one of
/// the space-separated signatures matches); returns its JSON body.
fn verify(secret: &str, req: &Request) -> anyhow::Result<Value> {
    let id = header(req, "webhook-id")?;
    let timestamp = header(req, "webhook-timestamp")?;
    ensure!(id.starts_with("msg_"), "webhook-id {id}");
    let sent: u64 = timestamp
        .parse()
        .context("webhook-timestamp is unix seconds")?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    ensure!(
        now.abs_diff(sent) < 300,
        "webhook-timestamp {sent} is not now ({now})"
    );
    let expected = signature(secret, id, timestamp, &req.body)?;
    let given = header(req, "webhook-signature")?;
    ensure!(
        given.split(' ').any(|s| s == expected),
        "webhook-signature {given} does not verify with the secret (expected {expected})"
    );
    ensure!(
        header(req, "content-type")?.starts_with("application/json"),
        "content-type"
    );
    let body: Value = serde_json::from_slice(&req.body).context("the body is JSON")?;
    ensure!(
        body["object"] == "event" && body["created_at"].is_u64(),
        "{body}"
    );
    ensure!(
        body["id"].as_str().is_some_and(|i| i.starts_with("evt_")),
        "{body}"
    );
    ensure!(
        body["data"]["id"].is_string() && body["data"]["environment_type"].is_string(),
        "{body}"
    );
    Ok(body)
}

/// Types of the deliveries for session `sid`, in arrival order.
fn types_for(reqs: &[Request], secret: &str, sid: &str) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for req in reqs {
        let body = verify(secret, req)?;
        if body["data"]["id"] == sid {
            out.push(body["type"].as_str().unwrap_or_default().to_owned());
        }
    }
    Ok(out)
}

async fn test_route(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::as_token(&ctx, "carol-token");
    let server = receiver(&[202]).await;
    let e = create(&api, &hook(&server), &["idle"]).await?;
    let secret = check_secret(&e)?;
    let id = id_of(&e)?;
    let result = ok(&api, &path(&id, "/test"), &json!({"event_type": "failed"})).await?;
    ensure!(
        result["object"] == "webhook_endpoint.test"
            && result["webhook_endpoint_id"] == id.as_str()
            && result["event_type"] == "agent.session.failed"
            && result["status_code"] == 202
            && result["success"] == true,
        "{result}"
    );
    let got = received(&server, 1).await?;
    let body = verify(&secret, &got[0])?;
    ensure!(body["type"] == "agent.session.failed", "{body}");
    ensure!(!result.to_string().contains(&secret[6..]), "{result}");
    // The receiver's status is reported, not judged.
    let teapot = receiver(&[418]).await;
    ok(&api, &path(&id, ""), &json!({"url": hook(&teapot)})).await?;
    let result = ok(
        &api,
        &path(&id, "/test"),
        &json!({"event_type": "agent.session.created"}),
    )
    .await?;
    ensure!(
        result["status_code"] == 418 && result["event_type"] == "agent.session.created",
        "{result}"
    );
    // Nothing listens: no status exists, so the test fails naming `url`.
    ok(
        &api,
        &path(&id, ""),
        &json!({"url": "http://127.0.0.1:1/hook"}),
    )
    .await?;
    let resp = api
        .send(api.post(&path(&id, "/test"), &json!({"event_type": "idle"})))
        .await?;
    expect_error_param(&resp, 400, "invalid_request", "url")?;
    ctx.snapshot("agents__webhooks__test_result", &result)?;
    ctx.snapshot("agents__webhooks__test_event", &body)
}

async fn rotation_signs_with_the_new_secret(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::as_token(&ctx, "dave-token");
    let server = receiver(&[]).await;
    let e = create(&api, &hook(&server), &["idle"]).await?;
    let old = check_secret(&e)?;
    let id = id_of(&e)?;
    let rotated = ok(&api, &path(&id, "/rotate_secret"), &json!({})).await?;
    let new = check_secret(&rotated)?;
    ok(&api, &path(&id, "/test"), &json!({"event_type": "idle"})).await?;
    let got = received(&server, 1).await?;
    verify(&new, &got[0])?;
    ensure!(
        verify(&old, &got[0]).is_err(),
        "the old secret still verifies after rotation"
    );
    Ok(())
}

async fn retried(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::as_token(&ctx, "erin-token");
    let server = receiver(&[500, 503]).await;
    let e = create(&api, &hook(&server), &["agent.session.created"]).await?;
    let secret = check_secret(&e)?;
    let sid = api.create_on(RUNTIMES[0], None).await?;
    let got = received(&server, 3).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got_after = server.received_requests().await.unwrap_or_default();
    ensure!(
        got_after.len() == 3,
        "no attempt after the 200: {}",
        got_after.len()
    );
    let ids: Vec<&str> = got
        .iter()
        .map(|r| header(r, "webhook-id"))
        .collect::<Result<_, _>>()?;
    ensure!(
        ids.iter().all(|i| *i == ids[0]),
        "one webhook-id across attempts: {ids:?}"
    );
    ensure!(
        types_for(&got, &secret, &sid)? == ["agent.session.created"; 3],
        "three attempts of one event"
    );
    Ok(())
}

async fn session_events(ctx: Ctx) -> anyhow::Result<()> {
    let api = Api::as_token(&ctx, "frank-token");
    let server = receiver(&[]).await;
    let e = create(
        &api,
        &hook(&server),
        &["created", "in_progress", "idle", "failed"],
    )
    .await?;
    let secret = check_secret(&e)?;
    let mut expected = 0;
    let mut sessions = Vec::new();
    for rt in RUNTIMES {
        let sid = api.create_on(rt, Some("hello webhooks")).await?;
        api.settle(&sid, 1).await?;
        api.input(&sid, "[[scenario:fail:boom]]").await?;
        api.settle(&sid, 2).await?;
        expected += 5;
        sessions.push((rt, sid));
    }
    let got = received(&server, expected).await?;
    for (rt, sid) in &sessions {
        let types = types_for(&got, &secret, sid)?;
        ensure!(
            types
                == [
                    "agent.session.created",
                    "agent.session.in_progress",
                    "agent.session.idle",
                    "agent.session.in_progress",
                    "agent.session.failed"
                ],
            "{rt}: deliveries in the order of the session's changes: {types:?}"
        );
    }
    let first = verify(&secret, &got[0])?;
    ensure!(first["data"]["id"] == sessions[0].1.as_str(), "{first}");
    ctx.snapshot("agents__webhooks__session_created_event", &first)
}

async fn owners_and_subscriptions(ctx: Ctx) -> anyhow::Result<()> {
    let alice = Api::as_token(&ctx, "alice-token");
    let bob = Api::as_token(&ctx, "bob-token");
    let server = receiver(&[]).await;
    let e = create(&alice, &hook(&server), &["idle"]).await?;
    let secret = check_secret(&e)?;
    let theirs = bob.create_on(RUNTIMES[0], Some("bob's turn")).await?;
    bob.settle(&theirs, 1).await?;
    let mine = alice.create_on(RUNTIMES[0], Some("alice's turn")).await?;
    alice.settle(&mine, 1).await?;
    let got = received(&server, 1).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = server.received_requests().await.unwrap_or(got);
    ensure!(
        types_for(&got, &secret, &mine)? == ["agent.session.idle"],
        "only the subscribed type"
    );
    ensure!(
        types_for(&got, &secret, &theirs)?.is_empty(),
        "no event of another owner's session"
    );
    ensure!(got.len() == 1, "{} deliveries", got.len());
    let listed = alice.json(ENDPOINTS).await?;
    ensure!(
        listed["data"].as_array().map(Vec::len) == Some(1),
        "{listed}"
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/webhooks/008",
            spec: "POST .../test with `event_type`: the server signs (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature v1 HMAC-SHA256 of id.timestamp.body) and delivers one event now, and answers 200 with the receiver's status; an unreachable receiver is 400 naming `url`.",
            profile: &profiles::AGENTS_WEBHOOKS,
            tags: [],
            endpoints: ["agents_webhooks_test", "agents_webhooks_create", "agents_webhooks_update"],
            codes: ["invalid_request"],
            run: test_route,
        },
        case! {
            id: "agents/webhooks/009",
            spec: "After rotate_secret, deliveries are signed with the new secret only.",
            profile: &profiles::AGENTS_WEBHOOKS,
            tags: [],
            endpoints: ["agents_webhooks_rotate_secret", "agents_webhooks_test"],
            codes: [],
            run: rotation_signs_with_the_new_secret,
        },
        case! {
            id: "agents/webhooks/010",
            spec: "A delivery answered with an error status is retried with backoff, under the same webhook-id and a fresh signature, until the receiver answers 2xx.",
            profile: &profiles::AGENTS_WEBHOOKS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_webhooks_create", "agents_sessions_create"],
            codes: [],
            run: retried,
        },
        case! {
            id: "agents/webhooks/011",
            spec: "Sessions deliver `agent.session.created`, `in_progress`, `idle` and `failed` to subscribed endpoints, signed, in the order the session changed (both runtimes).",
            profile: &profiles::AGENTS_WEBHOOKS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_webhooks_create", "agents_sessions_create", "agents_sessions_events_create"],
            codes: [],
            run: session_events,
        },
        case! {
            id: "agents/webhooks/012",
            spec: "An endpoint receives only the types it subscribed to, and only for sessions of its own owner.",
            profile: &profiles::AGENTS_WEBHOOKS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_webhooks_create", "agents_webhooks_list", "agents_sessions_create"],
            codes: [],
            run: owners_and_subscriptions,
        },
    ]
}

#[cfg(test)]
mod tests {
    /// The verifier above reproduces the Standard Webhooks published vector, so a pass
    /// means the server's signatures are what any receiver library accepts.
    #[test]
    fn the_verifier_reproduces_the_published_vector() {
        let sig = super::signature(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "1614265330",
            br#"{"test": 2432232314}"#,
        )
        .unwrap();
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
