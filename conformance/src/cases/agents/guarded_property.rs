//! Properties of the guarded resources (agents spec 2.1, 4.8, 5): owner isolation over any
//! sequence of creations by two identities, secrets never returned in any form, and vault
//! credentials never on a runtime's command line.

use super::support::sessions::{Api, id_of};
use crate::mcp_mock::McpMock;
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, anyhow, ensure};
use base64::Engine;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy)]
enum Kind {
    Vault,
    Environment,
    Template,
    Definition,
    Session,
    Response,
    Webhook,
}

const KINDS: [Kind; 7] = [
    Kind::Vault,
    Kind::Environment,
    Kind::Template,
    Kind::Definition,
    Kind::Session,
    Kind::Response,
    Kind::Webhook,
];
/// Identities no other case of the profile uses, so lists hold only what the property made.
const WHO: [&str; 2] = ["carol-token", "dave-token"];
/// Stands for a second id inside a resource (a credential of a vault, a turn of a session).
const SUB_MISSING: &str = "sub_ffffffffffffffffffffffff";

impl Kind {
    fn collection(self) -> &'static str {
        match self {
            Kind::Vault => "/v1/vaults",
            Kind::Environment => "/v1/agents/environments",
            Kind::Template => "/v1/agents/environments/templates",
            Kind::Definition => "/v1/agents",
            Kind::Session => "/v1/agents/sessions",
            Kind::Response => "/v1/responses",
            Kind::Webhook => "/v1/webhook_endpoints",
        }
    }

    fn body(self, n: usize) -> Value {
        match self {
            Kind::Vault => json!({"name": format!("v{n}")}),
            Kind::Environment => json!({"env": {"RUN": format!("r{n}")}}),
            Kind::Template => json!({"name": format!("t{n}")}),
            Kind::Definition => json!({"model": "rt-one", "name": format!("d{n}")}),
            Kind::Session => json!({"runtime": "rt-one", "metadata": {"n": n.to_string()}}),
            Kind::Response => json!({"model": "rt-one", "input": format!("r{n}")}),
            // A public address that nothing here makes the server call.
            Kind::Webhook => {
                json!({"name": format!("w{n}"), "url": "https://hooks.invalid/hook", "event_types": ["agent.session.failed"]})
            }
        }
    }

    /// A syntactically valid id that was never issued.
    fn missing(self) -> &'static str {
        match self {
            Kind::Vault => "vault_ffffffffffffffffffffffff",
            Kind::Environment => "env_ffffffffffffffffffffffff",
            Kind::Template => "envtpl_ffffffffffffffffffffffff",
            Kind::Definition => "agent_ffffffffffffffffffffffff",
            Kind::Session => "agsess_ffffffffffffffffffffffff",
            Kind::Response => "resp_ffffffffffffffffffffffff",
            Kind::Webhook => "we_ffffffffffffffffffffffff",
        }
    }

    /// Every route on one resource, `{id}` its id and `{sub}` an id inside it.
    fn routes(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Vault => &[
                ("GET", "{id}"),
                ("POST", "{id}"),
                ("DELETE", "{id}"),
                ("GET", "{id}/credentials"),
                ("POST", "{id}/credentials"),
                ("GET", "{id}/credentials/{sub}"),
                ("POST", "{id}/credentials/{sub}"),
                ("DELETE", "{id}/credentials/{sub}"),
            ],
            Kind::Environment => &[
                ("GET", "{id}"),
                ("GET", "{id}/files"),
                ("POST", "{id}/files"),
            ],
            Kind::Template | Kind::Definition => {
                &[("GET", "{id}"), ("POST", "{id}"), ("DELETE", "{id}")]
            }
            Kind::Session => &[
                ("GET", "{id}"),
                ("POST", "{id}"),
                ("DELETE", "{id}"),
                ("POST", "{id}/events"),
                ("GET", "{id}/events?after=0"),
                ("GET", "{id}/items"),
                ("GET", "{id}/turns"),
                ("GET", "{id}/turns/{sub}"),
                ("GET", "{id}/turns/{sub}/items"),
                ("GET", "{id}/artifacts"),
                ("GET", "{id}/traces"),
                ("GET", "{id}/subagents"),
            ],
            Kind::Webhook => &[
                ("GET", "{id}"),
                ("POST", "{id}"),
                ("DELETE", "{id}"),
                ("POST", "{id}/rotate_secret"),
                ("POST", "{id}/test"),
            ],
            Kind::Response => &[
                ("GET", "{id}"),
                ("DELETE", "{id}"),
                ("POST", "{id}/cancel"),
                ("GET", "{id}/input_items"),
            ],
        }
    }

    /// A request body each route accepts from its owner.
    fn probe_body(self, route: &str) -> Value {
        match (self, route) {
            (Kind::Environment, "{id}/files") => {
                json!({"type": "inline", "path": "probe.txt", "data": "eA=="})
            }
            (Kind::Vault, "{id}/credentials") => {
                json!({"name": "c", "auth": {"type": "static_bearer", "token": "t", "mcp_server_url": "https://mcp.example.com/"}})
            }
            (Kind::Session, "{id}/events") => json!({"input": "probe"}),
            (Kind::Webhook, "{id}") => json!({"name": "probe"}),
            (Kind::Webhook, "{id}/rotate_secret") => json!({}),
            (Kind::Webhook, "{id}/test") => json!({"event_type": "agent.session.created"}),
            _ => json!({"metadata": {"k": "v"}}),
        }
    }
}

/// A resource one identity made: its kind, id, and an id inside it where routes need one.
struct Made {
    owner: usize,
    kind: Kind,
    id: String,
    sub: String,
}

async fn make(ctx: &Ctx, who: usize, kind: Kind, n: usize) -> anyhow::Result<Made> {
    let token = WHO[who];
    let resp = ctx
        .send(
            ctx.anonymous(Method::POST, kind.collection())
                .bearer_auth(token)
                .json(&kind.body(n)),
        )
        .await?;
    resp.expect_status(200)?;
    let id = id_of(&resp.json()?)?;
    let sub = match kind {
        Kind::Vault => {
            let path = format!("/v1/vaults/{id}/credentials");
            let c = ctx
                .send(
                    ctx.anonymous(Method::POST, &path)
                        .bearer_auth(token)
                        .json(&kind.probe_body("{id}/credentials")),
                )
                .await?;
            id_of(&c.json()?)?
        }
        Kind::Session => {
            let path = format!("/v1/agents/sessions/{id}/events");
            ctx.send(
                ctx.anonymous(Method::POST, &path)
                    .bearer_auth(token)
                    .json(&json!({"input": "first"})),
            )
            .await?
            .expect_status(202)?;
            let turns = ctx
                .send(
                    ctx.anonymous(Method::GET, &format!("/v1/agents/sessions/{id}/turns"))
                        .bearer_auth(token),
                )
                .await?
                .json()?;
            turns["data"][0]["id"]
                .as_str()
                .unwrap_or(SUB_MISSING)
                .to_owned()
        }
        _ => SUB_MISSING.to_owned(),
    };
    Ok(Made {
        owner: who,
        kind,
        id,
        sub,
    })
}

async fn request(
    ctx: &Ctx,
    token: &str,
    kind: Kind,
    method: &str,
    route: &str,
    id: &str,
    sub: &str,
) -> anyhow::Result<crate::Resp> {
    let path = format!(
        "{}/{}",
        kind.collection(),
        route.replace("{id}", id).replace("{sub}", sub)
    );
    let method = Method::from_bytes(method.as_bytes())?;
    let mut rb = ctx.anonymous(method.clone(), &path).bearer_auth(token);
    if method == Method::POST {
        rb = rb.json(&kind.probe_body(route));
    }
    ctx.send(rb).await
}

/// Status, headers (but the date) and body, with the ids made the same.
fn answer(resp: &crate::Resp, ids: [&str; 2]) -> String {
    let mut headers: Vec<String> = resp
        .headers
        .iter()
        .filter(|(k, _)| *k != "date")
        .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or_default()))
        .collect();
    headers.sort();
    let mut text = format!("{}\n{}\n{}", resp.status, headers.join("\n"), resp.text());
    for id in ids {
        text = text.replace(id, "ID");
    }
    text
}

/// Every creation in `plan` (who, what) happens; then the other identity tries every route on
/// every resource and must get the very answer a missing id gets (status, headers, body), and
/// never see it listed; the owner still has it.
async fn isolation(ctx: &Ctx, plan: &[(usize, usize)]) -> anyhow::Result<()> {
    let mut made = Vec::new();
    for (n, &(who, kind)) in plan.iter().enumerate() {
        made.push(make(ctx, who, KINDS[kind], n).await?);
    }
    for m in &made {
        let other = WHO[1 - m.owner];
        for (method, route) in m.kind.routes() {
            let theirs = request(ctx, other, m.kind, method, route, &m.id, &m.sub).await?;
            let missing = request(
                ctx,
                other,
                m.kind,
                method,
                route,
                m.kind.missing(),
                SUB_MISSING,
            )
            .await?;
            let (a, b) = (
                answer(&theirs, [&m.id, &m.sub]),
                answer(&missing, [m.kind.missing(), SUB_MISSING]),
            );
            ensure!(
                theirs.status == 404 && a == b,
                "{method} {route} on {} as {other}:\n{a}\n-- a missing id --\n{b}",
                m.id
            );
        }
        let list = ctx
            .send(
                ctx.anonymous(Method::GET, &format!("{}?limit=100", m.kind.collection()))
                    .bearer_auth(other),
            )
            .await?;
        ensure!(
            !list.text().contains(m.id.as_str()),
            "{other} lists {}: {}",
            m.id,
            list.text()
        );
        let own = request(ctx, WHO[m.owner], m.kind, "GET", "{id}", &m.id, &m.sub).await?;
        ensure!(
            own.status == 200,
            "the owner lost {} after the other's attempts: {}",
            m.id,
            own.text()
        );
    }
    Ok(())
}

/// The forms a leaked secret could take in an answer.
fn leaks(text: &str, secret: &str) -> Option<String> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
    let hex: String = Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let b64_hash =
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(secret.as_bytes()));
    let prefix = &secret[..8];
    let suffix = &secret[secret.len() - 8..];
    [
        ("the secret", secret),
        ("its base64", b64.as_str()),
        ("its SHA-256", hex.as_str()),
        ("its SHA-256 in base64", b64_hash.as_str()),
        ("a prefix", prefix),
        ("a suffix", suffix),
    ]
    .into_iter()
    .find(|(_, form)| text.contains(form))
    .map(|(what, _)| format!("{what} of `{secret}` is in: {text}"))
}

fn text_of(resp: &crate::Resp) -> String {
    format!("{:?}\n{}", resp.headers, resp.text())
}

/// Every place a secret can be written, then every answer that could show it (bodies and
/// headers), the event stream of a session that ran a turn with it, and a webhook
/// endpoint's own secret after the one answer that may carry it.
async fn secrecy(ctx: &Ctx, secret: &str) -> Result<Vec<String>, String> {
    let e = |e: anyhow::Error| e.to_string();
    let api = Api::new(ctx);
    let url = "https://mcp.example.com/mcp";
    let tool = json!({"type": "mcp", "server_label": "s", "transport": {"type": "http", "server_url": url, "headers": {"X-Key": secret}}});
    let data = base64::engine::general_purpose::STANDARD.encode(secret);
    let writes: Vec<(&str, Value)> = vec![
        ("/v1/vaults", json!({"name": "p"})),
        (
            "/v1/agents",
            json!({"model": "rt-one", "tools": [tool.clone()]}),
        ),
        (
            "/v1/agents/environments",
            json!({"env": {"PAYLOAD": secret}, "files": [{"type": "inline", "path": format!("p-{}.txt", id_hash(secret)), "data": data}]}),
        ),
        (
            "/v1/agents/environments/templates",
            json!({"env": {"PAYLOAD": secret}, "files": [{"type": "inline", "path": "p.txt", "data": data}]}),
        ),
        (
            "/v1/agents/sessions",
            json!({"runtime": "rt-one", "agent": {"tools": [tool]}}),
        ),
    ];
    // (an answer already read, the resource, its list)
    let mut reads: Vec<(String, String, String)> = Vec::new();
    for (path, body) in writes {
        let resp = api.send(api.post(path, &body)).await.map_err(e)?;
        if resp.status != 200 {
            return Err(format!("{path}: {}", resp.describe()));
        }
        let id = id_of(&resp.json().map_err(e)?).map_err(e)?;
        reads.push((text_of(&resp), format!("{path}/{id}"), path.to_owned()));
        if path == "/v1/vaults" {
            let cpath = format!("{path}/{id}/credentials");
            for auth in [
                json!({"type": "static_bearer", "token": secret, "mcp_server_url": url}),
                json!({"type": "mcp_oauth", "access_token": secret, "mcp_server_url": url}),
            ] {
                let c = api
                    .send(api.post(&cpath, &json!({"name": "c", "auth": auth})))
                    .await
                    .map_err(e)?;
                let cid = id_of(&c.json().map_err(e)?).map_err(e)?;
                let up = api
                    .send(api.post(&format!("{cpath}/{cid}"), &json!({"auth": auth})))
                    .await
                    .map_err(e)?;
                reads.push((text_of(&c), format!("{cpath}/{cid}"), cpath.clone()));
                reads.push((text_of(&up), format!("{cpath}/{cid}"), cpath.clone()));
            }
        }
        if path == "/v1/agents/sessions" {
            api.input(&id, "hello").await.map_err(e)?;
            api.settle(&id, 1).await.map_err(e)?;
            let frames = api.replay(&id, "after=0").await.map_err(e)?;
            if let Some(found) = leaks(&format!("{frames:?}"), secret) {
                return Err(format!("an SSE frame: {found}"));
            }
        }
    }
    for (answer, one, list) in &reads {
        let get = api.send(api.get(one)).await.map_err(e)?;
        let listed = api
            .send(api.get(&format!("{list}?limit=100")))
            .await
            .map_err(e)?;
        for text in [answer.clone(), text_of(&get), text_of(&listed)] {
            if let Some(found) = leaks(&text, secret) {
                return Err(found);
            }
        }
    }
    // A webhook secret is shown once, on creation; no later answer carries it. The
    // endpoint listens for nothing that happens here, so it is never called.
    let hook = api.send(api.post("/v1/webhook_endpoints", &json!({"name": "secrecy", "url": "https://hooks.invalid/hook", "event_types": ["agent.session.failed"]}))).await.map_err(e)?;
    let hook = hook.json().map_err(e)?;
    let (hid, whsec) = (
        id_of(&hook).map_err(e)?,
        hook["secret"].as_str().unwrap_or_default().to_owned(),
    );
    if !whsec.starts_with("whsec_") {
        return Err(format!("the one-time secret: {hook}"));
    }
    let later = [
        api.send(api.get(&format!("/v1/webhook_endpoints/{hid}")))
            .await
            .map_err(e)?,
        api.send(api.get("/v1/webhook_endpoints?limit=100"))
            .await
            .map_err(e)?,
        api.send(api.post(
            &format!("/v1/webhook_endpoints/{hid}"),
            &json!({"name": "renamed"}),
        ))
        .await
        .map_err(e)?,
    ];
    for resp in later {
        if let Some(found) = leaks(&text_of(&resp), &whsec) {
            return Err(format!("the webhook secret came back: {found}"));
        }
    }
    Ok(vec![secret.to_owned(), whsec])
}

fn id_hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A turn whose MCP server gets the credential: the header arrives, and while the runtime
/// runs no process's command line holds the token.
async fn command_lines(ctx: &Ctx, runtime: &str, secret: &str) -> Result<(), String> {
    let api = Api::new(ctx);
    let mcp = McpMock::start(Some(secret)).await;
    let url = mcp.url();
    let e = |e: anyhow::Error| e.to_string();
    let vault = id_of(
        &api.send(api.post("/v1/vaults", &json!({"name": "cmd"})))
            .await
            .map_err(e)?
            .json()
            .map_err(e)?,
    )
    .map_err(e)?;
    let c = api.send(api.post(&format!("/v1/vaults/{vault}/credentials"), &json!({"name": "c", "auth": {"type": "static_bearer", "token": secret, "mcp_server_url": url}}))).await.map_err(e)?;
    c.expect_status(200).map_err(e)?;
    let tool = json!({"type": "mcp", "server_label": "probe", "transport": {"type": "http", "server_url": url}});
    let s = api.create(&json!({"runtime": runtime, "agent": {"tools": [tool]}, "vault_ids": [vault], "input": "ping [[scenario:mcp:probe/echo]]"})).await.map_err(e)?;
    let sid = id_of(&s).map_err(e)?;
    let turns = api.settle(&sid, 1).await.map_err(e)?;
    if turns[0]["status"] != "completed" {
        return Err(format!("{runtime}: {}", turns[0]));
    }
    let seen = mcp.seen();
    let headers = seen.authorization;
    if headers.is_empty() || headers.iter().any(|h| *h != format!("Bearer {secret}")) {
        return Err(format!("{runtime}: the MCP server got {headers:?}"));
    }
    let on_cmdline = seen.leaks;
    if !on_cmdline.is_empty() {
        return Err(format!(
            "{runtime}: the token is on a command line: {on_cmdline:?}"
        ));
    }
    Ok(())
}

/// Printable tokens without line breaks, with the characters that break naive quoting.
fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9 ._~+/=$`'\"\\\\{}-]{10,38}[A-Za-z0-9]"
}

fn run_property<S>(
    ctx: Ctx,
    cases: u32,
    strategy: S,
    check: impl Fn(&Ctx, S::Value) -> Result<(), String> + Send + 'static,
) -> tokio::task::JoinHandle<anyhow::Result<()>>
where
    S: Strategy + Send + 'static,
    S::Value: std::fmt::Debug,
{
    tokio::task::spawn_blocking(move || {
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&strategy, |value| {
                check(&ctx, value).map_err(TestCaseError::fail)
            })
            .map_err(|e| anyhow!("{e}"))
    })
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/isolation/001",
            spec: "Property: for any sequence of vaults (with a credential), environments, templates, definitions, sessions (with a turn), responses and webhook endpoints created by two owners, every route on one owner's resource answers the other exactly like a missing id (404; status, headers and body), lists never show it, and the owner keeps it.",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: [],
            endpoints: ["agents_vaults_get", "agents_vaults_update", "agents_vaults_delete", "agents_vault_credentials_get", "agents_vault_credentials_update", "agents_vault_credentials_delete", "agents_vault_credentials_list", "agents_environments_get", "agents_environment_files_create", "agents_environment_files_list", "agents_environment_templates_get", "agents_environment_templates_update", "agents_environment_templates_delete", "agents_definitions_get", "agents_definitions_update", "agents_definitions_delete", "agents_sessions_get", "agents_sessions_update", "agents_sessions_delete", "agents_sessions_events_create", "agents_sessions_events_stream", "agents_sessions_turns_get", "agents_responses_get", "agents_responses_delete", "agents_responses_cancel", "agents_responses_input_items", "agents_webhooks_get", "agents_webhooks_update", "agents_webhooks_delete", "agents_webhooks_rotate_secret", "agents_webhooks_test"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let handle = tokio::runtime::Handle::current();
                let plan = proptest::collection::vec((0..2usize, 0..KINDS.len()), 1..8);
                run_property(ctx, 12, plan, move |ctx, plan| handle.block_on(isolation(ctx, &plan)).map_err(|e| format!("{e:#}"))).await?
            },
        },
        case! {
            id: "agents/secrecy/001",
            spec: "Property: for any secret written as a credential token (static_bearer, mcp_oauth, on create and update), an MCP header value, an environment or template variable or a file's content, and for a webhook secret after its one-time answer, no answer (create, update, get, list; bodies and headers), no SSE frame of a session that ran a turn with it, and no audit or log line carries it, its base64, its SHA-256, or an 8-character prefix or suffix.",
            profile: &profiles::AGENTS_AUDITED,
            tags: [],
            endpoints: ["agents_vault_credentials_create", "agents_vault_credentials_update", "agents_vault_credentials_get", "agents_vault_credentials_list", "agents_environments_create", "agents_environment_templates_create", "agents_definitions_create", "agents_webhooks_create", "agents_webhooks_get", "agents_webhooks_list", "agents_webhooks_update"],
            codes: [],
            run: |ctx| async move {
                let handle = tokio::runtime::Handle::current();
                let used = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
                let record = used.clone();
                run_property(ctx.clone(), 12, secret(), move |ctx, s| {
                    let written = handle.block_on(secrecy(ctx, &s))?;
                    record.lock().map(|mut u| u.extend(written)).ok();
                    Ok(())
                })
                .await??;
                // What the server wrote down: the audit trail and every log line.
                let dir = ctx.dir().context("needs the profile directory")?;
                let audit = std::fs::read_to_string(dir.join("audit.jsonl"))?;
                ensure!(audit.lines().count() > 10, "the audit trail was written: {} lines", audit.lines().count());
                let log = std::fs::read_to_string(dir.join(crate::launch::SERVER_LOG))?;
                for secret in used.lock().map(|u| u.clone()).unwrap_or_default() {
                    for (what, text) in [("audit", &audit), ("log", &log)] {
                        if let Some(found) = leaks(text, &secret) {
                            anyhow::bail!("the {what}: {}", &found[..found.len().min(400)]);
                        }
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "agents/secrecy/002",
            spec: "Property: for any credential token and either runtime, the MCP server receives `Authorization: Bearer <token>` while no process's command line (`/proc/<pid>/cmdline`) holds the token.",
            profile: &profiles::AGENTS_LOCAL_MCP,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_create", "agents_vault_credentials_create"],
            codes: [],
            run: |ctx| async move {
                let handle = tokio::runtime::Handle::current();
                let strategy = (prop_oneof![Just("rt-one"), Just("rt-two")], secret());
                run_property(ctx, 8, strategy, move |ctx, (rt, s)| handle.block_on(command_lines(ctx, rt, &s))).await?
            },
        },
    ]
}
