//! rt-one (Codex CLI stand-in).

use crate::mcp_server;
use crate::support::*;
use serde_json::{Value, json};
use std::time::Duration;

fn env() -> Env {
    Env::new("rt-one", one)
}

fn agent_text(lines: &[Value]) -> String {
    let msgs = items(lines, "item.completed", "agent_message");
    msgs.last().expect("agent message")["text"]
        .as_str()
        .expect("text")
        .to_string()
}

#[test]
fn default_turn_echoes_prompt_with_usage() {
    let e = env();
    let l = e.ok(&["hello world"]);
    let types: Vec<&str> = l.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "thread.started",
            "turn.started",
            "item.completed",
            "turn.completed"
        ]
    );
    assert_eq!(l[2]["item"]["id"], "item_0");
    assert_eq!(agent_text(&l), "echo (turn 1): hello world");
    let usage = &l[3]["usage"];
    for k in [
        "input_tokens",
        "cached_input_tokens",
        "cache_write_input_tokens",
        "output_tokens",
        "reasoning_output_tokens",
    ] {
        assert!(usage[k].is_u64(), "usage.{k} missing: {usage}");
    }
    let id = l[0]["thread_id"].as_str().unwrap();
    assert_eq!(id.len(), 36, "thread id is UUID-shaped: {id}");
}

#[test]
fn prompt_from_stdin() {
    let e = env();
    let out = one(e.state.path(), e.work.path(), &["-"])
        .write_stdin("from stdin\n")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(agent_text(&lines(&out.stdout)), "echo (turn 1): from stdin");
    assert!(stderr_text(&out).contains("Reading prompt from stdin..."));
    let out = one(e.state.path(), e.work.path(), &[])
        .write_stdin("  \n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_text(&out).contains("No prompt provided via stdin."));
}

#[test]
fn resume_continues_the_thread() {
    let e = env();
    let first = e.ok(&["first"]);
    let id = first[0]["thread_id"].as_str().unwrap().to_string();
    let second = e.ok(&["resume", &id, "second"]);
    assert_eq!(second[0]["thread_id"], id.as_str());
    assert_eq!(agent_text(&second), "echo (turn 2): second");
    // Usage is thread-cumulative in codex 0.171.0.
    let u1 = first.last().unwrap()["usage"]["input_tokens"]
        .as_u64()
        .unwrap();
    let u2 = second.last().unwrap()["usage"]["input_tokens"]
        .as_u64()
        .unwrap();
    assert!(u2 > u1);
    let third = e.ok(&["resume", "--last", "third"]);
    assert_eq!(agent_text(&third), "echo (turn 3): third");
    let file: Value =
        serde_json::from_slice(&std::fs::read(e.state.path().join(format!("{id}.json"))).unwrap())
            .unwrap();
    assert_eq!(file["turns"].as_array().unwrap().len(), 3);
    assert_eq!(file["turns"][1]["prompt"], "second");
}

#[test]
fn resume_unknown_thread_fails_like_codex() {
    let e = env();
    let id = "01a20366-52d5-7520-becc-000000000000";
    let out = e.run(&["resume", id, "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(stderr_text(&out).contains(&format!("no rollout found for thread id {id}")));
}

#[test]
fn ids_are_deterministic() {
    let (a, b) = (env(), env());
    assert_eq!(a.ok(&["same"]), b.ok(&["same"]));
    let c = env();
    let other = one(c.state.path(), c.work.path(), &["same"])
        .env("RT_FAKE_SEED", "other")
        .output()
        .unwrap();
    assert_ne!(lines(&other.stdout)[0], a.ok(&["again"])[0]);
}

#[test]
fn reasoning_command_and_todo() {
    let e = env();
    let l = e.ok(&[
        "[[scenario:reasoning]] [[scenario:command]] [[scenario:command_fail]] [[scenario:todo]]",
    ]);
    assert!(
        items(&l, "item.completed", "reasoning")[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Thinking about")
    );
    let started = items(&l, "item.started", "command_execution");
    assert_eq!(started[0]["status"], "in_progress");
    assert_eq!(started[0]["exit_code"], Value::Null);
    let done = items(&l, "item.completed", "command_execution");
    assert_eq!(done[0]["command"], "/bin/bash -lc 'echo hi'");
    assert_eq!(done[0]["aggregated_output"], "hi\n");
    assert_eq!(
        (done[0]["exit_code"].as_i64(), done[0]["status"].as_str()),
        (Some(0), Some("completed"))
    );
    assert_eq!(
        (done[1]["exit_code"].as_i64(), done[1]["status"].as_str()),
        (Some(1), Some("failed"))
    );
    let todo = items(&l, "item.completed", "todo_list");
    assert_eq!(
        todo[0]["items"][0],
        json!({"text": "Read the code", "completed": true})
    );
    assert_eq!(l.last().unwrap()["type"], "turn.completed");
}

#[test]
fn file_change_really_writes() {
    let e = env();
    let l = e.ok(&["[[scenario:file_change:sub/notes.txt]] note"]);
    let path = e.work.path().join("sub/notes.txt");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "[[scenario:file_change:sub/notes.txt]] note\n"
    );
    let done = items(&l, "item.completed", "file_change");
    assert_eq!(done[0]["status"], "completed");
    assert_eq!(done[0]["changes"][0]["kind"], "add");
    let shown = std::path::PathBuf::from(done[0]["changes"][0]["path"].as_str().unwrap());
    assert_eq!(shown.canonicalize().unwrap(), path.canonicalize().unwrap());
    let l = e.ok(&["[[scenario:file_change:sub/notes.txt]] again"]);
    assert_eq!(
        items(&l, "item.completed", "file_change")[0]["changes"][0]["kind"],
        "update"
    );
}

#[test]
fn mcp_call_hits_http_server_with_bearer_token() {
    let e = env();
    let server = mcp_server::start();
    let url = format!("mcp_servers.demo.url={}", server.url);
    let out = one(
        e.state.path(),
        e.work.path(),
        &[
            "-c",
            &url,
            "-c",
            "mcp_servers.demo.bearer_token_env_var=DEMO_TOKEN",
            "-c",
            "mcp_servers.demo.http_headers={\"X-Extra\"=\"v1\"}",
            "-c",
            APPROVE,
            "[[scenario:mcp:demo/echo]] ping",
        ],
    )
    .env("DEMO_TOKEN", "secret-123")
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr_text(&out));
    let l = lines(&out.stdout);
    let started = items(&l, "item.started", "mcp_tool_call");
    assert_eq!(started[0]["status"], "in_progress");
    let done = items(&l, "item.completed", "mcp_tool_call");
    assert_eq!(done[0]["server"], "demo");
    assert_eq!(done[0]["tool"], "echo");
    assert_eq!(done[0]["status"], "completed");
    assert_eq!(done[0]["error"], Value::Null);
    assert!(
        done[0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("echoed")
    );
    assert!(done[0]["result"].get("structured_content").is_some());

    let reqs = server.requests();
    let methods: Vec<&str> = reqs
        .iter()
        .map(|r| r.body["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "tools/call"]
    );
    let call = &server.calls()[0];
    assert_eq!(call.request_line, "POST /mcp HTTP/1.1");
    assert_eq!(call.authorization.as_deref(), Some("Bearer secret-123"));
    assert!(
        call.headers
            .iter()
            .any(|(k, v)| k == "x-extra" && v == "v1")
    );
    assert!(
        call.headers
            .iter()
            .any(|(k, v)| k == "mcp-session-id" && v == "sess-1")
    );
    assert_eq!(call.body["params"]["name"], "echo");
}

const APPROVE: &str = "mcp_servers.demo.default_tools_approval_mode=\"approve\"";

#[test]
fn mcp_errors_are_reported_in_the_item() {
    let e = env();
    let server = mcp_server::start();
    let url = format!("mcp_servers.demo.url={}", server.url);
    let l = e.ok(&[
        "-c",
        &url,
        "-c",
        APPROVE,
        "[[scenario:mcp:demo/boom]] [[scenario:mcp:nosuch/echo]]",
    ]);
    let done = items(&l, "item.completed", "mcp_tool_call");
    assert_eq!(done[0]["status"], "failed");
    assert_eq!(done[0]["result"], Value::Null);
    assert!(
        done[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp error: -32000: tool exploded")
    );
    assert!(
        done[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown MCP server")
    );
    // Like codex 0.169's exec: a server whose tools are not approved is never called.
    let calls_before = server.calls().len();
    let l = e.ok(&["-c", &url, "[[scenario:mcp:demo/echo]]"]);
    let refused = &items(&l, "item.completed", "mcp_tool_call")[0];
    assert_eq!(refused["status"], "failed");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requires approval, but approval policy is never")
    );
    assert_eq!(server.calls().len(), calls_before);
    // Connection refused is an error too, not a crash.
    let l = e.ok(&[
        "-c",
        "mcp_servers.down.url=http://127.0.0.1:9/mcp",
        "-c",
        "mcp_servers.down.default_tools_approval_mode=\"approve\"",
        "[[scenario:mcp]]",
    ]);
    assert_eq!(
        items(&l, "item.completed", "mcp_tool_call")[0]["status"],
        "failed"
    );
}

#[test]
fn tool_and_subagent() {
    let e = env();
    let l = e.ok(&["[[scenario:tool]] [[scenario:subagent]]"]);
    let cmds = items(&l, "item.completed", "command_execution");
    assert!(cmds[0]["command"].as_str().unwrap().contains("Read"));
    let collab = items(&l, "item.completed", "collab_tool_call");
    assert_eq!(collab[0]["tool"], "spawn_agent");
    assert_eq!(collab[0]["sender_thread_id"], l[0]["thread_id"]);
    let child = collab[0]["receiver_thread_ids"][0].as_str().unwrap();
    assert_eq!(collab[1]["tool"], "wait");
    assert_eq!(collab[1]["agents_states"][child]["status"], "completed");
}

#[test]
fn no_usage_fail_and_require_key() {
    let e = env();
    let l = e.ok(&["[[scenario:no_usage]]"]);
    assert!(l.last().unwrap().get("usage").is_none());

    let out = e.run(&["[[scenario:fail:model refused]]"]);
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out.stdout);
    assert_eq!(
        l[l.len() - 2],
        json!({"type": "error", "message": "model refused"})
    );
    assert_eq!(
        l[l.len() - 1],
        json!({"type": "turn.failed", "error": {"message": "model refused"}})
    );

    let out = one(e.state.path(), e.work.path(), &["hi"])
        .env("RT_FAKE_REQUIRE_KEY", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(lines(&out.stdout).last().unwrap()["type"], "turn.failed");
    let out = one(e.state.path(), e.work.path(), &["hi"])
        .env("RT_FAKE_REQUIRE_KEY", "1")
        .env("OPENAI_API_KEY", "sk-never-printed")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-never-printed"));
}

#[test]
fn crash_exits_without_terminal_event() {
    let e = env();
    let out = e.run(&["[[scenario:crash:10]]"]);
    assert_eq!(out.status.code(), Some(101));
    let l = lines(&out.stdout);
    assert!(
        l.iter()
            .all(|v| v["type"] != "turn.completed" && v["type"] != "turn.failed")
    );
    assert!(stderr_text(&out).contains("simulated crash"));
}

#[test]
fn stderr_and_malformed() {
    let e = env();
    let out = e.run(&["[[scenario:stderr]] [[scenario:malformed]]"]);
    assert!(out.status.success());
    assert!(stderr_text(&out).contains("rt-fake noise 2"));
    let (json, other) = split_lines(&out.stdout);
    assert_eq!(other, ["this line is not JSON {"]);
    assert_eq!(json.last().unwrap()["type"], "turn.completed");
}

#[test]
fn large_outputs() {
    let e = env();
    let l = e.ok(&["[[scenario:large:200000]]"]);
    assert_eq!(agent_text(&l).len(), 200_000);
    let l = e.ok(&["[[scenario:large_command:300000]]"]);
    let cmd = items(&l, "item.completed", "command_execution");
    assert_eq!(cmd[0]["aggregated_output"].as_str().unwrap().len(), 300_000);
}

#[test]
fn hang_dies_on_sigterm() {
    let e = env();
    let cwd = e.work.path().to_str().unwrap();
    let mut live = spawn(std_cmd(
        "rt-one",
        e.state.path(),
        e.work.path(),
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-C",
            cwd,
            "[[scenario:hang]]",
        ],
    ));
    live.wait_for(|l| l.contains("About to hang"));
    assert!(
        live.wait(Duration::from_millis(300)).is_none(),
        "should still be running"
    );
    let status = live.terminate();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(15));
}

#[test]
fn script_file_with_per_turn_steps() {
    let e = env();
    let script = write_script(
        e.work.path(),
        &json!({"turns": [
            [
                {"reasoning": "plan"},
                {"text": "scripted reply", "deltas": 3, "delay_ms": 5},
                {"file_change": {"path": "s.txt", "content": "from script"}},
                {"command": "make", "output": "ok\n", "exit_code": 0, "delay_ms": 5},
                {"usage": {"input_tokens": 7, "output_tokens": 3}},
            ],
            [{"fail": "second turn fails"}]
        ]}),
    );
    let out = one(e.state.path(), e.work.path(), &["go"])
        .env("RT_FAKE_SCRIPT", &script)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_text(&out));
    let l = lines(&out.stdout);
    assert_eq!(agent_text(&l), "scripted reply");
    assert_eq!(
        std::fs::read_to_string(e.work.path().join("s.txt")).unwrap(),
        "from script"
    );
    assert_eq!(l.last().unwrap()["usage"]["input_tokens"], 7);
    let id = l[0]["thread_id"].as_str().unwrap();
    let out = one(e.state.path(), e.work.path(), &["resume", id, "again"])
        .env("RT_FAKE_SCRIPT", &script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(lines(&out.stdout).last().unwrap()["type"], "turn.failed");

    std::fs::write(&script, "[{\"bogus\": 1}]").unwrap();
    let out = one(e.state.path(), e.work.path(), &["go"])
        .env("RT_FAKE_SCRIPT", &script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_text(&out).contains("step 1: unknown step kind"));
}

#[test]
fn streaming_is_real() {
    let e = env();
    let cwd = e.work.path().to_str().unwrap();
    let live = spawn(std_cmd(
        "rt-one",
        e.state.path(),
        e.work.path(),
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-C",
            cwd,
            "[[scenario:command]] [[scenario:stream:100]]",
        ],
    ));
    let seen = live.wait_for(|l| l.contains("turn.completed"));
    let first_command = seen
        .iter()
        .find(|(_, l)| l.contains("command_execution"))
        .expect("command line")
        .0;
    let done = seen.last().expect("lines").0;
    // The command item is flushed at once; the reply waits out 5 x 100 ms.
    assert!(
        done.duration_since(first_command) >= Duration::from_millis(400),
        "lines arrived together"
    );
}

#[test]
fn argv_errors_help_version_and_git_check() {
    let e = env();
    let out = cmd("rt-one", e.state.path(), e.work.path())
        .args(["exec", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_text(&out).contains("unexpected argument '--bogus' found"));
    let out = cmd("rt-one", e.state.path(), e.work.path())
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "rt-one 0.171.0-fake"
    );
    let out = cmd("rt-one", e.state.path(), e.work.path())
        .args(["exec", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--skip-git-repo-check"));
    let out = cmd("rt-one", e.state.path(), e.work.path())
        .args(["exec", "--json", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_text(&out).contains("Not inside a trusted directory"));
    let out = cmd("rt-one", e.state.path(), e.work.path())
        .args(["exec", "-c", "novalue", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = cmd("rt-one", e.state.path(), e.work.path())
        .args(["login", "status"])
        .env("OPENAI_API_KEY", "sk-x")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!stderr_text(&out).contains("sk-x"));
}

#[test]
fn output_last_message_and_human_mode() {
    let e = env();
    let file = e.work.path().join("last.txt");
    let out = cmd("rt-one", e.state.path(), e.work.path())
        .args(["exec", "--skip-git-repo-check", "-o"])
        .arg(&file)
        .arg("plain")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "echo (turn 1): plain"
    );
    assert_eq!(
        std::fs::read_to_string(file).unwrap(),
        "echo (turn 1): plain"
    );
}
