//! The admission pipeline's order, in process (axum's `testing` example: the app without a
//! socket, driven by `oneshot`). Each test sends a request that two steps would refuse and
//! checks that the earlier step answers: match, then authenticate, then the endpoint switch,
//! then scopes, then rate, then repeated parameters, then the body limit, then the handler.
//! The black-box suite checks each step alone; these pin the order between them.

use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use std::collections::BTreeMap;
use svc::server::AppState;
use svc::server::config::{LoadOptions, Settings};
use tower::ServiceExt;

const TEMPLATE: &str = r#"
server:
  endpoints: {commands_run: false}
  limits:
    endpoints:
      capabilities_check: {rate: "1/h", body_bytes: 64}
identities:
  - {id: admin, token: admin-token, scopes: ["*"]}
  - {id: reader, token: reader-token, scopes: ["files:read"]}
"#;

fn app() -> axum::Router {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("template.yaml");
    std::fs::write(&path, TEMPLATE).unwrap();
    let options = LoadOptions {
        config_path: Some(path),
        ..LoadOptions::default()
    };
    let settings = Settings::load_with_env(&options, &BTreeMap::new()).unwrap();
    svc::app(AppState::with_settings(settings))
}

/// One request through a fresh app: status and the error code of the body (flat shape).
async fn send(app: axum::Router, req: Request<Body>) -> (StatusCode, String) {
    let response = app.oneshot(req).await.unwrap();
    let status = response.status();
    assert_eq!(
        response.headers().get("x-svc-local").map(|v| v.as_bytes()),
        Some(&b"1"[..]),
        "every answer is marked local"
    );
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, body["code"].as_str().unwrap_or_default().to_owned())
}

fn get(uri: &str, token: Option<&str>) -> Request<Body> {
    let mut req = Request::get(uri);
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    req.body(Body::empty()).unwrap()
}

fn post(uri: &str, token: &str, body: &'static str) -> Request<Body> {
    Request::post(uri)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

#[tokio::test]
async fn match_comes_before_authentication() {
    let (status, code) = send(app(), get("/no/such/route", None)).await;
    assert_eq!((status.as_u16(), code.as_str()), (404, "not_found"));
}

#[tokio::test]
async fn authentication_comes_before_the_endpoint_switch() {
    let (status, code) = send(app(), post("/commands/greet", "wrong", "{}")).await;
    assert_eq!((status.as_u16(), code.as_str()), (401, "unauthorized"));
    // The public health check needs no token at all.
    let (status, _) = send(app(), get("/health", None)).await;
    assert_eq!(status.as_u16(), 200);
}

#[tokio::test]
async fn the_endpoint_switch_comes_before_scopes() {
    // `reader` lacks `commands:run`, but the endpoint is off for everyone: that is said first.
    let (status, code) = send(app(), post("/commands/greet", "reader-token", "{}")).await;
    assert_eq!((status.as_u16(), code.as_str()), (404, "endpoint_disabled"));
    let (status, code) = send(app(), get("/commands", Some("reader-token"))).await;
    assert_eq!((status.as_u16(), code.as_str()), (403, "missing_scope"));
}

#[tokio::test]
async fn rate_comes_before_repeated_parameters_which_come_before_the_body_limit() {
    let app = app();
    let big = "{\"endpoint\": \"health\", \"padding\": \"................................................\"}";
    // First call: the rate admits it; the repeated parameter is refused before the
    // oversized body is looked at.
    let (status, code) = send(
        app.clone(),
        post("/capabilities/check?a=1&a=2", "admin-token", big),
    )
    .await;
    assert_eq!(
        (status.as_u16(), code.as_str()),
        (400, "duplicate_parameter")
    );
    // The rate (1 per hour) is now spent: the rate answers before anything else.
    let (status, code) = send(
        app.clone(),
        post("/capabilities/check?a=1&a=2", "admin-token", big),
    )
    .await;
    assert_eq!((status.as_u16(), code.as_str()), (429, "rate_limited"));
}

#[tokio::test]
async fn the_body_limit_comes_before_the_handler() {
    let big = "{\"endpoint\": \"health\", \"padding\": \"................................................\"}";
    let (status, code) = send(app(), post("/capabilities/check", "admin-token", big)).await;
    assert_eq!((status.as_u16(), code.as_str()), (413, "payload_too_large"));
    let (status, _) = send(
        app(),
        post(
            "/capabilities/check",
            "admin-token",
            "{\"endpoint\": \"health\"}",
        ),
    )
    .await;
    assert_eq!(status.as_u16(), 200);
}

#[tokio::test]
async fn the_http_layers_limits_come_before_matching() {
    let long = format!("/no/such/route?q={}", "a".repeat(9000));
    let (status, code) = send(app(), get(&long, None)).await;
    assert_eq!((status.as_u16(), code.as_str()), (414, "uri_too_long"));
}
