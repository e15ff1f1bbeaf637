//! Commands (run and stream), processes, code runs and contexts through the front.

use super::{Events, answer, code, pair};
use crate::error::engine::Code;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_run_comes_back_whole_with_bytes_that_are_not_text() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let run = format!("/sandboxes/{id}/commands/run");
    let body = json!({"cmd": "printf 'a\\377'; echo err >&2; exit 3"});
    let (status, out) = answer(pair.front(Method::POST, &run).json(&body)).await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["stdout_b64"], "Yf8=", "{out}");
    assert_eq!(
        (&out["stderr"], &out["exit_code"], &out["timed_out"]),
        (&json!("err\n"), &json!(3), &json!(false))
    );
    assert!(out["pid"].as_u64().unwrap() > 0);
    let body = json!({"cmd": "echo", "args": ["a b", "$HOME"], "timeout": 5});
    let (_, out) = answer(pair.front(Method::POST, &run).json(&body)).await;
    assert_eq!(out["stdout"], "a b $HOME\n");
    pair.kill(&id).await;
}

#[tokio::test]
async fn a_stream_flows_with_one_end_and_its_stdin_is_reachable() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let stream = format!("/sandboxes/{id}/commands/stream");
    let body = json!({"cmd": "echo out; echo err >&2"});
    let events = Events::open(pair.front(Method::POST, &stream).json(&body))
        .await
        .rest()
        .await;
    let names: Vec<_> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        (names.first(), names.last()),
        (Some(&"start"), Some(&"end")),
        "{names:?}"
    );
    assert_eq!(names.iter().filter(|n| **n == "end").count(), 1);
    let text = |name: &str| -> String {
        events
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, d)| d["data"].as_str().unwrap())
            .collect()
    };
    assert_eq!(
        (text("stdout"), text("stderr")),
        ("out\n".to_owned(), "err\n".to_owned())
    );
    let exit = &events.iter().find(|(n, _)| n == "exit").unwrap().1;
    assert_eq!(exit["exit_code"], 0);

    // `cat` waits on its stdin, which the front reaches on the remote.
    let mut cat = Events::open(
        pair.front(Method::POST, &stream)
            .json(&json!({"cmd": "cat"})),
    )
    .await;
    let (name, start) = cat.next().await.unwrap();
    assert_eq!(name, "start");
    let pid = start["pid"].as_u64().unwrap();
    let (_, listed) = answer(pair.front(Method::GET, &format!("/sandboxes/{id}/processes"))).await;
    let entry = listed["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == pid)
        .cloned();
    assert_eq!(
        entry.map(|p| p["stdin_open"].clone()),
        Some(json!(true)),
        "{listed}"
    );
    let stdin = format!("/sandboxes/{id}/processes/{pid}/stdin");
    let (status, wrote) = answer(
        pair.front(Method::POST, &stdin)
            .json(&json!({"data": "hello\n", "close": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{wrote}");
    assert_eq!(
        (&wrote["written"], &wrote["closed"]),
        (&json!(6), &json!(true))
    );
    let rest = cat.rest().await;
    let names: Vec<_> = rest.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["stdout", "exit", "end"]);
    assert_eq!(rest[0].1["data"], "hello\n");
    pair.kill(&id).await;
}

/// The pid of a `sleep` left in the background of sandbox `id`.
async fn sleeper(pair: &super::Pair, id: &str) -> u64 {
    let body = json!({"cmd": "sleep 30 >/dev/null 2>&1 & echo $!"});
    let (_, out) = answer(
        pair.front(Method::POST, &format!("/sandboxes/{id}/commands/run"))
            .json(&body),
    )
    .await;
    out["stdout"].as_str().unwrap().trim().parse().unwrap()
}

#[tokio::test]
async fn processes_are_signalled_and_killed_on_the_remote() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let listed = |pid: u64| {
        let request = pair.front(Method::GET, &format!("/sandboxes/{id}/processes"));
        async move {
            let (_, list) = answer(request).await;
            list["processes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["pid"] == pid)
        }
    };
    let listed = &listed;
    let gone = |pid: u64| async move {
        for _ in 0..100 {
            if !listed(pid).await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    };
    let first = sleeper(&pair, &id).await;
    assert!(listed(first).await);
    let signal = format!("/sandboxes/{id}/processes/{first}/signal");
    let (status, sent) = answer(
        pair.front(Method::POST, &signal)
            .json(&json!({"signal": 15})),
    )
    .await;
    assert_eq!(
        (status, &sent["signal"]),
        (StatusCode::OK, &json!(15)),
        "{sent}"
    );
    assert!(gone(first).await);

    let second = sleeper(&pair, &id).await;
    let process = format!("/sandboxes/{id}/processes/{second}");
    let (status, killed) = answer(pair.front(Method::DELETE, &process)).await;
    assert_eq!(
        (status, &killed["killed"]),
        (StatusCode::OK, &json!(true)),
        "{killed}"
    );
    assert!(gone(second).await);
    let (status, body) = answer(pair.front(Method::DELETE, &process)).await;
    assert_eq!(code(status, &body), Code::ProcessNotFound);
    pair.kill(&id).await;
}

#[tokio::test]
async fn code_runs_and_contexts_live_on_the_remote() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let run = format!("/sandboxes/{id}/code/run");
    let (_, out) = answer(
        pair.front(Method::POST, &run)
            .json(&json!({"language": "sh", "code": "echo $((6*7))"})),
    )
    .await;
    assert_eq!(
        (&out["stdout"], &out["exit_code"]),
        (&json!("42\n"), &json!(0)),
        "{out}"
    );
    assert!(out["duration_ms"].is_u64());

    let contexts = format!("/sandboxes/{id}/code/contexts");
    let (status, context) = answer(
        pair.front(Method::POST, &contexts)
            .json(&json!({"language": "sh"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{context}");
    let context_id = context["context_id"].as_str().unwrap().to_owned();
    let in_context = |code: &str| {
        pair.front(Method::POST, &run)
            .json(&json!({"language": "sh", "code": code, "context_id": context_id}))
    };
    answer(in_context("x=5")).await;
    assert_eq!(answer(in_context("echo $x")).await.1["stdout"], "5\n");
    let (_, list) = answer(pair.front(Method::GET, &contexts)).await;
    assert_eq!(list["contexts"], json!([context]));
    let one = format!("{contexts}/{context_id}");
    let (_, restarted) = answer(pair.front(Method::POST, &format!("{one}/restart"))).await;
    assert_eq!(restarted["context_id"], context_id.as_str());
    assert_eq!(
        answer(in_context("echo ${x:-unset}")).await.1["stdout"],
        "unset\n"
    );
    let (_, deleted) = answer(pair.front(Method::DELETE, &one)).await;
    assert_eq!(deleted["deleted"], true);
    let (status, body) = answer(pair.front(Method::DELETE, &one)).await;
    assert_eq!(code(status, &body), Code::ContextNotFound);
    pair.kill(&id).await;
}
