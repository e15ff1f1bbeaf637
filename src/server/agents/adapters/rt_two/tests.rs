use super::{MAX_ARGV_PROMPT, RtTwo};
use crate::server::agents::adapters::test_support::{
    self as support, command, completed, done, message, request, shape, thread,
};
use crate::server::agents::adapters::{
    Adapter, FileChange, ItemKind, ItemStatus, McpServer, RuntimeEvent, RuntimeItem, TurnRequest,
};
use serde_json::{Value, json};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../fixtures/rt_two/", $name, ".jsonl"))
    };
}

const HEAD: [&str; 5] = [
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
];

fn args(request: &TurnRequest) -> Vec<String> {
    support::args(&RtTwo, "rt-two", request)
}

fn run(output: &str) -> Vec<RuntimeEvent> {
    support::run(&RtTwo, output)
}

fn started(key: &str, kind: ItemKind) -> RuntimeEvent {
    RuntimeEvent::ItemStarted(RuntimeItem {
        key: key.into(),
        kind,
        status: ItemStatus::InProgress,
    })
}

/// A text block opened (`content_block_start`), before its first delta.
fn opened(key: &str) -> RuntimeEvent {
    started(
        key,
        ItemKind::Message {
            text: String::new(),
        },
    )
}

fn delta(key: &str, text: &str) -> RuntimeEvent {
    RuntimeEvent::TextDelta {
        key: key.into(),
        delta: text.into(),
    }
}

fn tool(name: &str, input: Value, output: Option<Value>) -> ItemKind {
    ItemKind::ToolCall {
        tool_name: name.into(),
        input,
        output,
    }
}

#[test]
fn plain_turn_argv() {
    let mut expected: Vec<&str> = HEAD.to_vec();
    expected.extend([
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Bash",
        "--",
        "fix the bug",
    ]);
    assert_eq!(args(&request("fix the bug")), expected);
    assert_eq!(RtTwo.launch(&request("x")).stdin, None);
}

#[test]
fn resume_model_instructions_and_extra_args() {
    let mut req = request("again");
    req.resume = Some("9c12f7ef-25ee-41c6-8651-ee6569e441d7".into());
    req.model = Some("claude-opus-4-8".into());
    req.instructions = Some("Be terse.".into());
    req.extra_args = vec!["--add-dir".into(), "/data".into()];
    let mut expected: Vec<&str> = HEAD.to_vec();
    expected.extend([
        "--model",
        "claude-opus-4-8",
        "--resume=9c12f7ef-25ee-41c6-8651-ee6569e441d7",
        "--append-system-prompt",
        "Be terse.",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Bash",
        // Variadic `--add-dir` would take the prompt without the `--`.
        "--add-dir",
        "/data",
        "--",
        "again",
    ]);
    assert_eq!(args(&req), expected);
}

#[test]
fn mcp_servers_pass_env_var_names_only() {
    let mut req = request("call it");
    req.mcp_servers = vec![
        McpServer {
            name: "demo".into(),
            url: "http://127.0.0.1:9/mcp".into(),
            headers_from_env: vec![("Authorization".into(), "SVC_MCP_DEMO_AUTH".into())],
        },
        McpServer {
            name: "open".into(),
            url: "http://h/mcp".into(),
            headers_from_env: vec![],
        },
    ];
    let argv = args(&req);
    let at = argv.iter().position(|a| a == "--mcp-config").unwrap();
    let config: Value = serde_json::from_str(&argv[at + 1]).unwrap();
    assert_eq!(
        config,
        json!({"mcpServers": {
            "demo": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "${SVC_MCP_DEMO_AUTH}"}},
            "open": {"type": "http", "url": "http://h/mcp"}
        }})
    );
    // The variadic option is followed by another option, never by the prompt.
    assert!(argv[at + 2].starts_with("--"));
    assert_eq!(
        argv[argv.len() - 4..],
        [
            "--allowedTools",
            "Bash,mcp__demo,mcp__open",
            "--",
            "call it"
        ]
    );
    // The request carries no header values at all, so none can reach argv.
    assert!(!argv.iter().any(|a| a.contains("Bearer")));
}

#[test]
fn dash_prompt_follows_the_separator_and_huge_prompt_uses_stdin() {
    let argv = args(&request("--help me"));
    assert_eq!(argv[argv.len() - 2..], ["--", "--help me"]);
    let big = "x".repeat(MAX_ARGV_PROMPT + 1);
    let launch = RtTwo.launch(&request(&big));
    assert_eq!(launch.stdin.as_deref(), Some(big.as_str()));
    assert!(!launch.args.contains(&"--".to_owned()));
    assert!(!launch.args.contains(&big));
}

#[test]
fn echo_streams_into_the_message_key() {
    assert_eq!(
        run(fixture!("echo")),
        [
            thread("a6aea0c9-600e-4606-94cc-0070a29ec5cf"),
            opened("msg_fake_01_0001:0"),
            delta("msg_fake_01_0001:0", "echo (turn 1): hello there"),
            message("msg_fake_01_0001:0", "echo (turn 1): hello there"),
            done(4, 0, 7)
        ]
    );
}

#[test]
fn stream_deltas_share_one_key() {
    let events = run(fixture!("stream"));
    let key = "msg_fake_01_0001:0";
    assert_eq!(events[1], opened(key));
    assert_eq!(
        events[2..7],
        [
            "echo (tur",
            "n 1): str",
            "eamed [[s",
            "cenario:s",
            "tream:0]]"
        ]
        .map(|d| delta(key, d))
    );
    assert_eq!(
        events[7],
        message(key, "echo (turn 1): streamed [[scenario:stream:0]]")
    );
}

#[test]
fn resume_keeps_the_session_id() {
    assert_eq!(
        run(fixture!("resume"))[..4],
        [
            thread("a6aea0c9-600e-4606-94cc-0070a29ec5cf"),
            opened("msg_fake_03_0001:0"),
            delta("msg_fake_03_0001:0", "echo (turn 3): again"),
            message("msg_fake_03_0001:0", "echo (turn 3): again")
        ]
    );
}

#[test]
fn reasoning_then_text_in_one_message() {
    assert_eq!(
        run(fixture!("reasoning"))[1..],
        [
            completed(
                "msg_fake_01_0001:0",
                ItemKind::Reasoning {
                    text: "Thinking about: think [[scenario:reasoning]]".into()
                },
                ItemStatus::Completed
            ),
            opened("msg_fake_01_0001:1"),
            delta(
                "msg_fake_01_0001:1",
                "echo (turn 1): think [[scenario:reasoning]]"
            ),
            message(
                "msg_fake_01_0001:1",
                "echo (turn 1): think [[scenario:reasoning]]"
            ),
            done(8, 0, 22)
        ]
    );
}

#[test]
fn bash_is_a_command_execution() {
    let key = "toolu_fake_01_0001";
    assert_eq!(
        run(fixture!("command"))[1..3],
        [
            started(key, command("echo hi", "", None)),
            completed(
                key,
                command("echo hi", "hi", Some(0)),
                ItemStatus::Completed
            )
        ]
    );
    assert_eq!(
        run(fixture!("command_fail"))[2],
        completed(key, command("false", "", Some(1)), ItemStatus::Failed)
    );
}

#[test]
fn write_also_reports_a_file_change() {
    let input = json!({"file_path": "/tmp/adcap/ws/notes.txt", "content": "write notes [[scenario:file_change:notes.txt]]\n"});
    let events = run(fixture!("file_change"));
    assert_eq!(
        events[1],
        started("toolu_fake_01_0001", tool("Write", input, None))
    );
    assert_eq!(shape(&events[2..3]), ["ItemCompleted(ToolCall,Completed)"]);
    // The fake had written the same file before, so Write reported an update.
    assert_eq!(
        events[3],
        completed(
            "toolu_fake_01_0001:file",
            ItemKind::FileChange {
                changes: vec![FileChange {
                    path: "/tmp/adcap/ws/notes.txt".into(),
                    kind: "update".into()
                }]
            },
            ItemStatus::Completed
        )
    );
}

#[test]
fn failed_edit_reports_no_file_change() {
    let output = [
        r#"{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/w/a.rs","old_string":"x","new_string":"y"}}]},"parent_tool_use_id":null}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"String not found","is_error":true}]},"parent_tool_use_id":null}"#,
    ]
    .join("\n");
    assert_eq!(
        shape(&run(&output)),
        [
            "ItemStarted(ToolCall,InProgress)",
            "ItemCompleted(ToolCall,Failed)"
        ]
    );
}

#[test]
fn mcp_tool_is_an_mcp_call() {
    let arguments = json!({"text": "call it [[scenario:mcp:demo/echo]]"});
    let mcp = |output| ItemKind::McpCall {
        server: "demo".into(),
        tool: "echo".into(),
        arguments: arguments.clone(),
        output,
        error: None,
    };
    let result = json!({"content": [{"type": "text", "text": "echoed {\"text\": \"call it [[scenario:mcp:demo/echo]]\"}"}]});
    assert_eq!(
        run(fixture!("mcp"))[1..3],
        [
            started("toolu_fake_01_0001", mcp(None)),
            completed(
                "toolu_fake_01_0001",
                mcp(Some(result)),
                ItemStatus::Completed
            )
        ]
    );
}

#[test]
fn other_tools_are_tool_calls() {
    let input = json!({"file_path": "README.md"});
    assert_eq!(
        run(fixture!("tool"))[1..3],
        [
            started("toolu_fake_01_0001", tool("Read", input.clone(), None)),
            completed(
                "toolu_fake_01_0001",
                tool("Read", input, Some(json!("1\t# fake file\n"))),
                ItemStatus::Completed
            )
        ]
    );
    assert_eq!(
        shape(&run(fixture!("todo"))[1..3]),
        [
            "ItemStarted(ToolCall,InProgress)",
            "ItemCompleted(ToolCall,Completed)"
        ]
    );
}

#[test]
fn subagent_internals_stay_out() {
    let events = run(fixture!("subagent"));
    assert_eq!(
        shape(&events),
        [
            "ThreadStarted",
            "ItemStarted(SubagentCall,InProgress)",
            "SubagentStarted",
            "ItemCompleted(SubagentCall,Completed)",
            "ItemStarted(Message,InProgress)",
            "TextDelta",
            "ItemCompleted(Message,Completed)",
            "TurnCompleted"
        ]
    );
    assert_eq!(
        events[2],
        RuntimeEvent::SubagentStarted {
            id: "toolu_fake_01_0001".into(),
            description: Some("Inspect files".into())
        }
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
fn api_failure_is_one_turn_failed_without_a_reply() {
    assert_eq!(
        run(fixture!("fail")),
        [
            thread("a38a2eaa-d0f7-42c8-b22d-48e087e50f3b"),
            RuntimeEvent::TurnFailed {
                message: "model refused".into()
            }
        ]
    );
}

#[test]
fn error_result_without_text_joins_its_errors() {
    let events = run(fixture!("resume_unknown"));
    let [RuntimeEvent::TurnFailed { message }] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert!(
        message.starts_with("Error: --resume requires a valid session ID"),
        "{message}"
    );
    let line =
        r#"{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["a","b"]}"#;
    assert_eq!(
        run(line),
        [RuntimeEvent::TurnFailed {
            message: "a; b".into()
        }]
    );
}

#[test]
fn a_compaction_that_did_not_happen_fails_the_turn() {
    // Captured from Claude Code 2.1.197 (which refused one exchange): a failed status
    // line, and a `result` that still says success.
    assert_eq!(
        run(fixture!("compact_failed")),
        [
            thread("2dafdd81-9eee-4e25-a86a-fe57eef9226b"),
            RuntimeEvent::TurnFailed {
                message: "the conversation could not be compacted: Not enough messages to compact."
                    .into()
            }
        ]
    );
}

#[test]
fn a_compaction_carries_the_summary_the_model_wrote() {
    // Captured from Claude Code 2.1.332 compacting a one-exchange conversation.
    let events = run(fixture!("compact_real"));
    assert_eq!(
        events,
        [
            thread("1a8f9bd5-6932-4311-853f-a10e74c9a8c2"),
            RuntimeEvent::Compacted,
            RuntimeEvent::ItemCompleted(RuntimeItem {
                key: "compact:summary".into(),
                kind: ItemKind::ToolCall {
                    tool_name: "compact".into(),
                    input: json!({"trigger": "manual", "pre_tokens": 19, "post_tokens": 2538, "cumulative_dropped_tokens": 0, "duration_ms": 284}),
                    output: Some(json!("Summary: we talked.")),
                },
                status: ItemStatus::Completed,
            }),
            done(0, 0, 0)
        ]
    );
}

#[test]
fn an_empty_session_has_nothing_to_compact() {
    // Captured from Claude Code 2.1.332: no boundary, a synthetic reply, and a `result`
    // that says success.
    let events = run(fixture!("compact_empty"));
    assert_eq!(
        events.last(),
        Some(&RuntimeEvent::TurnFailed {
            message: "the conversation could not be compacted: Error: No messages to compact"
                .into()
        }),
        "{events:?}"
    );
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
        [
            "ItemStarted(Message,InProgress)",
            "TextDelta",
            "ItemCompleted(Message,Completed)",
            "TurnCompleted"
        ]
    );
    for line in [
        "[1]",
        r#"{"type":"mystery"}"#,
        r#"{"type":"assistant"}"#,
        r#"{"type":"system","subtype":"init"}"#,
    ] {
        assert_eq!(
            run(line),
            [RuntimeEvent::Unparsed { line: line.into() }],
            "{line}"
        );
    }
    // A result for a tool_use never seen cannot complete anything.
    let orphan = r#"{"type":"user","message":{"content":[{"tool_use_id":"x","type":"tool_result","content":"?"}]},"parent_tool_use_id":null}"#;
    assert_eq!(shape(&run(orphan)), ["Unparsed"]);
}

#[test]
fn large_output() {
    let events = run(fixture!("large"));
    let RuntimeEvent::ItemCompleted(RuntimeItem {
        kind: ItemKind::Message { text },
        ..
    }) = &events[3]
    else {
        panic!("{events:?}");
    };
    assert_eq!(text.len(), 3000);
    let huge = "y".repeat(4 << 20);
    let line = json!({"type": "assistant", "message": {"id": "m", "content": [{"type": "text", "text": huge}]}, "parent_tool_use_id": null});
    assert_eq!(run(&line.to_string()), [message("m:0", &huge)]);
}

/// Captured from the real Claude Code 2.1.197 (against a mock Messages API and MCP server).
#[test]
fn real_cli_output_parses_like_the_fake() {
    let real = run(fixture!("real_tools"));
    assert_eq!(
        shape(&real),
        [
            "ThreadStarted",
            "ItemCompleted(Reasoning,Completed)",
            "ItemStarted(Message,InProgress)",
            "TextDelta",
            "TextDelta",
            "ItemCompleted(Message,Completed)",
            "ItemStarted(CommandExecution,InProgress)",
            "ItemCompleted(CommandExecution,Failed)",
            "ItemStarted(McpCall,InProgress)",
            "ItemCompleted(McpCall,Completed)",
            "ItemStarted(McpCall,InProgress)",
            "ItemCompleted(McpCall,Failed)",
            "ItemStarted(Message,InProgress)",
            "TextDelta",
            "TextDelta",
            "ItemCompleted(Message,Completed)",
            "TurnCompleted"
        ]
    );
    assert_eq!(
        real[2..6],
        [
            opened("msg_1:1"),
            delta("msg_1:1", "I'll r"),
            delta("msg_1:1", "un it."),
            message("msg_1:1", "I'll run it.")
        ]
    );
    assert_eq!(
        real[7],
        completed(
            "toolu_01",
            command("echo hi; exit 2", "hi", Some(2)),
            ItemStatus::Failed
        )
    );
    let ItemKind::McpCall { error, .. } = (match &real[11] {
        RuntimeEvent::ItemCompleted(item) => &item.kind,
        other => panic!("{other:?}"),
    }) else {
        panic!("{real:?}");
    };
    assert_eq!(error.as_deref(), Some("MCP error -32000: tool exploded"));
    assert_eq!(real[16], done(40, 0, 28));
    let fake: Vec<String> = [
        fixture!("reasoning"),
        fixture!("command_fail"),
        fixture!("mcp"),
    ]
    .iter()
    .flat_map(|f| shape(&run(f)))
    .collect();
    for kind in shape(&real)
        .iter()
        .filter(|k| !k.ends_with("(McpCall,Failed)"))
    {
        assert!(fake.contains(kind), "{kind} never comes from the fake");
    }
    assert_eq!(shape(&run(fixture!("real_subagent"))), {
        let mut fake = shape(&run(fixture!("subagent")));
        // Captured without partial messages: no text block is opened or streamed.
        fake.retain(|k| k != "TextDelta" && k != "ItemStarted(Message,InProgress)");
        fake
    });
}

/// The real CLI, run as root with the argv `launch` builds (permission mode included): the
/// shell command, the write and the MCP call all ran without a permission denial.
#[test]
fn real_cli_runs_tools_with_the_chosen_permission_mode() {
    let events = run(fixture!("real_permissions"));
    assert_eq!(
        shape(&events)
            .into_iter()
            .filter(|k| k != "TextDelta")
            .collect::<Vec<_>>(),
        [
            "ThreadStarted",
            "ItemStarted(Message,InProgress)",
            "ItemCompleted(Message,Completed)",
            "ItemStarted(CommandExecution,InProgress)",
            "ItemCompleted(CommandExecution,Completed)",
            "ItemStarted(ToolCall,InProgress)",
            "ItemCompleted(ToolCall,Completed)",
            "ItemCompleted(FileChange,Completed)",
            "ItemStarted(McpCall,InProgress)",
            "ItemCompleted(McpCall,Completed)",
            "ItemStarted(Message,InProgress)",
            "ItemCompleted(Message,Completed)",
            "TurnCompleted"
        ]
    );
    let find = |key: &str| {
        events.iter().rev().find_map(|e| match e {
            RuntimeEvent::ItemCompleted(item) if item.key == key => Some(item.kind.clone()),
            _ => None,
        })
    };
    assert_eq!(
        find("toolu_01"),
        Some(command("echo hi from bash", "hi from bash", Some(0)))
    );
    assert_eq!(
        find("toolu_02:file"),
        Some(ItemKind::FileChange {
            changes: vec![FileChange {
                path: "/tmp/adcap/cws/new.txt".into(),
                kind: "add".into()
            }]
        })
    );
    // The text and the tool_use share message msg_1: blocks 0 and 1.
    assert!(find("msg_1:0").is_some());
}
