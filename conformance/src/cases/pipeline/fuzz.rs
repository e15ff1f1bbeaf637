//! Property: whatever the method, path, headers and query, the server never answers a 5xx
//! and every error is a typed body.

use crate::{Case, Ctx, case, profiles};
use anyhow::anyhow;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use reqwest::Method;

const KNOWN_PATHS: &[&str] = &[
    "/health",
    "/capabilities",
    "/capabilities/check",
    "/commands",
    "/commands/x",
    "/files",
    "/files/content",
    "/v1",
    "/v1/models",
    "/v1/agents/sessions",
    "/pty/1/connect",
    "/",
];

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("GET".to_owned()),
        Just("POST".to_owned()),
        Just("PUT".to_owned()),
        Just("DELETE".to_owned()),
        Just("PATCH".to_owned()),
        Just("OPTIONS".to_owned()),
        Just("HEAD".to_owned()),
        "[A-Z]{3,8}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(KNOWN_PATHS).prop_map(str::to_owned),
        proptest::collection::vec("[a-zA-Z0-9_.~-]{0,8}|%[0-9A-F]{2}|\\.\\.", 0..5)
            .prop_map(|parts| format!("/{}", parts.join("/"))),
        proptest::sample::select(KNOWN_PATHS)
            .prop_flat_map(|p| "[a-z0-9%._-]{0,6}".prop_map(move |s| format!("{p}/{s}"))),
    ]
}

fn query() -> impl Strategy<Value = String> {
    proptest::collection::vec(("[a-z]{1,3}", "[a-zA-Z0-9%]{0,5}"), 0..4).prop_map(|pairs| {
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    })
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = prop_oneof![
        Just("content-type".to_owned()),
        Just("authorization".to_owned()),
        Just("x-access-token".to_owned()),
        Just("accept".to_owned()),
        "x-[a-z]{1,6}",
    ];
    proptest::collection::vec((name, "[ -~]{0,24}"), 0..4)
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        Just(b"{}".to_vec()),
        Just(br#"{"endpoint":"health"}"#.to_vec()),
        proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

async fn probe(
    ctx: &Ctx,
    method: &str,
    path: &str,
    query: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> Result<(), String> {
    let method = Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    let target = if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    };
    let mut rb = ctx.anonymous(method.clone(), &target).body(body);
    for (k, v) in headers {
        rb = rb.header(k.as_str(), v.as_str());
    }
    let resp = ctx
        .send(rb)
        .await
        .map_err(|e| format!("{method} {target}: transport error {e}"))?;
    if resp.status >= 500 {
        return Err(format!("{method} {target}: {}", resp.describe()));
    }
    if resp.status >= 400 && method != Method::HEAD {
        let body = resp
            .json()
            .map_err(|_| format!("{method} {target}: untyped error body\n{}", resp.describe()))?;
        let code = body["code"]
            .as_str()
            .or_else(|| body["error"]["code"].as_str());
        if code.is_none() {
            return Err(format!(
                "{method} {target}: error without a code\n{}",
                resp.describe()
            ));
        }
    }
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "pipeline/fuzz/001",
        spec: "Random methods, paths, headers, query strings and bodies never yield a 5xx (so never `internal_error`), always a typed body.",
        profile: &profiles::FUZZ,
        tags: [],
        endpoints: [],
        codes: ["internal_error"],
        run: |ctx| async move {
            let handle = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || {
                let mut runner = TestRunner::new(Config { cases: 256, failure_persistence: None, ..Config::default() });
                runner.run(&(method(), path(), query(), headers(), body()), |(m, p, q, h, b)| {
                    handle.block_on(probe(&ctx, &m, &p, &q, &h, b)).map_err(TestCaseError::fail)
                }).map_err(|e| anyhow!("{e}"))
            }).await?
        },
    }]
}
