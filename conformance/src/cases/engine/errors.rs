//! The engine's error answers (spec 7.2): one body `{error: {type, code, message,
//! suggestion, docs_url}}` from one table, an unmatched route 404 `E2000`, a
//! route whose feature the provider did not declare 501 `E8004`, and the bounds the
//! OpenAPI document states, enforced as `E4001`.

use super::support::{
    as_conn, create, declared, error_snapshot, expect_error, get, kill, own, post, sandbox, sb,
};
use crate::{Case, case, profiles};
use anyhow::{Context as _, anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/errors/001",
            spec: "A request no route matches (an unknown path, a known path with another method, a path outside `/v1`) is 404 `E2000` with the message `Not found: <METHOD> <path>`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: [],
            codes: ["E2000"],
            run: |ctx| async move {
                for (method, path) in [
                    (Method::GET, "/v1/no-such-route"),
                    (Method::PUT, "/v1/health"),
                    (Method::DELETE, "/v1/providers"),
                    (Method::GET, "/health"),
                    (Method::POST, "/v1/sandboxes/some-id/no-such-action"),
                    (Method::GET, "/v2/health"),
                ] {
                    let resp = ctx.send(ctx.request(method.clone(), path)).await?;
                    let body = expect_error(&resp, 404, "E2000").with_context(|| format!("{method} {path}"))?;
                    let want = format!("Not found: {method} {path}");
                    ensure!(body["error"]["message"] == want.as_str(), "the message is {want:?}: {body}");
                    if path == "/v1/no-such-route" {
                        error_snapshot(&ctx, "engine__errors__not_found", &body, &[])?;
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "engine/errors/002",
            spec: "A provider serves what it declares and nothing else: every sandbox route of a feature it declares reaches it (an unknown sandbox is 404 `E2009`), every route of a feature it does not declare is 501 `E8004`.",
            profile: &profiles::LOCAL,
            tags: ["feature:sandboxes"],
            endpoints: [],
            codes: ["E8004", "E2009"],
            run: |ctx| async move {
                let declared = declared(&ctx).await?;
                let id = "sbx-nobody-made-this";
                let conn = own(&ctx);
                for (feature, method, rest, body) in ROUTES {
                    let path = format!("/v1/sandboxes/{id}{rest}");
                    let resp = if *feature == "terminal" {
                        let token = ctx.token().ok_or_else(|| anyhow!("no token"))?;
                        let bearer = format!("Bearer {token}");
                        let mut headers = vec![("authorization", bearer.as_str())];
                        if let Some(c) = conn.as_deref() { headers.push(("x-svc-connection", c)); }
                        ctx.ws_refused(&path, &headers).await?
                    } else {
                        let mut rb = as_conn(&ctx, conn.as_deref(), method.clone(), &path);
                        match body {
                            Some(Body::Json(text)) => rb = rb.header("content-type", "application/json").body(*text),
                            Some(Body::Bytes(b)) => rb = rb.body(b.to_vec()),
                            None => {}
                        }
                        ctx.send(rb).await?
                    };
                    let what = format!("{method} {path} ({feature})");
                    if declared.iter().any(|f| f == feature) {
                        expect_error(&resp, 404, "E2009").with_context(|| what.clone())?;
                    } else {
                        let err = expect_error(&resp, 501, "E8004").with_context(|| what.clone())?;
                        ensure!(err["error"]["message"].as_str().is_some_and(|m| m.contains(feature)), "the refusal names the feature: {err}");
                    }
                }
                Ok(())
            },
        },
        case! {
            id: "engine/errors/003",
            spec: "The bounds the engine's OpenAPI document states are the ones it enforces, at both edges: a sandbox's `timeout` 1-86400 (create and `.../timeout`), `cpu`, `memory` and `disk` at least 1, a command's `timeout` 0-86400, a code run's 1-86400, a signal 15 or 9, a list's `limit` 1-1000, a port 1-65535, a terminal's `cols` and `rows` 1-1000: the value on the edge is taken, the one past it is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:timeout", "feature:commands", "feature:code", "feature:processes", "feature:ports", "feature:terminal"],
            endpoints: ["sandboxes_create", "sandboxes_list", "sandboxes_timeout", "commands_run", "code_run", "processes_signal", "sandboxes_port_url", "terminal"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let outside: Vec<(&str, String, Option<Value>)> = vec![
                    ("create timeout 0", "/v1/sandboxes".into(), Some(json!({"timeout": 0}))),
                    ("create timeout 86401", "/v1/sandboxes".into(), Some(json!({"timeout": 86401}))),
                    ("cpu 0", "/v1/sandboxes".into(), Some(json!({"cpu": 0}))),
                    ("memory 0", "/v1/sandboxes".into(), Some(json!({"memory": 0}))),
                    ("disk 0", "/v1/sandboxes".into(), Some(json!({"disk": 0}))),
                    ("timeout 0", sb(&id, "/timeout"), Some(json!({"timeout": 0}))),
                    ("timeout 86401", sb(&id, "/timeout"), Some(json!({"timeout": 86401}))),
                    ("command timeout 86401", sb(&id, "/commands/run"), Some(json!({"cmd": "true", "timeout": 86401}))),
                    ("code timeout 0", sb(&id, "/code/run"), Some(json!({"code": "true", "language": "sh", "timeout": 0}))),
                    ("code timeout 86401", sb(&id, "/code/run"), Some(json!({"code": "true", "language": "sh", "timeout": 86401}))),
                    ("signal 2", sb(&id, "/processes/1/signal"), Some(json!({"signal": 2}))),
                    ("limit 0", "/v1/sandboxes?limit=0".into(), None),
                    ("limit 1001", "/v1/sandboxes?limit=1001".into(), None),
                    ("port 0", sb(&id, "/ports/0/url"), None),
                    ("port 65536", sb(&id, "/ports/65536/url"), None),
                    ("cols 0", sb(&id, "/terminal?cols=0"), None),
                    ("rows 1001", sb(&id, "/terminal?rows=1001"), None),
                ];
                for (what, path, body) in &outside {
                    let resp = match body {
                        Some(body) => post(&ctx, path, body).await?,
                        None => get(&ctx, path).await?,
                    };
                    expect_error(&resp, 400, "E4001").with_context(|| format!("{what}: {path} {body:?}"))?;
                }
                // The edges themselves pass (a signal to a pid that is not the sandbox's gets
                // past the check to `E2005`).
                for body in [json!({"timeout": 1}), json!({"timeout": 86400, "cpu": 1, "memory": 1, "disk": 1})] {
                    let record = create(&ctx, &body).await.with_context(|| format!("create {body}"))?;
                    kill(&ctx, record["sandbox_id"].as_str().unwrap_or_default()).await;
                }
                let inside: Vec<(String, Option<Value>, u16)> = vec![
                    (sb(&id, "/timeout"), Some(json!({"timeout": 86400})), 200),
                    (sb(&id, "/timeout"), Some(json!({"timeout": 300})), 200),
                    (sb(&id, "/commands/run"), Some(json!({"cmd": "true", "timeout": 0})), 200),
                    (sb(&id, "/commands/run"), Some(json!({"cmd": "true", "timeout": 86400})), 200),
                    (sb(&id, "/code/run"), Some(json!({"code": "true", "language": "sh", "timeout": 1})), 200),
                    (sb(&id, "/code/run"), Some(json!({"code": "true", "language": "sh", "timeout": 86400})), 200),
                    (sb(&id, "/processes/4194305/signal"), Some(json!({"signal": 9})), 404),
                    ("/v1/sandboxes?limit=1".into(), None, 200),
                    ("/v1/sandboxes?limit=1000".into(), None, 200),
                    (sb(&id, "/ports/1/url"), None, 200),
                    (sb(&id, "/ports/65535/url"), None, 200),
                ];
                for (path, body, status) in &inside {
                    let resp = match body {
                        Some(body) => post(&ctx, path, body).await?,
                        None => get(&ctx, path).await?,
                    };
                    ensure!(resp.status == *status, "{path} {body:?}: {} {}", resp.status, resp.text());
                }
                kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}

enum Body {
    Json(&'static str),
    Bytes(&'static [u8]),
}

/// Every sandbox route of the table: its feature, method, path after the id and a
/// body that passes its checks, so only the sandbox lookup or the feature gate
/// can refuse it.
const ROUTES: &[(&str, Method, &str, Option<Body>)] = &[
    (
        "sandboxes",
        Method::POST,
        "/connect",
        Some(Body::Json("{}")),
    ),
    ("sandboxes", Method::GET, "", None),
    ("sandboxes", Method::DELETE, "", None),
    ("sandboxes", Method::GET, "/running", None),
    (
        "timeout",
        Method::POST,
        "/timeout",
        Some(Body::Json(r#"{"timeout":60}"#)),
    ),
    ("pause", Method::POST, "/pause", Some(Body::Json("{}"))),
    ("pause", Method::POST, "/resume", Some(Body::Json("{}"))),
    ("ports", Method::GET, "/ports/8080/url", None),
    (
        "commands",
        Method::POST,
        "/commands/run",
        Some(Body::Json(r#"{"cmd":"true"}"#)),
    ),
    (
        "commands",
        Method::POST,
        "/commands/stream",
        Some(Body::Json(r#"{"cmd":"true"}"#)),
    ),
    ("processes", Method::GET, "/processes", None),
    (
        "processes",
        Method::POST,
        "/processes/12345/signal",
        Some(Body::Json(r#"{"signal":15}"#)),
    ),
    (
        "processes",
        Method::POST,
        "/processes/12345/stdin",
        Some(Body::Json(r#"{"data":"x"}"#)),
    ),
    ("processes", Method::DELETE, "/processes/12345", None),
    ("files", Method::GET, "/files/content?path=a.txt", None),
    (
        "files",
        Method::PUT,
        "/files/content?path=a.txt",
        Some(Body::Bytes(b"x")),
    ),
    ("files", Method::GET, "/files/list?path=.", None),
    ("files", Method::GET, "/files/info?path=a.txt", None),
    ("files", Method::GET, "/files/exists?path=a.txt", None),
    (
        "files",
        Method::POST,
        "/files/mkdir",
        Some(Body::Json(r#"{"path":"d"}"#)),
    ),
    (
        "files",
        Method::POST,
        "/files/move",
        Some(Body::Json(r#"{"from":"a","to":"b"}"#)),
    ),
    ("files", Method::DELETE, "/files?path=a.txt", None),
    ("watch", Method::GET, "/files/watch?path=.", None),
    (
        "code",
        Method::POST,
        "/code/run",
        Some(Body::Json(r#"{"code":"1"}"#)),
    ),
    (
        "code_contexts",
        Method::POST,
        "/code/contexts",
        Some(Body::Json("{}")),
    ),
    ("code_contexts", Method::GET, "/code/contexts", None),
    (
        "code_contexts",
        Method::POST,
        "/code/contexts/c1/restart",
        Some(Body::Json("{}")),
    ),
    ("code_contexts", Method::DELETE, "/code/contexts/c1", None),
    ("terminal", Method::GET, "/terminal", None),
];

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_has_every_sandbox_route_once() {
        let mut seen: Vec<String> = super::ROUTES
            .iter()
            .map(|(_, m, p, _)| format!("{m} {}", p.split('?').next().unwrap_or(p)))
            .collect();
        let n = seen.len();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), n, "{seen:?}");
        // 34 routes: health, shutdown, providers, create and list are not per sandbox.
        assert_eq!(n, 29);
    }
}
