use super::{MAX_ARGV_PROMPT, RtOne, toml_string};
use crate::server::agents::adapters::test_support::{
    self as support, command, done, item, message, request, shape, thread,
};
use crate::server::agents::adapters::{
    Adapter, FileChange, ItemKind, ItemStatus, McpServer, RuntimeEvent, RuntimeItem, TurnRequest,
};
use serde_json::json;

fn args(request: &TurnRequest) -> Vec<String> {
    support::args(&RtOne, "rt-one", request)
}

fn run(output: &str) -> Vec<RuntimeEvent> {
    support::run(&RtOne, output)
}

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../fixtures/rt_one/", $name, ".jsonl"))
    };
}

#[test]
fn plain_turn_argv() {
    assert_eq!(
        args(&request("fix the bug")),
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-C",
            "/work/ws",
            "fix the bug"
        ]
    );
    assert_eq!(RtOne.launch(&request("x")).stdin, None);
}

#[test]
fn resume_turn_puts_cd_and_options_before_resume() {
    let mut req = request("again");
    req.resume = Some("0199a213-81c0-7800-8aa1-bbab2a035a53".into());
    req.extra_args = vec!["-s".into(), "workspace-write".into()];
    assert_eq!(
        args(&req),
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-C",
            "/work/ws",
            "-s",
            "workspace-write",
            "resume",
            "0199a213-81c0-7800-8aa1-bbab2a035a53",
            "again"
        ]
    );
}

#[test]
fn model_effort_and_instructions_are_toml_quoted() {
    let mut req = request("go");
    req.model = Some("gpt-5.1-codex".into());
    req.reasoning_effort = Some("high".into());
    req.instructions = Some("Say \"hi\"\nthen C:\\tmp".into());
    assert_eq!(
        args(&req),
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-C",
            "/work/ws",
            "-m",
            "gpt-5.1-codex",
            "-c",
            "model_reasoning_effort=\"high\"",
            "-c",
            r#"developer_instructions="Say \"hi\"\nthen C:\\tmp""#,
            "go"
        ]
    );
}

#[test]
fn mcp_servers_pass_env_var_names_only() {
    let mut req = request("call it");
    req.mcp_servers = vec![
        McpServer {
            name: "demo".into(),
            url: "http://127.0.0.1:9/mcp?a=b".into(),
            headers_from_env: vec![
                ("Authorization".into(), "SVC_MCP_DEMO_AUTH".into()),
                ("X-Team".into(), "SVC_MCP_DEMO_TEAM".into()),
            ],
        },
        McpServer {
            name: "open".into(),
            url: "http://h/mcp".into(),
            headers_from_env: vec![],
        },
    ];
    let argv = args(&req);
    assert_eq!(
        argv[5..],
        [
            "-c",
            r#"mcp_servers.demo.url="http://127.0.0.1:9/mcp?a=b""#,
            "-c",
            r#"mcp_servers.demo.default_tools_approval_mode="approve""#,
            "-c",
            r#"mcp_servers.demo.env_http_headers={"Authorization"="SVC_MCP_DEMO_AUTH","X-Team"="SVC_MCP_DEMO_TEAM"}"#,
            "-c",
            r#"mcp_servers.open.url="http://h/mcp""#,
            "-c",
            r#"mcp_servers.open.default_tools_approval_mode="approve""#,
            "call it"
        ]
    );
    // The request carries no header values at all, so none can reach argv.
    assert!(argv.iter().any(|a| a.contains("SVC_MCP_DEMO_AUTH")));
    assert!(!argv.iter().any(|a| a.contains("Bearer")));
}

#[test]
fn dash_prompt_and_huge_prompt_go_through_stdin() {
    let launch = RtOne.launch(&request("--help me"));
    assert_eq!(launch.args.last().map(String::as_str), Some("-"));
    assert_eq!(launch.stdin.as_deref(), Some("--help me"));
    let big = "x".repeat(MAX_ARGV_PROMPT + 1);
    let launch = RtOne.launch(&request(&big));
    assert_eq!(launch.args.last().map(String::as_str), Some("-"));
    assert_eq!(launch.stdin.as_deref(), Some(big.as_str()));
}

#[test]
fn toml_strings_escape_controls() {
    assert_eq!(
        toml_string("a\"b\\c\u{1}\u{7f}é\t"),
        r#""a\"b\\c\u0001\u007Fé\t""#
    );
}

#[test]
fn echo() {
    assert_eq!(
        run(fixture!("echo")),
        [
            thread("23bf38c6-ef1e-7283-882d-66d59276d842"),
            message("item_0", "echo (turn 1): hello there"),
            done(4, 0, 7)
        ]
    );
}

#[test]
fn resume_repeats_the_thread_id() {
    assert_eq!(
        run(fixture!("resume")),
        [
            thread("23bf38c6-ef1e-7283-882d-66d59276d842"),
            message("item_0", "echo (turn 2): again"),
            done(16, 10, 12)
        ]
    );
}

#[test]
fn reasoning() {
    assert_eq!(
        run(fixture!("reasoning"))[1..],
        [
            RuntimeEvent::ItemCompleted(item(
                "item_0",
                ItemKind::Reasoning {
                    text: "Thinking about: think [[scenario:reasoning]]".into()
                },
                ItemStatus::Completed
            )),
            message("item_1", "echo (turn 1): think [[scenario:reasoning]]"),
            done(8, 0, 11)
        ]
    );
}

#[test]
fn command_and_failed_command() {
    let cmd = "/bin/bash -lc 'echo hi'";
    assert_eq!(
        run(fixture!("command"))[1..3],
        [
            RuntimeEvent::ItemStarted(item(
                "item_0",
                command(cmd, "", None),
                ItemStatus::InProgress
            )),
            RuntimeEvent::ItemCompleted(item(
                "item_0",
                command(cmd, "hi\n", Some(0)),
                ItemStatus::Completed
            )),
        ]
    );
    assert_eq!(
        run(fixture!("command_fail"))[2],
        RuntimeEvent::ItemCompleted(item(
            "item_0",
            command("/bin/bash -lc false", "", Some(1)),
            ItemStatus::Failed
        ))
    );
}

#[test]
fn file_change() {
    let kind = ItemKind::FileChange {
        changes: vec![FileChange {
            path: "/tmp/adcap/ws/notes.txt".into(),
            kind: "add".into(),
        }],
    };
    assert_eq!(
        run(fixture!("file_change"))[1..3],
        [
            RuntimeEvent::ItemStarted(item("item_0", kind.clone(), ItemStatus::InProgress)),
            RuntimeEvent::ItemCompleted(item("item_0", kind, ItemStatus::Completed)),
        ]
    );
}

#[test]
fn mcp_call() {
    let arguments = json!({"text": "call it [[scenario:mcp:demo/echo]]"});
    let mcp = |output, status| {
        item(
            "item_0",
            ItemKind::McpCall {
                server: "demo".into(),
                tool: "echo".into(),
                arguments: arguments.clone(),
                output,
                error: None,
            },
            status,
        )
    };
    let result = json!({
        "content": [{"type": "text", "text": "echoed {\"text\": \"call it [[scenario:mcp:demo/echo]]\"}"}],
        "structured_content": null
    });
    assert_eq!(
        run(fixture!("mcp"))[1..3],
        [
            RuntimeEvent::ItemStarted(mcp(None, ItemStatus::InProgress)),
            RuntimeEvent::ItemCompleted(mcp(Some(result), ItemStatus::Completed)),
        ]
    );
}

#[test]
fn mcp_error_message_is_kept() {
    let line = r#"{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"demo","tool":"echo","arguments":{},"result":null,"error":{"message":"tool call error: boom"},"status":"failed"}}"#;
    let events = run(line);
    let RuntimeEvent::ItemCompleted(RuntimeItem {
        kind: ItemKind::McpCall { error, output, .. },
        status,
        ..
    }) = &events[0]
    else {
        panic!("{events:?}");
    };
    assert_eq!(
        (error.as_deref(), output, *status),
        (Some("tool call error: boom"), &None, ItemStatus::Failed)
    );
}

#[test]
fn generic_tool_shows_as_the_command_codex_ran() {
    // rt-one has no generic tool item: the fake maps `tool` to a command, as codex would run it.
    assert_eq!(
        shape(&run(fixture!("tool"))[1..3]),
        [
            "ItemStarted(CommandExecution,InProgress)",
            "ItemCompleted(CommandExecution,Completed)"
        ]
    );
}

#[test]
fn todo_list() {
    let todo = item(
        "item_0",
        ItemKind::ToolCall {
            tool_name: "todo_list".into(),
            input: json!({"items": [{"text": "Read the code", "completed": true}, {"text": "Write the fix", "completed": false}]}),
            output: None,
        },
        ItemStatus::InProgress,
    );
    let events = run(fixture!("todo"));
    assert_eq!(events[1], RuntimeEvent::ItemStarted(todo.clone()));
    assert_eq!(
        events[3],
        RuntimeEvent::ItemCompleted(RuntimeItem {
            status: ItemStatus::Completed,
            ..todo
        })
    );
}

#[test]
fn subagent_is_announced_once() {
    let events = run(fixture!("subagent"));
    assert_eq!(
        shape(&events),
        [
            "ThreadStarted",
            "ItemStarted(SubagentCall,InProgress)",
            "ItemCompleted(SubagentCall,Completed)",
            "SubagentStarted",
            "ItemStarted(SubagentWait,InProgress)",
            "ItemCompleted(SubagentWait,Completed)",
            "ItemCompleted(Message,Completed)",
            "TurnCompleted"
        ]
    );
    assert_eq!(
        events[3],
        RuntimeEvent::SubagentStarted {
            id: "7d1cc937-b291-7ef8-997e-bb09d0790e70".into(),
            description: Some("Look into: delegate [[scenario:subagent]]".into())
        }
    );
    // The spawn call names its agent once it completes (codex lists no receiver earlier).
    let RuntimeEvent::ItemCompleted(RuntimeItem {
        kind: ItemKind::SubagentCall {
            agent_id, prompt, ..
        },
        ..
    }) = &events[2]
    else {
        panic!("{events:?}");
    };
    assert_eq!(
        agent_id.as_deref(),
        Some("7d1cc937-b291-7ef8-997e-bb09d0790e70")
    );
    assert_eq!(
        prompt.as_deref(),
        Some("Look into: delegate [[scenario:subagent]]")
    );
}

#[test]
fn usage_absent() {
    assert_eq!(
        run(fixture!("no_usage")).last(),
        Some(&RuntimeEvent::TurnCompleted { usage: None })
    );
}

#[test]
fn failure() {
    assert_eq!(
        run(fixture!("fail")),
        [
            thread("a61118c1-431f-78b6-a3d4-9ac860c2a421"),
            RuntimeEvent::TurnFailed {
                message: "model refused".into()
            }
        ]
    );
}

#[test]
fn error_without_turn_failed_fails_at_finish() {
    let output = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"error\",\"message\":\"stream disconnected\"}\n";
    assert_eq!(
        run(output),
        [
            thread("t"),
            RuntimeEvent::TurnFailed {
                message: "stream disconnected".into()
            }
        ]
    );
    // A retry notice followed by success is no failure.
    let output =
        "{\"type\":\"error\",\"message\":\"Reconnecting... 1/5\"}\n{\"type\":\"turn.completed\"}\n";
    assert_eq!(run(output), [RuntimeEvent::TurnCompleted { usage: None }]);
}

#[test]
fn crash_mid_turn_has_no_terminal_event() {
    assert_eq!(
        shape(&run(fixture!("crash"))),
        ["ThreadStarted", "ItemCompleted(Reasoning,Completed)"]
    );
}

#[test]
fn malformed_lines_are_kept_not_fatal() {
    let events = run(fixture!("malformed"));
    assert_eq!(
        events[1],
        RuntimeEvent::Unparsed {
            line: "this line is not JSON {".into()
        }
    );
    assert_eq!(
        shape(&events[2..]),
        ["ItemCompleted(Message,Completed)", "TurnCompleted"]
    );
    for line in [
        "[1,2]",
        "{\"type\":\"mystery\"}",
        "{\"type\":\"item.completed\",\"item\":{\"type\":\"reasoning\"}}",
        "\u{0}",
    ] {
        assert_eq!(
            run(line),
            [RuntimeEvent::Unparsed { line: line.into() }],
            "{line}"
        );
    }
    assert_eq!(run("\n  \n"), []);
}

#[test]
fn large_output() {
    let events = run(fixture!("large"));
    let RuntimeEvent::ItemCompleted(RuntimeItem {
        kind: ItemKind::Message { text },
        ..
    }) = &events[1]
    else {
        panic!("{events:?}");
    };
    assert_eq!(text.len(), 3000);
    let huge = "y".repeat(4 << 20);
    let line = json!({"type": "item.completed", "item": {"id": "item_9", "type": "agent_message", "text": huge}});
    assert_eq!(run(&line.to_string()), [message("item_9", &huge)]);
}

#[test]
fn unknown_item_type_is_a_tool_call() {
    let line = r#"{"type":"item.completed","item":{"id":"item_5","type":"web_search","query":"rust toml","status":"completed"}}"#;
    assert_eq!(
        run(line),
        [RuntimeEvent::ItemCompleted(item(
            "item_5",
            ItemKind::ToolCall {
                tool_name: "web_search".into(),
                input: json!({"query": "rust toml"}),
                output: None
            },
            ItemStatus::Completed
        ))]
    );
}

/// Captured from the real Codex CLI 0.169.0 (against a mock Responses API and MCP server).
#[test]
fn real_cli_output_parses_like_the_fake() {
    let real = run(fixture!("real_mix"));
    assert_eq!(
        shape(&real),
        [
            "ThreadStarted",
            "Unparsed", // the real CLI's model-metadata warning item
            "ItemCompleted(Reasoning,Completed)",
            "ItemStarted(CommandExecution,InProgress)",
            "ItemCompleted(CommandExecution,Failed)",
            "ItemStarted(McpCall,InProgress)",
            "ItemCompleted(McpCall,Completed)",
            "ItemCompleted(Message,Completed)",
            "TurnCompleted"
        ]
    );
    assert_eq!(
        real[4],
        RuntimeEvent::ItemCompleted(item(
            "item_2",
            command("/bin/bash -lc 'echo hi; exit 3'", "hi\n", Some(3)),
            ItemStatus::Failed
        ))
    );
    assert_eq!(real[8], done(300, 30, 60));
    let fake: Vec<String> = [
        fixture!("reasoning"),
        fixture!("command_fail"),
        fixture!("mcp"),
    ]
    .iter()
    .flat_map(|f| shape(&run(f)))
    .collect();
    for kind in &shape(&real)[2..] {
        assert!(fake.contains(kind), "{kind} never comes from the fake");
    }
    let real = run(fixture!("real_resume_file_change"));
    assert_eq!(real[0], thread("01a20381-2cdf-79e2-ae73-9e934aa017c8"));
    assert_eq!(shape(&real[2..]), shape(&run(fixture!("file_change"))[1..]));
    assert_eq!(
        shape(&run(fixture!("real_fail"))[2..]),
        shape(&run(fixture!("fail"))[1..])
    );
    assert_eq!(
        run(fixture!("real_fail")).last(),
        Some(&RuntimeEvent::TurnFailed {
            message: "the model refused".into()
        })
    );
}
