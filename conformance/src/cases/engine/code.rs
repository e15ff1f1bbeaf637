//! Code runs and code contexts (spec 4.4): a snippet run to completion, and
//! contexts that keep their interpreter's state between runs until restarted.

use super::support::{delete, error_snapshot, expect_error, get, post, sandbox, sb, snapshot};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context as _, anyhow, ensure};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/code/001",
            spec: "POST .../code/run `{code}` runs it (python3 by default) and answers `{stdout, stderr, exit_code, timed_out, duration_ms}`; `envs` are in its environment.",
            profile: &profiles::LOCAL,
            tags: ["feature:code"],
            endpoints: ["code_run"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let out = code(&ctx, &id, &json!({"code": "import sys\nprint(6 * 7)\nprint('warn', file=sys.stderr)"})).await?;
                let mut keys: Vec<&str> = out.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
                keys.sort_unstable();
                ensure!(keys == ["duration_ms", "exit_code", "stderr", "stdout", "timed_out"], "{out}");
                ensure!(out["stdout"] == "42\n" && out["stderr"] == "warn\n" && out["exit_code"] == 0 && out["timed_out"] == false, "{out}");
                ensure!(out["duration_ms"].is_u64(), "`duration_ms` is whole milliseconds: {out}");
                snapshot(&ctx, "engine__code__run", &out)?;
                let out = code(&ctx, &id, &json!({"code": "import os\nprint(os.environ['GIVEN'])", "envs": {"GIVEN": "yes"}})).await?;
                ensure!(out["stdout"] == "yes\n", "{out}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/code/002",
            spec: "A snippet's failure is its answer, not an error: its exit code and stderr; past its `timeout` it is ended with `timed_out: true` and `exit_code: null`; `timeout: 0`, no `code`, an unknown field or an unknown language is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:code"],
            endpoints: ["code_run"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let out = code(&ctx, &id, &json!({"code": "import sys\nsys.exit(3)"})).await?;
                ensure!(out["exit_code"] == 3 && out["timed_out"] == false, "{out}");
                let out = code(&ctx, &id, &json!({"code": "raise ValueError('boom')"})).await?;
                ensure!(out["exit_code"] == 1 && out["stderr"].as_str().is_some_and(|e| e.contains("ValueError: boom")), "{out}");
                let began = Instant::now();
                let out = code(&ctx, &id, &json!({"code": "import time\nprint('before', flush=True)\ntime.sleep(30)", "timeout": 1})).await?;
                ensure!(began.elapsed() < Duration::from_secs(10), "answered {:?} after the start", began.elapsed());
                ensure!(out["timed_out"] == true && out["exit_code"].is_null(), "{out}");
                for bad in [json!({"code": "1", "timeout": 0}), json!({}), json!({"code": "1", "colour": "red"}), json!({"code": "1", "language": "no-such-language"})] {
                    let resp = post(&ctx, &sb(&id, "/code/run"), &bad).await?;
                    expect_error(&resp, 400, "E4001").with_context(|| format!("body {bad}"))?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/code/003",
            spec: "POST .../code/contexts answers 201 `{context_id, language, cwd, created_at}`; GET .../code/contexts answers `{contexts: [...]}` holding it; a context keeps its interpreter's state between runs that name it, and a run without it does not see that state.",
            profile: &profiles::LOCAL,
            tags: ["feature:code", "feature:code_contexts"],
            endpoints: ["code_contexts_create", "code_contexts_list", "code_run"],
            codes: [],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let resp = post(&ctx, &sb(&id, "/code/contexts"), &json!({})).await?;
                resp.expect_status(201)?;
                let record = resp.json()?;
                check_context(&record)?;
                ensure!(record["language"] == "python3", "python3 by default: {record}");
                snapshot(&ctx, "engine__code__context", &record)?;
                let cid = record["context_id"].as_str().unwrap_or_default().to_owned();
                let resp = get(&ctx, &sb(&id, "/code/contexts")).await?;
                resp.expect_status(200)?;
                let list = resp.json()?;
                ensure!(list.as_object().is_some_and(|m| m.len() == 1), "the answer is `{{contexts}}`: {list}");
                ensure!(list["contexts"].as_array().is_some_and(|l| l.contains(&record)), "the list holds the record: {list}");
                let set = code(&ctx, &id, &json!({"code": "x = 41", "context_id": cid})).await?;
                ensure!(set["exit_code"] == 0, "{set}");
                let got = code(&ctx, &id, &json!({"code": "print(x + 1)", "context_id": cid})).await?;
                ensure!(got["stdout"] == "42\n", "the context kept `x`: {got}");
                let alone = code(&ctx, &id, &json!({"code": "print(x)"})).await?;
                ensure!(alone["exit_code"] != 0 && alone["stderr"].as_str().is_some_and(|e| e.contains("NameError")), "a run without the context does not see it: {alone}");
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/code/004",
            spec: "POST .../code/contexts/:context_id/restart restarts the interpreter (its state is lost) and answers the record; DELETE .../code/contexts/:context_id answers `{context_id, deleted: true}`; after it, or for an id never made, every context route is 404 `E2006`.",
            profile: &profiles::LOCAL,
            tags: ["feature:code", "feature:code_contexts"],
            endpoints: ["code_contexts_restart", "code_contexts_delete", "code_run"],
            codes: ["E2006"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let record = post(&ctx, &sb(&id, "/code/contexts"), &json!({"language": "python3"})).await?.json()?;
                let cid = record["context_id"].as_str().ok_or_else(|| anyhow!("no context_id: {record}"))?.to_owned();
                code(&ctx, &id, &json!({"code": "y = 'kept'", "context_id": cid})).await?;
                let resp = post(&ctx, &sb(&id, &format!("/code/contexts/{cid}/restart")), &json!({})).await?;
                resp.expect_status(200)?;
                let restarted = resp.json()?;
                check_context(&restarted)?;
                ensure!(restarted["context_id"] == cid.as_str(), "{restarted}");
                let lost = code(&ctx, &id, &json!({"code": "print(y)", "context_id": cid})).await?;
                ensure!(lost["exit_code"] != 0 && lost["stderr"].as_str().is_some_and(|e| e.contains("NameError")), "a restart loses the state: {lost}");
                let resp = delete(&ctx, &sb(&id, &format!("/code/contexts/{cid}"))).await?;
                resp.expect_status(200)?;
                let deleted = resp.json()?;
                ensure!(deleted == json!({"context_id": cid, "deleted": true}), "{deleted}");
                snapshot(&ctx, "engine__code__context_deleted", &deleted)?;
                let list = get(&ctx, &sb(&id, "/code/contexts")).await?.json()?;
                ensure!(list["contexts"].as_array().is_some_and(|l| l.iter().all(|c| c["context_id"] != cid.as_str())), "{list}");
                for target in [cid.as_str(), "ctx-nobody-made-this"] {
                    let run = post(&ctx, &sb(&id, "/code/run"), &json!({"code": "1", "context_id": target})).await?;
                    let body = expect_error(&run, 404, "E2006")?;
                    if target != cid {
                        error_snapshot(&ctx, "engine__code__context_not_found", &body, &[])?;
                    }
                    expect_error(&post(&ctx, &sb(&id, &format!("/code/contexts/{target}/restart")), &json!({})).await?, 404, "E2006")?;
                    expect_error(&delete(&ctx, &sb(&id, &format!("/code/contexts/{target}"))).await?, 404, "E2006")?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/code/005",
            spec: "A context create with an unknown field or language is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:code_contexts"],
            endpoints: ["code_contexts_create"],
            codes: ["E4001"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                for bad in [json!({"colour": "red"}), json!({"language": "no-such-language"})] {
                    expect_error(&post(&ctx, &sb(&id, "/code/contexts"), &bad).await?, 400, "E4001").with_context(|| format!("body {bad}"))?;
                }
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/code/006",
            spec: "`language` picks the interpreter (`bash` among them); a context's `cwd` (relative to the sandbox) is where its code runs, and one out of the sandbox is 400 `E4005`; a run naming another language than its context's, or `envs` naming something that is not a variable, is 400 `E4001`. `envs` with a `context_id` are that run's only: set before its code (over a variable the context had), undone after it.",
            profile: &profiles::LOCAL,
            tags: ["feature:code", "feature:code_contexts", "feature:files"],
            endpoints: ["code_run", "code_contexts_create"],
            codes: ["E4001", "E4005"],
            run: |ctx| async move {
                let id = sandbox(&ctx).await?;
                let out = code(&ctx, &id, &json!({"code": "echo $((40 + 2)) ${BASH_VERSION:+bash}", "language": "bash"})).await?;
                ensure!(out["stdout"] == "42 bash\n" && out["exit_code"] == 0, "{out}");
                post(&ctx, &sb(&id, "/files/mkdir"), &json!({"path": "work/ctx", "parents": true})).await?.expect_status(200)?;
                let resp = post(&ctx, &sb(&id, "/code/contexts"), &json!({"cwd": "work/ctx"})).await?;
                resp.expect_status(201)?;
                let record = resp.json()?;
                check_context(&record)?;
                ensure!(record["cwd"].as_str().is_some_and(|c| c.ends_with("/work/ctx")), "{record}");
                let cid = record["context_id"].as_str().unwrap_or_default().to_owned();
                let here = code(&ctx, &id, &json!({"code": "import os\nprint(os.getcwd())", "context_id": cid})).await?;
                ensure!(here["stdout"].as_str().is_some_and(|o| o.trim_end().ends_with("/work/ctx")), "{here}");
                let with = code(&ctx, &id, &json!({"code": "import os\nprint(os.environ['MARK'], os.environ['HOME'] == 'over')", "context_id": cid, "envs": {"MARK": "it's \"one\"", "HOME": "over"}})).await?;
                ensure!(with["stdout"] == "it's \"one\" True\n", "a run's envs reach its code: {with}");
                let after = code(&ctx, &id, &json!({"code": "import os\nprint('MARK' in os.environ, os.environ['HOME'] != 'over')", "context_id": cid})).await?;
                ensure!(after["stdout"] == "False True\n", "a run's envs are undone after it: {after}");
                let shell = post(&ctx, &sb(&id, "/code/contexts"), &json!({"language": "bash"})).await?.json()?;
                let sid = shell["context_id"].as_str().unwrap_or_default().to_owned();
                let with = code(&ctx, &id, &json!({"code": "echo \"[$MARK]\"", "context_id": sid, "envs": {"MARK": "a 'b' $c"}})).await?;
                ensure!(with["stdout"] == "[a 'b' $c]\n", "a shell context's run gets its envs as given: {with}");
                let after = code(&ctx, &id, &json!({"code": "echo \"[${MARK-unset}]\"", "context_id": sid})).await?;
                ensure!(after["stdout"] == "[unset]\n", "and loses them after: {after}");
                for bad in [json!({"code": "1", "context_id": cid, "language": "bash"}), json!({"code": "1", "context_id": cid, "envs": {"A B": "b"}})] {
                    expect_error(&post(&ctx, &sb(&id, "/code/run"), &bad).await?, 400, "E4001").with_context(|| format!("body {bad}"))?;
                }
                expect_error(&post(&ctx, &sb(&id, "/code/contexts"), &json!({"cwd": "../../etc"})).await?, 400, "E4005")?;
                super::support::kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}

/// `code/run` with `body`, which must answer 200.
async fn code(ctx: &Ctx, id: &str, body: &Value) -> anyhow::Result<Value> {
    let resp = post(ctx, &sb(id, "/code/run"), body).await?;
    resp.expect_status(200)?;
    resp.json()
}

fn check_context(r: &Value) -> anyhow::Result<()> {
    let mut keys: Vec<&str> = r
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    ensure!(
        keys == ["context_id", "created_at", "cwd", "language"],
        "a context is {{context_id, language, cwd, created_at}}: {r}"
    );
    ensure!(
        r["context_id"].as_str().is_some_and(|s| !s.is_empty())
            && r["cwd"].as_str().is_some_and(|s| !s.is_empty())
            && r["created_at"].as_str().is_some_and(super::support::is_utc),
        "{r}"
    );
    Ok(())
}
