//! The control plane (`E2B_API_URL`): the API key on every call, the door's
//! rules, E2B's shapes and `{code: int, message}` errors, and the calls only
//! E2B's cloud serves answering 501.

use super::support::Front;
use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};

/// `{code: STATUS, message}` with that status.
fn api_error(status: u16, got: u16, body: &Value) -> anyhow::Result<()> {
    ensure!(got == status, "status {got}, want {status}: {body}");
    ensure!(body["code"] == json!(status), "`code` is not {status}: {body}");
    ensure!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "no message: {body}");
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "e2b/control/001",
            spec: "The control plane refuses a missing or wrong `X-API-KEY` with 401 `{code: 401, message}`, and a request with an `Origin` or a Host that is not loopback with 403, whatever key it carries.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_sandboxes_list_v2"],
            codes: [],
            run: |ctx| async move {
                let front = Front::of(&ctx)?;
                for rb in [
                    front.anonymous(Method::GET, "/v2/sandboxes"),
                    front.anonymous(Method::GET, "/v2/sandboxes").header("x-api-key", "e2b_wrong"),
                    front.anonymous(Method::POST, "/v2/sandboxes").header("x-api-key", format!("{}x", front.key)).json(&json!({"templateID": "base"})),
                ] {
                    let resp = ctx.send(rb).await?;
                    api_error(401, resp.status, &resp.json()?)?;
                }
                let origin = ctx.send(front.control(Method::GET, "/v2/sandboxes").header("origin", "https://evil.example")).await?;
                api_error(403, origin.status, &origin.json()?)?;
                let rebound = ctx.send(front.control(Method::GET, "/v2/sandboxes").header("host", "evil.example")).await?;
                api_error(403, rebound.status, &rebound.json()?)?;
                ctx.send(front.control(Method::GET, "/v2/sandboxes")).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "e2b/control/002",
            spec: "`POST /v2/sandboxes` answers 201 with `sandboxID`, `templateID`, `envdAccessToken` and an `envdVersion` of at least 0.6.4, ignoring fields it does not know; `GET /sandboxes/{id}` shows it running with its metadata; `DELETE` answers 204, then 404 `{code: 404}`; an unknown template is 404.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_sandboxes_create_v2", "e2b_sandboxes_info", "e2b_sandboxes_kill"],
            codes: [],
            run: |ctx| async move {
                let front = Front::of(&ctx)?;
                let resp = ctx.send(front.control(Method::POST, "/v2/sandboxes").json(&json!({
                    "templateID": "base", "timeout": 60, "metadata": {"who": "conformance"},
                    "autoPause": false, "aFieldFromTheFuture": {"x": 1}
                }))).await?;
                resp.expect_status(201)?;
                let made = resp.json()?;
                let id = made["sandboxID"].as_str().ok_or_else(|| anyhow!("no sandboxID: {made}"))?.to_owned();
                ctx.track_sandbox(None, &id);
                ensure!(made["templateID"].is_string() && made["envdAccessToken"].is_string(), "{made}");
                let version: Vec<u64> = made["envdVersion"].as_str().unwrap_or("").split('.').filter_map(|p| p.parse().ok()).collect();
                ensure!(version >= vec![0, 6, 4], "envdVersion {}", made["envdVersion"]);
                let detail = ctx.send(front.control(Method::GET, &format!("/sandboxes/{id}"))).await?;
                detail.expect_status(200)?;
                let detail = detail.json()?;
                ensure!(detail["state"] == "running" && detail["metadata"] == json!({"who": "conformance"}), "{detail}");
                ensure!(detail["cpuCount"].as_u64().is_some_and(|c| c >= 1) && detail["memoryMB"].as_u64().is_some(), "{detail}");
                ctx.send(front.control(Method::DELETE, &format!("/sandboxes/{id}"))).await?.expect_status(204)?;
                let again = ctx.send(front.control(Method::DELETE, &format!("/sandboxes/{id}"))).await?;
                api_error(404, again.status, &again.json()?)?;
                let gone = ctx.send(front.control(Method::GET, &format!("/sandboxes/{id}"))).await?;
                api_error(404, gone.status, &gone.json()?)?;
                let unknown = ctx.send(front.control(Method::POST, "/v2/sandboxes").json(&json!({"templateID": "no-such-template"}))).await?;
                api_error(404, unknown.status, &unknown.json()?)?;
                Ok(())
            },
        },
        case! {
            id: "e2b/control/003",
            spec: "What only E2B's cloud serves (templates, volumes, snapshots) answers 501 `{code: 501, message}` saying it is not available in a local engine; a bad JSON body is 400.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_not_available", "e2b_sandboxes_create_v2"],
            codes: [],
            run: |ctx| async move {
                let front = Front::of(&ctx)?;
                for (method, path) in [(Method::GET, "/templates"), (Method::POST, "/volumes"), (Method::GET, "/snapshots")] {
                    let resp = ctx.send(front.control(method, path)).await?;
                    let body = resp.json()?;
                    api_error(501, resp.status, &body)?;
                    ensure!(body["message"].as_str().unwrap_or("").contains("not available in a local engine"), "{body}");
                }
                let bad = ctx.send(front.control(Method::POST, "/v2/sandboxes").header("content-type", "application/json").body("{not json")).await?;
                api_error(400, bad.status, &bad.json()?)?;
                Ok(())
            },
        },
        case! {
            id: "e2b/control/004",
            spec: "A create the engine API refuses is refused by the E2B front too, with the same words: an `envVars` name that is no variable name (`1BAD`, `A-B`) or a value holding a NUL is 400 `{code: 400}` on `POST /v2/sandboxes` and 400 on `POST /v1/sandboxes` (`envs`), and no sandbox is made.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_sandboxes_create_v2", "e2b_sandboxes_list_v2"],
            codes: [],
            run: |ctx| async move {
                let front = Front::of(&ctx)?;
                for envs in [json!({"1BAD": "x"}), json!({"A-B": "x"}), json!({"A": "x\u{0}y"})] {
                    let engine = ctx.send(ctx.request(Method::POST, "/v1/sandboxes").json(&json!({"timeout": 60, "envs": envs, "metadata": {"case": "e2b-control-004"}}))).await?;
                    let engine_body = engine.json()?;
                    ensure!(engine.status == 400, "/v1 with envs {envs}: {} {engine_body}", engine.status);
                    let e2b = ctx.send(front.control(Method::POST, "/v2/sandboxes").json(&json!({"templateID": "base", "timeout": 60, "envVars": envs, "metadata": {"case": "e2b-control-004"}}))).await?;
                    let e2b_body = e2b.json()?;
                    api_error(400, e2b.status, &e2b_body).map_err(|e| anyhow!("envVars {envs}: {e}"))?;
                    ensure!(e2b_body["message"] == engine_body["error"]["message"], "envVars {envs}: the front says {e2b_body}, the engine {engine_body}");
                }
                let made = ctx.send(front.control(Method::GET, "/v2/sandboxes?metadata=case%3De2b-control-004")).await?.json()?;
                ensure!(made == json!([]), "a refused create made a sandbox: {made}");
                Ok(())
            },
        },
        case! {
            id: "e2b/control/005",
            spec: "The front's door judges the authority wherever it is written, as the engine's does (engine/door/008): an empty `Host:` is 403 `{code: 403}`, and so is an absolute-form request line naming another host (`GET http://evil.example/v2/sandboxes` with a loopback `Host`); an absolute-form line naming the front itself is answered; two `X-API-KEY` headers are 401 even when both are the key.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_sandboxes_list_v2"],
            codes: [],
            run: |ctx| async move {
                let front = Front::of(&ctx)?;
                let authority = crate::raw_wire::authority(&front.url)?;
                let key = &front.key;
                for request in [
                    format!("GET /v2/sandboxes HTTP/1.0\r\nHost:\r\nX-API-KEY: {key}\r\n\r\n"),
                    format!("GET /v2/sandboxes HTTP/1.0\r\nHost: \r\nX-API-KEY: {key}\r\n\r\n"),
                    format!("GET http://evil.example/v2/sandboxes HTTP/1.0\r\nHost: {authority}\r\nX-API-KEY: {key}\r\n\r\n"),
                    format!("GET http://evil.example:{}/v2/sandboxes HTTP/1.0\r\nHost: {authority}\r\nX-API-KEY: {key}\r\n\r\n", authority.rsplit(':').next().unwrap_or_default()),
                ] {
                    let (status, body) = crate::raw_wire::answer(&front.url, &request).await?;
                    api_error(403, status, &serde_json::from_str(&body).map_err(|e| anyhow!("{request:?}: not JSON ({e}): {body}"))?)?;
                }
                let (status, body) = crate::raw_wire::answer(&front.url, &format!("GET /v2/sandboxes HTTP/1.0\r\nHost: {authority}\r\nX-API-KEY: {key}\r\nX-API-KEY: {key}\r\n\r\n")).await?;
                api_error(401, status, &serde_json::from_str(&body).map_err(|e| anyhow!("two keys: not JSON ({e}): {body}"))?)?;
                let (status, body) = crate::raw_wire::answer(&front.url, &format!("GET http://{authority}/v2/sandboxes HTTP/1.0\r\nHost: {authority}\r\nX-API-KEY: {key}\r\n\r\n")).await?;
                ensure!(status == 200, "an absolute-form line naming the front: expected 200, got {status}: {body}");
                Ok(())
            },
        },
    ]
}
