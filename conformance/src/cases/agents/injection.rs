//! Vault credentials reaching MCP servers (agents spec 3, 4.8): attached through a session's
//! `vault_ids`, injected only into the MCP tool whose scheme, host and port match, as an
//! `Authorization` header through the child's environment, never its command line.

use super::support::sessions::{Api, expect_error_param, id_of, spath};
use crate::mcp_mock::McpMock;
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};

async fn vault(api: &Api) -> anyhow::Result<String> {
    let v = api
        .send(api.post("/v1/vaults", &json!({"name": "mcp"})))
        .await?
        .json()?;
    id_of(&v)
}

async fn credential(
    api: &Api,
    vault: &str,
    url: &str,
    token: &str,
    expires: Option<&str>,
) -> anyhow::Result<String> {
    let mut auth = json!({"type": "static_bearer", "token": token, "mcp_server_url": url});
    if let Some(at) = expires {
        auth = json!({"type": "mcp_oauth", "access_token": token, "mcp_server_url": url, "expires_at": at});
    }
    let resp = api
        .send(api.post(
            &format!("/v1/vaults/{vault}/credentials"),
            &json!({"name": "mcp", "auth": auth}),
        ))
        .await?;
    resp.expect_status(200)?;
    id_of(&resp.json()?)
}

fn tool(url: &str, credential_id: Option<&str>) -> Value {
    json!({"type": "mcp", "server_label": "probe", "credential_id": credential_id, "transport": {"type": "http", "server_url": url}})
}

/// A wiremock MCP server watching command lines for `secret`.
struct Probe {
    url: String,
    mock: McpMock,
}

async fn probe(secret: &str) -> anyhow::Result<Probe> {
    let mock = McpMock::start(Some(secret)).await;
    Ok(Probe {
        url: mock.url(),
        mock,
    })
}

/// One MCP turn; returns the Authorization headers the server received.
async fn call(api: &Api, sid: &str, n: usize) -> anyhow::Result<()> {
    api.input(sid, "ping [[scenario:mcp:probe/echo]]").await?;
    let turns = api.settle(sid, n).await?;
    ensure!(turns[n - 1]["status"] == "completed", "{:?}", turns[n - 1]);
    Ok(())
}

/// The Authorization headers the server received, once it was really called: an empty
/// list would make every check on them pass.
fn headers(p: &Probe) -> anyhow::Result<Vec<String>> {
    let seen = p.mock.seen();
    ensure!(
        seen.methods.iter().any(|m| m == "tools/call"),
        "the runtime never called the MCP server: {seen:?}"
    );
    Ok(seen.authorization)
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/injection/001",
            spec: "A credential attached through `vault_ids` is sent as `Authorization: Bearer` to the MCP tool with the same scheme, host and port, through the child's environment: no process's command line (`/proc/<pid>/cmdline`) ever holds it, and no answer or event carries it.",
            profile: &profiles::AGENTS_LOCAL_MCP,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_sessions_events_create", "agents_vault_credentials_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for runtime in ["rt-one", "rt-two"] {
                    let secret = format!("vault-{runtime}-Qm4Zt8Kx");
                    let p = probe(&secret).await?;
                    let vid = vault(&api).await?;
                    credential(&api, &vid, &p.url, &secret, None).await?;
                    let s = api.create(&json!({"runtime": runtime, "agent": {"tools": [tool(&p.url, None)]}, "vault_ids": [vid]})).await?;
                    ensure!(s["vault_ids"] == json!([vid]), "{s}");
                    let sid = id_of(&s)?;
                    call(&api, &sid, 1).await?;
                    let got = headers(&p)?;
                    ensure!(!got.is_empty() && got.iter().all(|h| *h == format!("Bearer {secret}")), "{runtime}: headers {got:?}");
                    let leaks = p.mock.seen().leaks;
                    ensure!(leaks.is_empty(), "{runtime}: the token is on a command line: {leaks:?}");
                    let events = api.send(api.get(&format!("{}?after=0", spath(&sid, "/events")))).await?.text();
                    let items = api.items(&sid).await?;
                    ensure!(!events.contains(&secret) && !json!(items).to_string().contains(&secret) && !api.session(&sid).await?.to_string().contains(&secret), "{runtime}: the token is never returned");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/injection/002",
            spec: "A credential for another origin (scheme, host or port) is not injected; when two attached credentials match, the tool needs `credential_id` (400 without it) and gets the one it names; unknown vaults and credentials are 400.",
            profile: &profiles::AGENTS_LOCAL_MCP,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let p = probe("unused-secret").await?;
                let vid = vault(&api).await?;
                credential(&api, &vid, "http://127.0.0.1:9/mcp", "other-port-token", None).await?;
                credential(&api, &vid, &p.url.replace("127.0.0.1", "localhost"), "other-host-token", None).await?;
                credential(&api, &vid, &p.url.replace("http://", "https://"), "other-scheme-token", None).await?;
                let sid = id_of(&api.create(&json!({"runtime": "rt-one", "agent": {"tools": [tool(&p.url, None)]}, "vault_ids": [vid]})).await?)?;
                call(&api, &sid, 1).await?;
                let got = headers(&p)?;
                ensure!(got.iter().all(String::is_empty), "no credential of another origin: {got:?}");

                let first = credential(&api, &vid, &p.url, "first-token", None).await?;
                let second = credential(&api, &vid, &p.url, "second-token", None).await?;
                let resp = api.send(api.post("/v1/agents/sessions", &json!({"runtime": "rt-one", "agent": {"tools": [tool(&p.url, None)]}, "vault_ids": [vid]}))).await?;
                let err = expect_error_param(&resp, 400, "invalid_request", "agent.tools[0].credential_id")?;
                ensure!(err.to_string().contains(&first) && err.to_string().contains(&second), "names both: {err}");
                p.mock.clear();
                let sid = id_of(&api.create(&json!({"runtime": "rt-one", "agent": {"tools": [tool(&p.url, Some(&second))]}, "vault_ids": [vid]})).await?)?;
                call(&api, &sid, 1).await?;
                let got = headers(&p)?;
                ensure!(got.iter().all(|h| h == "Bearer second-token"), "{got:?}");

                let resp = api.send(api.post("/v1/agents/sessions", &json!({"runtime": "rt-one", "vault_ids": ["vault_ffffffffffffffffffffffff"]}))).await?;
                expect_error_param(&resp, 400, "invalid_request", "vault_ids[0]")?;
                let resp = api.send(api.post("/v1/agents/sessions", &json!({"runtime": "rt-one", "agent": {"tools": [tool(&p.url, Some("cred_ffffffffffffffffffffffff"))]}, "vault_ids": [vid]}))).await?;
                expect_error_param(&resp, 400, "invalid_request", "agent.tools[0].credential_id")?;
                let resp = api.send(api.post("/v1/agents/sessions", &json!({"runtime": "rt-one", "vault_ids": "vault_x"}))).await?;
                expect_error_param(&resp, 400, "invalid_request", "vault_ids")?;
                Ok(())
            },
        },
        case! {
            id: "agents/injection/003",
            spec: "A credential update takes effect from the next turn; once deleted, the next event on the session is 400 `agents.credential_unavailable`.",
            profile: &profiles::AGENTS_LOCAL_MCP,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_events_create", "agents_vault_credentials_update", "agents_vault_credentials_delete"],
            codes: ["agents.credential_unavailable"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let p = probe("unused-secret").await?;
                let vid = vault(&api).await?;
                let cid = credential(&api, &vid, &p.url, "before-update", None).await?;
                let sid = id_of(&api.create(&json!({"runtime": "rt-two", "agent": {"tools": [tool(&p.url, None)]}, "vault_ids": [vid]})).await?)?;
                call(&api, &sid, 1).await?;
                let path = format!("/v1/vaults/{vid}/credentials/{cid}");
                api.send(api.post(&path, &json!({"auth": {"type": "static_bearer", "token": "after-update", "mcp_server_url": p.url}}))).await?.expect_status(200)?;
                p.mock.clear();
                call(&api, &sid, 2).await?;
                let got = headers(&p)?;
                ensure!(got.iter().all(|h| h == "Bearer after-update"), "the update applies: {got:?}");
                api.send(api.delete(&path)).await?.expect_status(200)?;
                let resp = api.send(api.post(&spath(&sid, "/events"), &json!({"input": "again"}))).await?;
                expect_error_param(&resp, 400, "agents.credential_unavailable", "vault_ids")?;
                Ok(())
            },
        },
        case! {
            id: "agents/injection/004",
            spec: "A credential past its `expires_at` fails the next event on a session that attached it with 400 `agents.credential_expired`.",
            profile: &profiles::AGENTS_LOCAL_MCP,
            tags: [],
            endpoints: ["agents_sessions_events_create"],
            codes: ["agents.credential_expired"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let url = "http://127.0.0.1:9/mcp";
                let vid = vault(&api).await?;
                let cid = credential(&api, &vid, url, "expiring-token", Some("2099-01-01T00:00:00Z")).await?;
                let sid = id_of(&api.create(&json!({"runtime": "rt-one", "agent": {"tools": [tool(url, None)]}, "vault_ids": [vid]})).await?)?;
                let past = json!({"auth": {"type": "mcp_oauth", "access_token": "expiring-token", "mcp_server_url": url, "expires_at": "2001-01-01T00:00:00Z"}});
                api.send(api.post(&format!("/v1/vaults/{vid}/credentials/{cid}"), &past)).await?.expect_status(200)?;
                let resp = api.send(api.post(&spath(&sid, "/events"), &json!({"input": "hi"}))).await?;
                let err = expect_error_param(&resp, 400, "agents.credential_expired", "vault_ids")?;
                ensure!(!err.to_string().contains("expiring-token"), "{err}");
                let resp = api.send(api.post("/v1/agents/sessions", &json!({"runtime": "rt-one", "agent": {"tools": [tool(url, None)]}, "vault_ids": [vid], "input": "hi"}))).await?;
                expect_error_param(&resp, 400, "agents.credential_expired", "vault_ids").context("a session cannot start with an expired credential")?;
                Ok(())
            },
        },
    ]
}
