//! Items mapping of runtime output, per fake scenario (issue 3). `mcp_call` is
//! not covered: a session cannot name an MCP server yet (`agent.tools` must be []).

use super::support::sessions::{Api, on_each_runtime, assistant_text, check_item, of_type, pre_redact};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};

fn one<'a>(items: &'a [Value], ty: &str, rt: &str) -> anyhow::Result<&'a Value> {
    let found = of_type(items, ty);
    ensure!(found.len() == 1, "{rt}: expected one {ty} item: {items:?}");
    Ok(found[0])
}

async fn reasoning(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (_, turn, items) = api.run_turn(rt, "[[scenario:reasoning]] ponder").await?;
    ensure!(turn["status"] == "completed", "{rt}: {turn}");
    let r = one(&items, "reasoning", rt)?;
    check_item(r)?;
    ensure!(r["status"] == "completed", "{rt}: {r}");
    let summary = r["summary"]
        .as_array()
        .ok_or_else(|| anyhow!("{rt}: summary {r}"))?;
    ensure!(
        summary.len() == 1 && summary[0]["type"] == "summary_text",
        "{rt}: {r}"
    );
    let text = summary[0]["text"].as_str().unwrap_or_default();
    ensure!(
        text.contains("Thinking about") && text.contains("ponder"),
        "{rt}: reasoning text {text:?}"
    );
    let pos = |ty: &str, role: Option<&str>| {
        items
            .iter()
            .position(|i| i["type"] == ty && role.is_none_or(|r| i["role"] == r))
    };
    ensure!(
        pos("reasoning", None) < pos("message", Some("assistant")),
        "{rt}: reasoning comes before the reply: {items:?}"
    );
    Ok(())
}

async fn command(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (_, _, items) = api.run_turn(rt, "[[scenario:command]] run it").await?;
    let c = one(&items, "command_execution", rt)?;
    check_item(c)?;
    let cmd = c["command"].as_str().unwrap_or_default();
    ensure!(cmd.contains("echo hi"), "{rt}: command {c}");
    ensure!(
        // Claude's Bash tool_result drops the trailing newline; codex keeps it.
        c["exit_code"] == 0
            && c["output"].as_str().map(str::trim_end) == Some("hi")
            && c["status"] == "completed",
        "{rt}: {c}"
    );
    let (_, turn, items) = api.run_turn(rt, "[[scenario:command_fail]] run it").await?;
    ensure!(
        turn["status"] == "completed",
        "a failed command does not fail the turn: {turn}"
    );
    let c = one(&items, "command_execution", rt)?;
    ensure!(
        c["command"].as_str().unwrap_or_default().contains("false"),
        "{rt}: {c}"
    );
    ensure!(c["exit_code"] == 1 && c["status"] == "failed", "{rt}: {c}");
    Ok(())
}

async fn tool(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (_, _, items) = api.run_turn(rt, "[[scenario:tool]] read").await?;
    if rt == "rt-two" {
        let t = one(&items, "tool_call", rt)?;
        check_item(t)?;
        ensure!(t["tool_name"] == "Read", "{rt}: {t}");
        ensure!(
            t["arguments"] == json!({"file_path": "README.md"}),
            "{rt}: {t}"
        );
        ensure!(
            t["status"] == "completed" && !t["output"].is_null(),
            "{rt}: {t}"
        );
    } else {
        // Codex has no generic tool item: the fake prints a command execution.
        let c = one(&items, "command_execution", rt)?;
        ensure!(
            c["command"].as_str().unwrap_or_default().contains("Read"),
            "{rt}: {c}"
        );
    }
    ensure!(
        !assistant_text(&items).is_empty(),
        "{rt}: a reply follows the tool"
    );
    Ok(())
}

async fn snapshot(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let (_, _, items) = api
        .run_turn(rt, "[[scenario:reasoning]] [[scenario:command]] snapshot")
        .await?;
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| i["type"].as_str().unwrap_or_default())
        .collect();
    ensure!(
        kinds == ["message", "reasoning", "command_execution", "message"],
        "{rt}: item types {kinds:?}"
    );
    ctx.snapshot(
        &format!("agents__items__reasoning_command_{}", rt.replace('-', "_")),
        &pre_redact(&json!(items))?,
    )
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/items/001",
            spec: "Reasoning (codex reasoning, claude thinking) is a `reasoning` item with one summary_text, before the reply (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, reasoning).await
            },
        },
        case! {
            id: "agents/items/002",
            spec: "A command is a `command_execution` item with command, exit_code, output and status completed|failed (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, command).await
            },
        },
        case! {
            id: "agents/items/003",
            spec: "Other tools are `tool_call` items with tool_name, arguments and output (rt-two); rt-one's fake shows them as commands.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, tool).await
            },
        },
        case! {
            id: "agents/items/004",
            spec: "A codex file change is a `tool_call` item with tool_name `file_change`.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let (_, _, items) = api.run_turn("rt-one", "[[scenario:file_change:items-004/f.txt]] write").await?;
                let calls = of_type(&items, "tool_call");
                ensure!(
                    calls.len() == 1 && calls[0]["tool_name"] == "file_change" && calls[0]["status"] == "completed",
                    "file_change item: {items:?}"
                );
                ensure!(calls[0]["arguments"].is_object(), "arguments: {}", calls[0]);
                Ok(())
            },
        },
        case! {
            id: "agents/items/005",
            spec: "Snapshot of the items of a reasoning + command turn, per runtime.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, snapshot).await
            },
        },
    ]
}
