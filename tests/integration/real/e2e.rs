//! End to end with the real CLIs: every scenario runs on both runtimes through `svc`'s HTTP
//! API, with the scripted model behind the CLI.

use super::sim::{Api, ModelSim, Reply};
use super::{Svc, processes_with};
use conformance::mcp_mock::McpMock;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn of_type<'a>(items: &'a [Value], kind: &str) -> Vec<&'a Value> {
    items.iter().filter(|i| i["type"] == kind).collect()
}

fn last_request_text(sim: &ModelSim) -> String {
    sim.requests()
        .last()
        .map(|r| r.body.to_string())
        .unwrap_or_default()
}

async fn streamed_text(runtime: &str) {
    let sim = ModelSim::start(vec![Reply::streamed(
        "Hello from the scripted model",
        4,
        30,
    )])
    .await;
    let svc = Svc::start(&sim).await;
    let sid = svc.session(runtime, json!({}), "say hello").await;
    let turns = svc.settle(&sid, 1).await;
    assert_eq!(turns[0]["status"], "completed", "{turns:?}");
    let items = svc.items(&sid).await;
    let messages = of_type(&items, "message");
    let reply = messages.last().expect("a message item");
    assert_eq!(
        reply["content"][0]["text"], "Hello from the scripted model",
        "{items:?}"
    );
    assert_eq!(reply["content"][0]["type"], "output_text");
    assert!(
        last_request_text(&sim).contains("say hello"),
        "the prompt reached the model"
    );
    if runtime == "rt-two" {
        // Claude Code streams partial messages; codex exec reports whole items only.
        let (_, events) = svc
            .call(
                Method::GET,
                &format!("/v1/agents/sessions/{sid}/events?after=0"),
                None,
            )
            .await;
        let deltas = events
            .as_str()
            .unwrap_or_default()
            .matches("output_text.delta")
            .count();
        assert!(deltas >= 2, "text arrives in several deltas: {deltas}");
    }
}
on_both!(streamed_text);

async fn shell_command(runtime: &str) {
    let sim = ModelSim::start(vec![
        Reply::Shell("echo real-shell-ok".into()),
        Reply::text("ran it"),
    ])
    .await;
    let svc = Svc::start(&sim).await;
    let sid = svc.session(runtime, json!({}), "run echo").await;
    let turns = svc.settle(&sid, 1).await;
    assert_eq!(turns[0]["status"], "completed", "{turns:?}");
    let items = svc.items(&sid).await;
    let commands = of_type(&items, "command_execution");
    let command = commands
        .first()
        .unwrap_or_else(|| panic!("a command_execution item: {items:?}"));
    assert!(
        command.to_string().contains("echo real-shell-ok"),
        "{command}"
    );
    // The command really ran: its own output line (a login shell may print more).
    let output = command["output"].as_str().unwrap_or_default();
    assert!(
        output.lines().any(|l| l == "real-shell-ok"),
        "the command's output: {command}"
    );
    assert_eq!(command["exit_code"], 0, "{command}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "the tool result went back to the model");
    assert!(
        requests[1].body.to_string().contains("real-shell-ok"),
        "the second request carries the output"
    );
}
on_both!(shell_command);

async fn file_write(runtime: &str) {
    let svc_sim = ModelSim::start(vec![]).await;
    let svc = Svc::start(&svc_sim).await;
    let absolute = svc.workspace.join("notes/real.txt").display().to_string();
    svc_sim.push([
        Reply::WriteFile {
            relative: "notes/real.txt".into(),
            absolute,
            content: "written for real\n".into(),
        },
        Reply::text("wrote it"),
    ]);
    let sid = svc.session(runtime, json!({}), "write a note").await;
    let turns = svc.settle(&sid, 1).await;
    assert_eq!(turns[0]["status"], "completed", "{turns:?}");
    assert_eq!(
        std::fs::read_to_string(svc.workspace.join("notes/real.txt")).unwrap(),
        "written for real\n"
    );
    let artifacts = svc
        .get(&format!("/v1/agents/sessions/{sid}/artifacts"))
        .await;
    let artifact = artifacts["data"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["path"] == "/workspace/notes/real.txt"))
        .unwrap_or_else(|| panic!("an artifact for the file: {artifacts}"))
        .clone();
    let id = artifact["id"].as_str().unwrap();
    let (status, content) = svc
        .call(
            Method::GET,
            &format!("/v1/agents/sessions/{sid}/artifacts/{id}/content"),
            None,
        )
        .await;
    assert_eq!(
        (status, content.as_str()),
        (200, Some("written for real\n"))
    );
}
on_both!(file_write);

async fn resume(runtime: &str) {
    let sim = ModelSim::start(vec![
        Reply::text("first answer 4417"),
        Reply::text("second answer"),
    ])
    .await;
    let svc = Svc::start(&sim).await;
    let sid = svc.session(runtime, json!({}), "first question 9021").await;
    svc.settle(&sid, 1).await;
    svc.post(
        &format!("/v1/agents/sessions/{sid}/events"),
        json!({"input": "second question"}),
    )
    .await;
    let turns = svc.settle(&sid, 2).await;
    assert!(
        turns.iter().all(|t| t["status"] == "completed"),
        "{turns:?}"
    );
    let second = last_request_text(&sim);
    for earlier in [
        "first question 9021",
        "first answer 4417",
        "second question",
    ] {
        assert!(
            second.contains(earlier),
            "the resumed request carries `{earlier}`"
        );
    }
}
on_both!(resume);

async fn cancel(runtime: &str) {
    let long = "word ".repeat(60);
    let sim = ModelSim::start(vec![Reply::streamed(&long, 60, 250)]).await;
    let svc = Svc::start(&sim).await;
    let marker = format!("cancel-marker-{}", std::process::id());
    let sid = svc.session(runtime, json!({}), &marker).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while sim.requests().is_empty() {
        assert!(Instant::now() < deadline, "the CLI never called the model");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !processes_with(&marker).is_empty(),
        "the CLI runs while it streams"
    );
    svc.post(
        &format!("/v1/agents/sessions/{sid}/events"),
        json!({"events": [{"type": "agent.session.input.cancel"}]}),
    )
    .await;
    let turns = svc.settle(&sid, 1).await;
    assert_eq!(turns[0]["status"], "cancelled", "{turns:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the process group is gone: {:?}",
            processes_with(&marker)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
on_both!(cancel);

async fn api_error(runtime: &str) {
    let sim = ModelSim::start(vec![]).await;
    let svc = Svc::start(&sim).await;
    for status in [401, 429, 500] {
        let message = format!("the simulator says no ({status})");
        // Claude Code may retry once on its own before giving up.
        sim.push((0..3).map(|_| Reply::Error {
            status,
            message: message.clone(),
        }));
        let sid = svc.session(runtime, json!({}), "hello").await;
        let turns = svc.settle(&sid, 1).await;
        assert_eq!(turns[0]["status"], "failed", "{status}: {turns:?}");
        let error = turns[0]["error"].to_string();
        // The CLI's own words (codex rewrites a 500 as "high demand") and how it ended.
        assert!(
            error.contains(&status.to_string())
                || error.contains("the simulator says no")
                || error.contains("high demand"),
            "{status}: a useful message: {error}"
        );
        let session = svc.get(&format!("/v1/agents/sessions/{sid}")).await;
        assert_eq!(session["status"], "failed", "{session}");
        sim.clear();
    }
}
on_both!(api_error);

async fn runtimes_list(runtime: &str) {
    let sim = ModelSim::start(vec![]).await;
    let svc = Svc::start(&sim).await;
    let list = svc.get("/v1/agents/runtimes?limit=100").await;
    let entry = list["data"]
        .as_array()
        .and_then(|d| d.iter().find(|r| r["id"] == runtime))
        .cloned()
        .unwrap_or_default();
    assert_eq!(entry["installed"], true, "{entry}");
    let path = entry["path"].as_str().unwrap_or_default();
    assert!(
        path.starts_with(&super::real_bin().display().to_string()),
        "{entry}"
    );
}
on_both!(runtimes_list);

async fn responses(runtime: &str) {
    let sim = ModelSim::start(vec![
        Reply::text("sync answer"),
        Reply::streamed("streamed answer here", 3, 20),
        Reply::text("continued"),
    ])
    .await;
    let svc = Svc::start(&sim).await;
    let first = svc
        .post(
            "/v1/responses",
            json!({"model": runtime, "input": "question one 5512"}),
        )
        .await;
    assert_eq!(first["status"], "completed", "{first}");
    assert!(
        first["output"].to_string().contains("sync answer"),
        "{first}"
    );
    let (status, stream) = svc
        .call(
            Method::POST,
            "/v1/responses",
            Some(
                json!({"model": runtime, "input": "question two", "stream": true, "store": false}),
            ),
        )
        .await;
    assert_eq!(status, 200);
    let stream = stream.as_str().unwrap_or_default().to_owned();
    for event in [
        "response.created",
        "response.output_text.delta",
        "response.completed",
    ] {
        assert!(stream.contains(event), "{event} in the stream: {stream}");
    }
    // The deltas, joined, are the model's text.
    let text: String = stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|e| e["type"] == "response.output_text.delta")
        .filter_map(|e| e["delta"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "streamed answer here", "{stream}");
    let next = svc.post("/v1/responses", json!({"model": runtime, "input": "question three", "previous_response_id": first["id"]})).await;
    assert!(next["output"].to_string().contains("continued"), "{next}");
    let history = last_request_text(&sim);
    assert!(
        history.contains("question one 5512") && history.contains("sync answer"),
        "previous_response_id continues the conversation"
    );
}
on_both!(responses);

#[tokio::test]
#[ignore = "needs the pinned real CLIs: run `just test-real`"]
async fn reasoning_effort_reaches_codex() {
    let sim = ModelSim::start(vec![Reply::text("thought hard")]).await;
    let svc = Svc::start(&sim).await;
    let sid = svc
        .session("rt-one", json!({"reasoning": {"effort": "high"}}), "think")
        .await;
    svc.settle(&sid, 1).await;
    let request = &sim.requests()[0];
    assert_eq!(request.api, Api::Responses);
    assert_eq!(
        request.body["reasoning"]["effort"], "high",
        "{}",
        request.body["reasoning"]
    );
}

#[tokio::test]
#[ignore = "needs the pinned real CLIs: run `just test-real`"]
async fn instructions_reach_claude() {
    let sim = ModelSim::start(vec![Reply::text("arr")]).await;
    let svc = Svc::start(&sim).await;
    let sid = svc
        .session(
            "rt-two",
            json!({"instructions": "Answer like a pirate 7731"}),
            "hello",
        )
        .await;
    svc.settle(&sid, 1).await;
    let request = &sim.requests()[0];
    assert_eq!(request.api, Api::Messages);
    assert!(
        request.body["system"]
            .to_string()
            .contains("Answer like a pirate 7731"),
        "the system prompt carries the instructions"
    );
}

/// `POST /v1/responses/compact` on `previous`: the answer and the summary it carries.
async fn compact(svc: &Svc, previous: &Value) -> (Value, String) {
    let (status, compacted) = svc
        .call(
            Method::POST,
            "/v1/responses/compact",
            Some(json!({"previous_response_id": previous["id"]})),
        )
        .await;
    assert_eq!(status, 200, "{compacted}");
    assert_eq!(compacted["object"], "response.compaction", "{compacted}");
    assert_eq!(compacted["x_svc"]["status"], "completed", "{compacted}");
    assert_eq!(compacted["output"][0]["type"], "compaction", "{compacted}");
    let summary = compacted["output"][0]["encrypted_content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (compacted, summary)
}

#[tokio::test]
#[ignore = "needs the pinned real CLIs: run `just test-real`"]
async fn compact_on_claude() {
    // Claude Code asks for the summary in `<summary>` tags (and asks again without them).
    let sim = ModelSim::start(vec![
        Reply::text("a short answer"),
        Reply::text("<analysis>one exchange</analysis><summary>We talked once 1187.</summary>"),
        Reply::text("after the summary"),
        Reply::text("another answer"),
        Reply::text("<summary>We talked at length 5521.</summary>"),
    ])
    .await;
    let svc = Svc::start(&sim).await;
    let first = svc
        .post(
            "/v1/responses",
            json!({"model": "rt-two", "input": "talk to me"}),
        )
        .await;
    // Since 2.1.332 one exchange is enough to compact: the answer carries the summary
    // the model wrote, not an empty output.
    let (_, summary) = compact(&svc, &first).await;
    assert_eq!(summary, "We talked once 1187.");
    assert_eq!(
        sim.requests().len(),
        2,
        "claude asked the model for a summary"
    );
    // The conversation goes on from the summary.
    let second = svc
        .post(
            "/v1/responses",
            json!({"model": "rt-two", "input": "and more", "previous_response_id": first["id"]}),
        )
        .await;
    assert!(
        second["output"].to_string().contains("after the summary"),
        "{second}"
    );
    assert!(
        last_request_text(&sim).contains("We talked once 1187."),
        "the next request starts from the summary"
    );
    // A longer conversation compacts the same way.
    let third = svc
        .post(
            "/v1/responses",
            json!({"model": "rt-two", "input": "still more", "previous_response_id": second["id"]}),
        )
        .await;
    let (compacted, summary) = compact(&svc, &third).await;
    assert_eq!(summary, "We talked at length 5521.", "{compacted}");
    assert_eq!(
        sim.requests().len(),
        5,
        "one summary request per compaction"
    );
}

async fn vault_credential_to_mcp(runtime: &str) {
    let secret = format!("real-{runtime}-vault-Xq81Lm");
    let mcp = McpMock::start(Some(&secret)).await;
    let mcp_url = mcp.url();
    let sim = ModelSim::start(vec![
        Reply::Mcp {
            server: "probe".into(),
            tool: "echo".into(),
            arguments: json!({"text": "from the model"}),
        },
        Reply::text("the tool answered"),
    ])
    .await;
    let svc = Svc::start(&sim).await;
    let vault = svc.post("/v1/vaults", json!({"name": "real"})).await;
    let vid = vault["id"].as_str().unwrap();
    svc.post(&format!("/v1/vaults/{vid}/credentials"), json!({"name": "mcp", "auth": {"type": "static_bearer", "token": secret, "mcp_server_url": mcp_url}})).await;
    let tool = json!({"type": "mcp", "server_label": "probe", "transport": {"type": "http", "server_url": mcp_url}});
    let s = svc.post("/v1/agents/sessions", json!({"agent": {"model": runtime, "tools": [tool]}, "vault_ids": [vid], "input": "use the probe"})).await;
    let sid = s["id"].as_str().unwrap();
    let turns = svc.settle(sid, 1).await;
    assert_eq!(turns[0]["status"], "completed", "{turns:?}");
    let items = svc.items(sid).await;
    let seen = mcp.seen();
    let tail: String = last_request_text(&sim)
        .chars()
        .rev()
        .take(4000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(
        seen.methods.iter().any(|m| m == "tools/call"),
        "the CLI called the tool: {:?}\nthe model last saw: {tail}",
        seen.methods
    );
    assert!(
        seen.authorization
            .iter()
            .all(|a| *a == format!("Bearer {secret}")),
        "{:?}",
        seen.authorization
    );
    assert!(
        seen.leaks.is_empty(),
        "the token is on a command line: {:?}",
        seen.leaks
    );
    assert!(
        !of_type(&items, "mcp_call").is_empty(),
        "an mcp_call item: {items:?}"
    );
    assert!(!json!(items).to_string().contains(&secret));
}
on_both!(vault_credential_to_mcp);

async fn stream_cut(runtime: &str) {
    let sim = ModelSim::start(vec![Reply::Cut, Reply::Cut, Reply::Cut]).await;
    let svc = Svc::start(&sim).await;
    let sid = svc.session(runtime, json!({}), "hello").await;
    let turns = svc.settle(&sid, 1).await;
    assert_eq!(
        turns[0]["status"], "failed",
        "a stream cut mid-way fails the turn: {turns:?}"
    );
    assert!(!turns[0]["error"].is_null(), "{turns:?}");
}
on_both!(stream_cut);
