//! Vaults and credentials (agents spec 2.9, 4.8): write-only secrets, every refusal, owner
//! isolation.

use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::{Context, ensure};
use reqwest::Method;
use serde_json::{Value, json};

const SECRET: &str = "tok-Zq8Xv3Lm9Kp2-secret";
const URL: &str = "https://mcp.example.com/mcp";

async fn ok(ctx: &Ctx, method: Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
    let mut rb = ctx.request(method, path);
    if let Some(body) = body {
        rb = rb.json(&body);
    }
    let resp: Resp = ctx.send(rb).await?;
    resp.expect_status(200)?;
    ensure!(
        !resp.text().contains("Zq8Xv3Lm9Kp2"),
        "a secret (or part of one) came back: {}",
        resp.text()
    );
    resp.json()
}

async fn refused(ctx: &Ctx, path: &str, body: Value, param: &str) -> anyhow::Result<()> {
    let resp = ctx.send(ctx.post_json(path, &body)).await?;
    let err = resp.expect_error(400, "invalid_request")?;
    ensure!(
        err["error"]["param"] == param,
        "{body}: expected param {param}: {err}"
    );
    Ok(())
}

async fn vault(ctx: &Ctx) -> anyhow::Result<String> {
    let v = ok(
        ctx,
        Method::POST,
        "/v1/vaults",
        Some(json!({"name": "team", "metadata": {"env": "ci"}})),
    )
    .await?;
    Ok(v["id"].as_str().context("vault id")?.to_owned())
}

fn bearer() -> Value {
    json!({"name": "docs", "auth": {"type": "static_bearer", "token": SECRET, "mcp_server_url": URL}})
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/vaults/001",
            spec: "Vaults: create, get, list, update (name, metadata only), delete; a vault has exactly id, name, metadata, created_at; other keys are 400.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_vaults_create", "agents_vaults_get", "agents_vaults_list", "agents_vaults_update", "agents_vaults_delete"],
            codes: ["invalid_request", "resource_not_found"],
            run: |ctx| async move {
                let v = ok(&ctx, Method::POST, "/v1/vaults", Some(json!({"name": "team", "metadata": {"env": "ci"}}))).await?;
                let keys: Vec<&str> = v.as_object().context("object")?.keys().map(String::as_str).collect();
                ensure!(keys == ["id", "name", "metadata", "created_at"], "exactly four fields: {keys:?}");
                let id = v["id"].as_str().context("id")?;
                ensure!(ok(&ctx, Method::GET, &format!("/v1/vaults/{id}"), None).await? == v, "get answers the vault");
                let list = ok(&ctx, Method::GET, "/v1/vaults?limit=100", None).await?;
                ensure!(list["data"].as_array().is_some_and(|d| d.iter().any(|x| x["id"] == id)), "listed");
                let up = ok(&ctx, Method::POST, &format!("/v1/vaults/{id}"), Some(json!({"name": "renamed"}))).await?;
                ensure!(up["name"] == "renamed" && up["metadata"] == json!({"env": "ci"}), "{up}");
                refused(&ctx, &format!("/v1/vaults/{id}"), json!({"owner": "x"}), "owner").await?;
                refused(&ctx, "/v1/vaults", json!({"name": "x", "kind": "y"}), "kind").await?;
                let gone = ok(&ctx, Method::DELETE, &format!("/v1/vaults/{id}"), None).await?;
                ensure!(gone["deleted"] == true, "{gone}");
                let err = ctx.send(ctx.get(&format!("/v1/vaults/{id}"))).await?.expect_error(404, "resource_not_found")?;
                ensure!(err["error"]["param"] == "vault_id", "{err}");
                ctx.snapshot("agents__vaults__object", &v)
            },
        },
        case! {
            id: "agents/vaults/002",
            spec: "`SVC_AGENTS_MAX_VAULTS` bounds the vaults of one owner.",
            profile: &profiles::AGENTS_FEW_VAULTS,
            tags: [],
            endpoints: ["agents_vaults_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                vault(&ctx).await?;
                vault(&ctx).await?;
                let resp = ctx.send(ctx.post_json("/v1/vaults", &json!({"name": "third"}))).await?;
                let err = resp.expect_error(400, "invalid_request")?;
                ensure!(err["error"]["message"].as_str().unwrap_or_default().contains("SVC_AGENTS_MAX_VAULTS"), "{err}");
                Ok(())
            },
        },
        case! {
            id: "agents/credentials/001",
            spec: "Credentials (static_bearer, mcp_oauth with an access token): no answer ever carries the secret, a prefix, its length or a hash.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_vault_credentials_create", "agents_vault_credentials_get", "agents_vault_credentials_list"],
            codes: [],
            run: |ctx| async move {
                let vid = vault(&ctx).await?;
                let base = format!("/v1/vaults/{vid}/credentials");
                let c = ok(&ctx, Method::POST, &base, Some(bearer())).await?;
                ensure!(c["object"] == "vault.credential" && c["vault_id"] == vid.as_str(), "{c}");
                ensure!(c["auth"] == json!({"type": "static_bearer", "mcp_server_url": URL}), "auth shows no secret: {}", c["auth"]);
                let oauth = json!({"name": "oauth", "metadata": {"k": "v"}, "auth": {"type": "mcp_oauth", "access_token": SECRET, "mcp_server_url": URL, "expires_at": "2099-01-01T00:00:00Z"}});
                let o = ok(&ctx, Method::POST, &base, Some(oauth)).await?;
                ensure!(o["auth"]["type"] == "mcp_oauth" && o["auth"]["expires_at"] == "2099-01-01T00:00:00Z", "{o}");
                let cid = c["id"].as_str().context("id")?;
                ok(&ctx, Method::GET, &format!("{base}/{cid}"), None).await?;
                let list = ok(&ctx, Method::GET, &base, None).await?;
                ensure!(list["data"].as_array().map(Vec::len) == Some(2), "{list}");
                // Only these keys, so no token, prefix, length or hash can hide in `auth`.
                for cred in list["data"].as_array().context("data")? {
                    for key in cred["auth"].as_object().context("auth")?.keys() {
                        ensure!(["type", "mcp_server_url", "expires_at"].contains(&key.as_str()), "auth carries `{key}`: {cred}");
                    }
                }
                ctx.snapshot("agents__credentials__object", &c)
            },
        },
        case! {
            id: "agents/credentials/002",
            spec: "Refused with 400 naming `param`: environment_variable, mcp_oauth.refresh, networking unrestricted or other hosts, a non-https or private mcp_server_url, a token with a newline, a missing name or auth, unknown keys.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_vault_credentials_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let vid = vault(&ctx).await?;
                let base = format!("/v1/vaults/{vid}/credentials");
                let with = |auth: Value| json!({"name": "c", "auth": auth});
                let b = |extra: Value| {
                    let mut a = json!({"type": "static_bearer", "token": "t", "mcp_server_url": URL});
                    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
                        a[k] = v;
                    }
                    a
                };
                refused(&ctx, &base, with(json!({"type": "environment_variable", "secret_name": "X", "secret_value": "y", "networking": {"type": "limited", "allowed_hosts": []}})), "auth.type").await?;
                refused(&ctx, &base, with(json!({"type": "mcp_oauth", "access_token": "t", "mcp_server_url": URL, "refresh": {"client_id": "c"}})), "auth.refresh").await?;
                refused(&ctx, &base, with(b(json!({"networking": {"type": "unrestricted"}}))), "auth.networking.type").await?;
                refused(&ctx, &base, with(b(json!({"networking": {"type": "limited", "allowed_hosts": ["evil.example.net"]}}))), "auth.networking.allowed_hosts").await?;
                ok(&ctx, Method::POST, &base, Some(with(b(json!({"networking": {"type": "limited", "allowed_hosts": ["mcp.example.com"]}}))))).await?;
                refused(&ctx, &base, with(b(json!({"mcp_server_url": "http://mcp.example.com/mcp"}))), "auth.mcp_server_url").await?;
                for private in ["https://127.0.0.1/mcp", "https://10.0.0.5/mcp", "https://192.168.1.1/mcp", "https://localhost:8443/mcp", "https://[::1]/mcp", "https://2130706433/mcp", "https://0x7f.0.0.1/mcp", "https://0/mcp", "https://user:pw@mcp.example.com/mcp"] {
                    refused(&ctx, &base, with(b(json!({"mcp_server_url": private}))), "auth.mcp_server_url").await?;
                }
                refused(&ctx, &base, with(b(json!({"token": "abc\ndef"}))), "auth.token").await?;
                refused(&ctx, &base, json!({"auth": b(json!({}))}), "name").await?;
                refused(&ctx, &base, json!({"name": "c"}), "auth").await?;
                refused(&ctx, &base, json!({"name": "c", "auth": b(json!({})), "scope": "x"}), "scope").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/credentials/004",
            spec: "A credential's `mcp_server_url` on an address that the IANA special-purpose registries do not mark globally reachable is 400 naming `auth.mcp_server_url`: the same URL guard as webhook endpoints.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_vault_credentials_create"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let vid = vault(&ctx).await?;
                let base = format!("/v1/vaults/{vid}/credentials");
                for host in super::webhooks::SPECIAL_PURPOSE_HOSTS {
                    let auth = json!({"type": "static_bearer", "token": "t", "mcp_server_url": format!("https://{host}/mcp")});
                    refused(&ctx, &base, json!({"name": "c", "auth": auth}), "auth.mcp_server_url").await.with_context(|| (*host).to_owned())?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/credentials/003",
            spec: "Update rotates the secret (never returned) and metadata; delete answers the deleted object; unknown ids are 404 naming vault_id or credential_id.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_vault_credentials_update", "agents_vault_credentials_delete", "agents_vault_credentials_get"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let vid = vault(&ctx).await?;
                let base = format!("/v1/vaults/{vid}/credentials");
                let c = ok(&ctx, Method::POST, &base, Some(json!({"name": "docs", "auth": {"type": "static_bearer", "token": "old-token", "mcp_server_url": URL}}))).await?;
                let cid = c["id"].as_str().context("id")?;
                let up = ok(&ctx, Method::POST, &format!("{base}/{cid}"), Some(json!({"metadata": {"rotated": "yes"}, "auth": {"type": "static_bearer", "token": SECRET, "mcp_server_url": URL}}))).await?;
                ensure!(up["metadata"] == json!({"rotated": "yes"}) && up["updated_at"].as_i64().context("updated_at")? >= c["updated_at"].as_i64().context("updated_at")?, "{up}");
                let gone = ok(&ctx, Method::DELETE, &format!("{base}/{cid}"), None).await?;
                ensure!(gone == json!({"id": cid, "object": "vault.credential.deleted", "deleted": true}), "{gone}");
                let err = ctx.send(ctx.get(&format!("{base}/{cid}"))).await?.expect_error(404, "resource_not_found")?;
                ensure!(err["error"]["param"] == "credential_id", "{err}");
                let err = ctx.send(ctx.get("/v1/vaults/vault_000000000000000000000000/credentials")).await?.expect_error(404, "resource_not_found")?;
                ensure!(err["error"]["param"] == "vault_id", "{err}");
                Ok(())
            },
        },
        case! {
            id: "agents/vaults/003",
            spec: "Another owner's vault and credentials answer exactly like missing ones, and lists never include them.",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: [],
            endpoints: ["agents_vaults_get", "agents_vaults_list", "agents_vault_credentials_list"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let as_ = |who: &str, m: Method, p: &str| ctx.anonymous(m, p).bearer_auth(format!("{who}-token"));
                let v = ctx.send(as_("bob", Method::POST, "/v1/vaults").json(&json!({"name": "bobs"}))).await?.json()?;
                let id = v["id"].as_str().context("id")?;
                let theirs = ctx.send(as_("alice", Method::GET, &format!("/v1/vaults/{id}"))).await?;
                let missing = ctx.send(as_("alice", Method::GET, "/v1/vaults/vault_ffffffffffffffffffffffff")).await?;
                ensure!(theirs.status == 404 && missing.status == 404, "both 404");
                let norm = |r: &Resp, s: &str| r.text().replace(s, "ID");
                ensure!(norm(&theirs, id) == norm(&missing, "vault_ffffffffffffffffffffffff"), "identical bodies");
                let creds = ctx.send(as_("alice", Method::GET, &format!("/v1/vaults/{id}/credentials"))).await?;
                creds.expect_error(404, "resource_not_found")?;
                let list = ctx.send(as_("alice", Method::GET, "/v1/vaults?limit=100")).await?.json()?;
                ensure!(!list.to_string().contains(id), "alice's list has no bob vault");
                Ok(())
            },
        },
    ]
}
