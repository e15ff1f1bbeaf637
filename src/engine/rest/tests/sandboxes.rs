//! The sandbox lifecycle through the front, and the remote's errors passed through.

use super::{answer, code, pair};
use crate::error::engine::Code;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

#[tokio::test]
async fn the_lifecycle_goes_to_the_remote() {
    let pair = pair().await;
    let (status, record) = answer(
        pair.front(Method::POST, "/sandboxes")
            .json(&json!({"timeout": 60, "metadata": {"team": "a"}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{record}");
    assert_eq!(record["provider"], "rest");
    assert_eq!(record["metadata"]["team"], "a");
    let id = record["sandbox_id"].as_str().unwrap().to_owned();
    let at = |tail: &str| format!("/sandboxes/{id}{tail}");

    // It lives on the remote, under the remote's own provider.
    let (status, there) = answer(pair.remote(Method::GET, &at(""))).await;
    assert_eq!(
        (status, &there["provider"]),
        (StatusCode::OK, &json!("local"))
    );

    let (_, listed) = answer(pair.front(Method::GET, "/sandboxes")).await;
    let ids: Vec<_> = listed["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["sandbox_id"])
        .collect();
    assert_eq!(ids, [&json!(id)]);
    let (_, paused) = answer(pair.front(Method::GET, "/sandboxes?status=paused&limit=5")).await;
    assert_eq!(paused["sandboxes"], json!([]));

    let (_, running) = answer(pair.front(Method::GET, &at("/running"))).await;
    assert_eq!(running, json!({"running": true}));
    let (status, longer) = answer(
        pair.front(Method::POST, &at("/timeout"))
            .json(&json!({"timeout": 120})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{longer}");
    assert!(
        longer["expires_at"].as_str() > record["expires_at"].as_str(),
        "{longer}"
    );

    let (_, paused) = answer(pair.front(Method::POST, &at("/pause"))).await;
    assert_eq!(paused["status"], "paused");
    let (_, there) = answer(pair.remote(Method::GET, &at(""))).await;
    assert_eq!(there["status"], "paused");
    // The remote refuses commands while paused; its E4003 comes back as it is.
    let (status, body) = answer(
        pair.front(Method::POST, &at("/commands/run"))
            .json(&json!({"cmd": "true"})),
    )
    .await;
    assert_eq!(code(status, &body), Code::SandboxNotRunning);
    let (_, resumed) = answer(pair.front(Method::POST, &at("/resume"))).await;
    assert_eq!(resumed["status"], "running");

    let (_, url) = answer(pair.front(Method::GET, &at("/ports/8080/url"))).await;
    assert_eq!(url["url"], "http://127.0.0.1:8080", "{url}");
    let (status, connected) = answer(pair.front(Method::POST, &at("/connect"))).await;
    assert_eq!(
        (status, &connected["sandbox_id"]),
        (StatusCode::OK, &json!(id))
    );

    let (_, killed) = answer(pair.front(Method::DELETE, &at(""))).await;
    assert_eq!(killed["status"], "stopped");
    let (status, body) = answer(pair.front(Method::GET, &at(""))).await;
    assert_eq!(code(status, &body), Code::SandboxNotFound);
    let (status, body) = answer(pair.remote(Method::GET, &at(""))).await;
    assert_eq!(code(status, &body), Code::SandboxNotFound);
}

/// The same request to the front and straight to the remote: the same error object.
async fn same_error(pair: &super::Pair, method: Method, path: &str, body: Option<Value>) -> Code {
    let with = |r: reqwest::RequestBuilder| match &body {
        Some(body) => r.json(body),
        None => r,
    };
    let (front_status, front) = answer(with(pair.front(method.clone(), path))).await;
    let (remote_status, remote) = answer(with(pair.remote(method, path))).await;
    assert_eq!(front_status, remote_status, "{front} / {remote}");
    for field in ["type", "code", "message", "suggestion"] {
        assert_eq!(
            front["error"][field], remote["error"][field],
            "{field}: {front} / {remote}"
        );
    }
    code(front_status, &front)
}

#[tokio::test]
async fn the_remotes_errors_pass_through_with_their_type_and_code() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let gpu = json!({"timeout": 60, "gpu": "a100"});
    assert_eq!(
        same_error(&pair, Method::POST, "/sandboxes", Some(gpu)).await,
        Code::FeatureNotSupported
    );
    let outside = format!("/sandboxes/{id}/files/content?path=/etc/passwd");
    assert_eq!(
        same_error(&pair, Method::GET, &outside, None).await,
        Code::PathNotAllowed
    );
    let missing = format!("/sandboxes/{id}/files/info?path=nothing-here");
    assert_eq!(
        same_error(&pair, Method::GET, &missing, None).await,
        Code::FileNotFound
    );
    let template = json!({"template": "gpu-box"});
    assert_eq!(
        same_error(&pair, Method::POST, "/sandboxes", Some(template)).await,
        Code::TemplateNotFound
    );

    // An unknown sandbox: the remote's E2009, through the session's connect.
    let (status, body) = answer(pair.front(Method::GET, "/sandboxes/sb_nope")).await;
    assert_eq!(code(status, &body), Code::SandboxNotFound);
    // The front holds a session; the sandbox ends behind its back (killed on the remote).
    let processes = format!("/sandboxes/{id}/processes");
    assert_eq!(
        answer(pair.front(Method::GET, &processes)).await.0,
        StatusCode::OK
    );
    let (status, _) = answer(pair.remote(Method::DELETE, &format!("/sandboxes/{id}"))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = answer(pair.front(Method::GET, &processes)).await;
    assert_eq!(code(status, &body), Code::SandboxNotFound);
}
