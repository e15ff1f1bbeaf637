//! rt-two (Claude Code stand-in).

use crate::mcp_server;
use crate::support::*;
use serde_json::{Value, json};
use std::time::Duration;

fn env() -> Env {
    Env::new("rt-two", two)
}

fn result(lines: &[Value]) -> &Value {
    of_type(lines, "result").pop().expect("result line")
}

/// Content blocks of the given type from assistant lines.
fn blocks<'a>(lines: &'a [Value], ty: &str) -> Vec<&'a Value> {
    of_type(lines, "assistant")
        .into_iter()
        .flat_map(|l| l["message"]["content"].as_array().unwrap())
        .filter(|b| b["type"] == ty)
        .collect()
}

fn tool_results(lines: &[Value]) -> Vec<&Value> {
    of_type(lines, "user")
        .into_iter()
        .flat_map(|l| l["message"]["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

#[test]
fn default_turn_has_init_assistant_result() {
    let e = env();
    let l = e.ok(&["hello there"]);
    assert_eq!(l.len(), 3);
    let init = &l[0];
    assert_eq!(
        (init["type"].as_str(), init["subtype"].as_str()),
        (Some("system"), Some("init"))
    );
    for k in [
        "session_id",
        "model",
        "tools",
        "mcp_servers",
        "cwd",
        "permissionMode",
        "apiKeySource",
    ] {
        assert!(init.get(k).is_some(), "init.{k}");
    }
    assert_eq!(init["apiKeySource"], "none");
    let msg = &l[1]["message"];
    assert_eq!(msg["type"], "message");
    assert_eq!(msg["role"], "assistant");
    assert_eq!(
        msg["content"][0],
        json!({"type": "text", "text": "echo (turn 1): hello there"})
    );
    assert_eq!(l[1]["parent_tool_use_id"], Value::Null);
    let r = &l[2];
    assert_eq!(
        (r["subtype"].as_str(), r["is_error"].as_bool()),
        (Some("success"), Some(false))
    );
    assert_eq!(r["result"], "echo (turn 1): hello there");
    assert_eq!(r["session_id"], init["session_id"]);
    assert_eq!(r["num_turns"], 1);
    assert_eq!(r["duration_ms"], 0, "fixed clock");
    for k in [
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ] {
        assert!(r["usage"][k].is_u64(), "usage.{k}");
    }
    assert!(r["total_cost_usd"].is_number());
    let out = two(e.state.path(), e.work.path(), &["x"])
        .env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\"apiKeySource\":\"ANTHROPIC_API_KEY\"") && !text.contains("sk-ant-secret")
    );
}

#[test]
fn resume_continues_and_unknown_fails() {
    let e = env();
    let first = e.ok(&["one"]);
    let id = first[0]["session_id"].as_str().unwrap().to_string();
    let second = e.ok(&["two", &format!("--resume={id}")]);
    assert_eq!(second[0]["session_id"], id.as_str());
    assert_eq!(result(&second)["result"], "echo (turn 2): two");
    let third = e.ok(&["--resume", &id, "--", "three"]);
    assert_eq!(result(&third)["result"], "echo (turn 3): three");

    let missing = "11111111-2222-3333-4444-555555555555";
    let out = e.run(&["x", "--resume", missing]);
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out.stdout);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["subtype"], "error_during_execution");
    assert_eq!(l[0]["is_error"], true);
    assert_eq!(
        l[0]["errors"][0],
        format!("No conversation found with session ID: {missing}")
    );
    assert!(stderr_text(&out).contains("No conversation found"));
}

#[test]
fn partial_messages_stream_text_deltas() {
    let e = env();
    let l = e.ok(&[
        "--include-partial-messages",
        "[[scenario:stream:1]] streamed",
    ]);
    let events: Vec<&Value> = of_type(&l, "stream_event")
        .into_iter()
        .map(|s| &s["event"])
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|ev| ev["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert_eq!(kinds.last(), Some(&"message_stop"));
    let text: String = events
        .iter()
        .filter(|ev| ev["type"] == "content_block_delta" && ev["delta"]["type"] == "text_delta")
        .map(|ev| ev["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "echo (turn 1): [[scenario:stream:1]] streamed");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "content_block_delta")
            .count(),
        5
    );
    assert_eq!(result(&l)["result"], text);
}

#[test]
fn streaming_is_real() {
    let e = env();
    let live = spawn(std_cmd(
        "rt-two",
        e.state.path(),
        e.work.path(),
        &[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "[[scenario:stream:150]]",
        ],
    ));
    let seen = live.wait_for(|l| l.contains("\"type\":\"result\""));
    let deltas: Vec<_> = seen
        .iter()
        .filter(|(_, l)| l.contains("text_delta"))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(deltas.len(), 5);
    assert!(
        deltas[4].duration_since(deltas[0]) >= Duration::from_millis(450),
        "deltas arrived together"
    );
}

#[test]
fn stream_json_input_runs_one_turn_per_line() {
    let e = env();
    let input = [
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "first"}]}}),
        json!({"type": "user", "message": {"role": "user", "content": "second"}}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let out = two(
        e.state.path(),
        e.work.path(),
        &["--input-format", "stream-json"],
    )
    .write_stdin(input)
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr_text(&out));
    let l = lines(&out.stdout);
    let results = of_type(&l, "result");
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["result"], "echo (turn 1): first");
    assert_eq!(results[1]["result"], "echo (turn 2): second");
    assert_eq!(results[0]["session_id"], results[1]["session_id"]);
    assert_eq!(
        of_type(&l, "system")
            .iter()
            .filter(|s| s["subtype"] == "init")
            .count(),
        2
    );

    let out = two(
        e.state.path(),
        e.work.path(),
        &["--input-format", "stream-json"],
    )
    .write_stdin("not json\n")
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_text(&out).contains("Error parsing streaming input line"));
}

#[test]
fn compact_emits_boundary() {
    let e = env();
    // Like 2.1.332: an empty session has nothing to compact, yet the result says success.
    let fresh = e.ok(&["/compact"]);
    assert_eq!(result(&fresh)["local_command"], "compact");
    assert!(
        of_type(&fresh, "system")
            .iter()
            .all(|s| s["subtype"] != "compact_boundary")
    );
    let refusal = of_type(&fresh, "assistant");
    assert_eq!(
        refusal[0]["message"]["content"][0]["text"],
        "Error: No messages to compact"
    );
    let id = fresh[0]["session_id"].as_str().unwrap().to_string();
    // One exchange is enough to compact since 2.1.332.
    e.ok(&["some work", "--resume", &id]);
    let l = e.ok(&["/compact", "--resume", &id]);
    let summary = of_type(&l, "user")
        .into_iter()
        .find(|u| u["isSynthetic"] == true)
        .expect("the summary message");
    assert!(
        summary["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("</system-reminder>\nSummary:\nSummary of "),
        "{summary}"
    );
    let boundary = of_type(&l, "system")
        .into_iter()
        .find(|s| s["subtype"] == "compact_boundary")
        .expect("boundary");
    assert_eq!(boundary["compact_metadata"]["trigger"], "manual");
    assert!(boundary["compact_metadata"]["pre_tokens"].is_u64());
    let r = result(&l);
    assert_eq!(
        (r["subtype"].as_str(), r["is_error"].as_bool()),
        (Some("success"), Some(false))
    );
}

#[test]
fn tools_reasoning_todo() {
    let e = env();
    let l = e.ok(&["[[scenario:reasoning]] [[scenario:command]] [[scenario:command_fail]] [[scenario:tool]] [[scenario:todo]]"]);
    let thinking = blocks(&l, "thinking");
    assert!(
        thinking[0]["thinking"]
            .as_str()
            .unwrap()
            .starts_with("Thinking about")
    );
    assert!(thinking[0]["signature"].is_string());
    let uses = blocks(&l, "tool_use");
    let names: Vec<&str> = uses.iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Bash", "Bash", "Read", "TodoWrite"]);
    let results = tool_results(&l);
    assert_eq!(results.len(), 4);
    for (u, r) in uses.iter().zip(&results) {
        assert_eq!(u["id"], r["tool_use_id"]);
    }
    assert_eq!(
        (
            results[0]["content"].as_str(),
            results[0]["is_error"].as_bool()
        ),
        (Some("hi"), Some(false))
    );
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(result(&l)["num_turns"], 5);
}

#[test]
fn file_change_really_writes_in_cwd() {
    let e = env();
    let l = e.ok(&["[[scenario:file_change:out/f.txt]] body"]);
    let written = std::fs::read_to_string(e.work.path().join("out/f.txt")).unwrap();
    assert_eq!(written, "[[scenario:file_change:out/f.txt]] body\n");
    let uses = blocks(&l, "tool_use");
    assert_eq!(uses[0]["name"], "Write");
    assert!(
        uses[0]["input"]["file_path"]
            .as_str()
            .unwrap()
            .ends_with("out/f.txt")
    );
    assert!(
        tool_results(&l)[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("File created successfully")
    );
}

#[test]
fn mcp_call_hits_http_server_with_expanded_header() {
    let e = env();
    let server = mcp_server::start();
    let config = json!({"mcpServers": {"demo": {"type": "http", "url": server.url, "headers": {"Authorization": "Bearer ${DEMO_TOKEN}"}}}});
    let out = two(
        e.state.path(),
        e.work.path(),
        &[
            "[[scenario:mcp:demo/echo]] [[scenario:mcp:demo/boom]]",
            "--mcp-config",
            &config.to_string(),
        ],
    )
    .env("DEMO_TOKEN", "tok-9")
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr_text(&out));
    let l = lines(&out.stdout);
    assert_eq!(
        l[0]["mcp_servers"],
        json!([{"name": "demo", "status": "connected", "source": "dynamic"}])
    );
    let uses = blocks(&l, "tool_use");
    assert_eq!(uses[0]["name"], "mcp__demo__echo");
    assert_eq!(
        uses[0]["input"]["text"],
        "[[scenario:mcp:demo/echo]] [[scenario:mcp:demo/boom]]"
    );
    let results = tool_results(&l);
    assert!(
        results[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("echoed")
    );
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(results[1]["content"], "MCP error -32000: tool exploded");
    let calls = server.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].authorization.as_deref(), Some("Bearer tok-9"));
    assert_eq!(calls[0].request_line, "POST /mcp HTTP/1.1");
}

#[test]
fn mcp_config_is_variadic_like_commander() {
    let e = env();
    let out = e.run(&["--mcp-config", "{\"mcpServers\":{}}", "the prompt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_text(&out).contains("MCP config file not found"));
    let file = e.work.path().join("mcp.json");
    std::fs::write(&file, "{\"mcpServers\":{\"s\":{\"command\":\"x\"}}}").unwrap();
    let l = e.ok(&["--mcp-config", file.to_str().unwrap(), "--", "p"]);
    assert_eq!(
        l[0]["mcp_servers"],
        json!([{"name": "s", "status": "failed", "source": "dynamic"}])
    );
}

#[test]
fn subagent_lines_carry_parent_tool_use_id() {
    let e = env();
    let l = e.ok(&["[[scenario:subagent]]"]);
    let task = blocks(&l, "tool_use")
        .into_iter()
        .find(|u| u["name"] == "Task")
        .expect("Task")
        .clone();
    let task_id = task["id"].as_str().unwrap();
    assert!(task["input"]["prompt"].is_string() && task["input"]["description"].is_string());
    let nested: Vec<&Value> = l
        .iter()
        .filter(|v| v["parent_tool_use_id"] == task_id)
        .collect();
    assert!(nested.iter().any(|v| v["type"] == "assistant"));
    assert!(nested.iter().any(|v| v["type"] == "user"));
    let task_result = tool_results(&l)
        .into_iter()
        .find(|r| r["tool_use_id"] == task_id)
        .expect("task result");
    assert_eq!(
        task_result["content"][0]["text"],
        "The sub-agent found README.md"
    );
    assert!(
        of_type(&l, "system")
            .iter()
            .any(|s| s["subtype"] == "task_notification")
    );
}

#[test]
fn no_usage_fail_require_key_max_turns() {
    let e = env();
    let l = e.ok(&["[[scenario:no_usage]]"]);
    assert!(result(&l).get("usage").is_none());
    assert!(
        of_type(&l, "assistant")[0]["message"]
            .get("usage")
            .is_none()
    );

    let out = e.run(&["[[scenario:fail:API Error: 500 overloaded]]"]);
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out.stdout);
    let r = result(&l);
    assert_eq!(
        (r["is_error"].as_bool(), r["result"].as_str()),
        (Some(true), Some("API Error: 500 overloaded"))
    );
    assert_eq!(
        of_type(&l, "assistant")[0]["message"]["model"],
        "<synthetic>"
    );

    let out = two(e.state.path(), e.work.path(), &["hi"])
        .env("RT_FAKE_REQUIRE_KEY", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        result(&lines(&out.stdout))["result"],
        "Not logged in · Please run /login"
    );

    let out = e.run(&["[[scenario:command]]", "--max-turns", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out.stdout);
    let r = result(&l);
    assert_eq!(
        (r["subtype"].as_str(), r["is_error"].as_bool()),
        (Some("error_max_turns"), Some(true))
    );
}

#[test]
fn crash_stderr_malformed_large() {
    let e = env();
    let out = e.run(&["[[scenario:crash:10]]"]);
    assert_eq!(out.status.code(), Some(101));
    assert!(of_type(&lines(&out.stdout), "result").is_empty());

    let out = e.run(&["[[scenario:stderr]] [[scenario:malformed]]"]);
    assert!(out.status.success());
    assert!(stderr_text(&out).contains("rt-fake noise 1"));
    let (json, other) = split_lines(&out.stdout);
    assert_eq!(other, ["this line is not JSON {"]);
    assert_eq!(json.last().unwrap()["type"], "result");

    let l = e.ok(&["[[scenario:large:150000]]"]);
    assert_eq!(result(&l)["result"].as_str().unwrap().len(), 150_000);
    let l = e.ok(&["[[scenario:large_command:100000]]"]);
    assert!(tool_results(&l)[0]["content"].as_str().unwrap().len() >= 99_000);
}

#[test]
fn hang_dies_on_sigterm() {
    let e = env();
    let mut live = spawn(std_cmd(
        "rt-two",
        e.state.path(),
        e.work.path(),
        &[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
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
fn script_file_drives_the_turn() {
    let e = env();
    let script = write_script(
        e.work.path(),
        &json!([
            {"text": "part one", "deltas": 2},
            {"tool": {"name": "Grep", "input": {"pattern": "x"}, "output": "no matches"}},
            {"text": "final words"}
        ]),
    );
    let out = two(e.state.path(), e.work.path(), &["go"])
        .env("RT_FAKE_SCRIPT", &script)
        .output()
        .unwrap();
    assert!(out.status.success());
    let l = lines(&out.stdout);
    assert_eq!(result(&l)["result"], "final words");
    assert_eq!(result(&l)["num_turns"], 2);
    assert_eq!(blocks(&l, "tool_use")[0]["name"], "Grep");
}

#[test]
fn argv_errors_help_version_output_formats() {
    let e = env();
    let c = |args: &[&str]| {
        cmd("rt-two", e.state.path(), e.work.path())
            .args(args)
            .output()
            .unwrap()
    };
    let out = c(&["--bogus"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_text(&out).trim(), "error: unknown option '--bogus'");
    let out = c(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "2.1.332-fake (Claude Code)"
    );
    assert!(c(&["--help"]).status.success());
    let out = c(&["-p", "--output-format", "stream-json", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_text(&out).contains("requires --verbose"));
    let out = c(&["-p", "--permission-mode", "wrong", "x"]);
    assert!(stderr_text(&out).contains("Allowed choices are acceptEdits"));
    let out = c(&["-p", "plain text"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "echo (turn 1): plain text"
    );
    let out = c(&["-p", "--output-format", "json", "as json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["type"], "result");
    let out = cmd("rt-two", e.state.path(), e.work.path())
        .args(["-p"])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_text(&out).contains("Input must be provided"));
}

#[test]
fn bypass_permissions_as_root_needs_is_sandbox() {
    let e = env();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let out = two(
        e.state.path(),
        e.work.path(),
        &["x", "--permission-mode", "bypassPermissions"],
    )
    .env_remove("IS_SANDBOX")
    .output()
    .unwrap();
    if root {
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr_text(&out).contains("cannot be used with root/sudo privileges"));
    } else {
        assert!(out.status.success());
    }
    let l = e.ok(&["x", "--permission-mode", "bypassPermissions"]);
    assert_eq!(l[0]["permissionMode"], "bypassPermissions");
}
