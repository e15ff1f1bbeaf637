//! The code interpreter (port 49999) as `e2b-code-interpreter` uses it: `runCode` reads
//! `/execute`'s JSON lines into results, logs and an error; `createCodeContext`,
//! `listCodeContexts`, `restartCodeContext` and `removeCodeContext` call `/contexts`
//! (without a token, as the SDK does).

use super::support::{Front, Made};
use crate::{Case, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};

/// The JSON lines of a run, checked to end with `end_of_execution`.
async fn execute(front: &Front, made: &Made, body: Value) -> anyhow::Result<Vec<Value>> {
    let resp = front.ctx.send(front.code(Method::POST, made, "/execute").json(&body)).await?;
    ensure!(resp.status == 200, "/execute {body}: {} {}", resp.status, resp.text());
    let lines: Vec<Value> = resp.text().lines().filter(|l| !l.trim().is_empty()).map(serde_json::from_str).collect::<Result<_, _>>()?;
    ensure!(lines.last().is_some_and(|l| l["type"] == "end_of_execution"), "/execute {body}: no end_of_execution last: {lines:?}");
    Ok(lines)
}

/// A run of `/execute` read as its body streams: each JSON line with when it arrived.
async fn execute_live(front: &Front, made: &Made, body: Value) -> anyhow::Result<Vec<(Value, std::time::Instant)>> {
    use futures::StreamExt as _;
    let rb = front.code(Method::POST, made, "/execute").json(&body).timeout(std::time::Duration::from_secs(120));
    let (client, request) = rb.build_split();
    let resp = client.execute(request?).await?;
    ensure!(resp.status() == 200, "/execute {body}: {}", resp.status());
    let mut stream = resp.bytes_stream();
    let (mut buffer, mut lines) = (Vec::new(), Vec::new());
    while let Some(chunk) = stream.next().await {
        buffer.extend_from_slice(&chunk?);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if !line.iter().all(u8::is_ascii_whitespace) {
                lines.push((serde_json::from_slice::<Value>(&line)?, std::time::Instant::now()));
            }
        }
    }
    ensure!(lines.last().is_some_and(|(l, _)| l["type"] == "end_of_execution"), "/execute {body}: no end_of_execution last: {lines:?}");
    Ok(lines)
}

/// The lines of one `type`.
fn of<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

/// The text of the run's one main result, and that it had no error.
fn main_result(lines: &[Value]) -> anyhow::Result<String> {
    ensure!(of(lines, "error").is_empty(), "an error: {lines:?}");
    match of(lines, "result").as_slice() {
        [one] if one["is_main_result"] == true => one["text"].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no text: {one}")),
        other => anyhow::bail!("not one main result: {other:?}"),
    }
}

/// The run's error: its name, value and traceback.
fn error(lines: &[Value]) -> anyhow::Result<(String, String, String)> {
    match of(lines, "error").as_slice() {
        [one] => {
            let field = |f: &str| one[f].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no `{f}`: {one}"));
            Ok((field("name")?, field("value")?, field("traceback")?))
        }
        other => anyhow::bail!("not one error: {other:?} in {lines:?}"),
    }
}

/// The run's `execution_count`.
fn count(lines: &[Value]) -> anyhow::Result<u64> {
    of(lines, "number_of_executions").first().and_then(|l| l["execution_count"].as_u64()).ok_or_else(|| anyhow!("no execution_count: {lines:?}"))
}

/// The text of the run's `stdout` lines.
fn stdout(lines: &[Value]) -> String {
    of(lines, "stdout").iter().filter_map(|l| l["text"].as_str()).collect()
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "e2b/code/001",
            spec: "`POST /execute` answers a Python cell in JSON lines ending with `end_of_execution`: its last expression's `repr` as the main result `text`, its prints as `stdout` and `stderr`, an exception as one `error` with `name`, `value` and `traceback`, and `number_of_executions` counting the runs of the default context, whose state carries over; `language: bash` runs shell code.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_code_execute"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let first = execute(&front, &made, json!({"code": "x = 41\nx + 1"})).await?;
                ensure!(main_result(&first)? == "42" && stdout(&first).is_empty(), "{first:?}");
                let second = execute(&front, &made, json!({"code": "import sys\nprint('hi')\nprint('oops', file=sys.stderr)\n'x is %d' % x"})).await?;
                ensure!(main_result(&second)? == "'x is 41'", "the state carries over: {second:?}");
                ensure!(stdout(&second) == "hi\n", "{second:?}");
                ensure!(of(&second, "stderr").first().is_some_and(|l| l["text"] == "oops\n"), "{second:?}");
                ensure!(count(&second)? == count(&first)? + 1, "runs are counted: {first:?} {second:?}");
                let failed = execute(&front, &made, json!({"code": "print('before')\n1/0"})).await?;
                let (name, value, traceback) = error(&failed)?;
                ensure!(name == "ZeroDivisionError" && value == "division by zero" && traceback.contains("ZeroDivisionError"), "{failed:?}");
                ensure!(of(&failed, "result").is_empty() && stdout(&failed) == "before\n", "{failed:?}");
                let bash = execute(&front, &made, json!({"code": "echo from $((40 + 2))", "language": "bash"})).await?;
                ensure!(stdout(&bash) == "from 42\n" && of(&bash, "error").is_empty(), "{bash:?}");
                front.kill(&made).await?;
                Ok(())
            },
        },
        case! {
            id: "e2b/code/002",
            spec: "`POST /contexts {language, cwd}` answers `{id, language, cwd}`, `GET /contexts` lists it, and `/execute` with its `context_id` runs there with its own state (not the default context's); `POST /contexts/{id}/restart` (204) forgets that state and counts runs from one; `DELETE /contexts/{id}` (204) removes it from the list.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_code_contexts_create", "e2b_code_contexts_list", "e2b_code_contexts_restart", "e2b_code_contexts_delete", "e2b_code_execute"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                // The SDK sends no token on `/contexts`: neither does this case.
                let contexts = |method: Method, path: &str| front.code_as(method, &made.id, None, path).header("content-type", "application/json");
                let resp = ctx.send(contexts(Method::POST, "/contexts").body(json!({"language": "python", "cwd": "/tmp"}).to_string())).await?;
                ensure!(resp.status == 200, "POST /contexts: {} {}", resp.status, resp.text());
                let context = resp.json()?;
                let id = context["id"].as_str().filter(|i| !i.is_empty()).ok_or_else(|| anyhow!("no id: {context}"))?.to_owned();
                ensure!(context["language"] == "python" && context["cwd"] == "/tmp", "{context}");
                let listed = ctx.send(contexts(Method::GET, "/contexts")).await?.json()?;
                ensure!(listed.as_array().is_some_and(|all| all.iter().any(|c| c["id"] == id.as_str() && c["language"] == "python")), "not listed: {listed}");

                let here = execute(&front, &made, json!({"code": "import os\ny = 5\nos.getcwd()", "context_id": id})).await?;
                ensure!(main_result(&here)? == "'/tmp'", "runs in its cwd: {here:?}");
                let again = execute(&front, &made, json!({"code": "y * 2", "context_id": id})).await?;
                ensure!(main_result(&again)? == "10" && count(&again)? == 2, "its own state and count: {again:?}");
                let default = execute(&front, &made, json!({"code": "y"})).await?;
                ensure!(error(&default)?.0 == "NameError", "the default context has another state: {default:?}");

                let restarted = ctx.send(contexts(Method::POST, &format!("/contexts/{id}/restart"))).await?;
                ensure!(restarted.status == 204, "restart: {} {}", restarted.status, restarted.text());
                let after = execute(&front, &made, json!({"code": "y", "context_id": id})).await?;
                ensure!(error(&after)?.0 == "NameError" && count(&after)? == 1, "a restarted context starts afresh: {after:?}");

                let deleted = ctx.send(contexts(Method::DELETE, &format!("/contexts/{id}"))).await?;
                ensure!(deleted.status == 204, "delete: {} {}", deleted.status, deleted.text());
                let listed = ctx.send(contexts(Method::GET, "/contexts")).await?.json()?;
                ensure!(listed.as_array().is_some_and(|all| !all.iter().any(|c| c["id"] == id.as_str())), "still listed: {listed}");
                let gone = ctx.send(front.code(Method::POST, &made, "/execute").json(&json!({"code": "1", "context_id": id}))).await?;
                ensure!(gone.status == 404, "a run in a deleted context: {} {}", gone.status, gone.text());
                front.kill(&made).await?;
                Ok(())
            },
        },
        case! {
            id: "e2b/code/003",
            spec: "`POST /execute` streams: each `stdout` and `stderr` JSON line is sent as the code prints it, while the run goes on (a line printed before a 2 s sleep arrives more than 1.5 s before `end_of_execution`); the cell's marker lines never show in `stdout`.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_code_execute"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let code = "import sys, time\nprint('a')\nprint('e', file=sys.stderr)\ntime.sleep(2)\nprint('b')\n7";
                let lines = execute_live(&front, &made, json!({"code": code})).await?;
                let end = lines.last().map(|(_, at)| *at).ok_or_else(|| anyhow!("no lines"))?;
                let first = |kind: &str, text: &str| lines.iter().find(|(l, _)| l["type"] == kind && l["text"].as_str().is_some_and(|t| t.starts_with(text))).map(|(_, at)| *at);
                for (kind, text) in [("stdout", "a"), ("stderr", "e")] {
                    let at = first(kind, text).ok_or_else(|| anyhow!("no {kind} `{text}`: {lines:?}"))?;
                    ensure!(end.duration_since(at).as_millis() > 1500, "{kind} `{text}` came with the end of the run, not as printed: {lines:?}");
                }
                let all: Vec<Value> = lines.into_iter().map(|(l, _)| l).collect();
                ensure!(stdout(&all) == "a\nb\n", "stdout: {all:?}");
                ensure!(main_result(&all)? == "7", "{all:?}");
                front.kill(&made).await?;
                Ok(())
            },
        },
        case! {
            id: "e2b/code/004",
            spec: "A Python value is given in the formats of IPython's rich repr protocol: `_repr_html_` as `html`, `_repr_png_` as `png` (base64), `_repr_mimebundle_` by MIME type (others in `extra`), `text` its `repr` always; `display(obj)` gives a result with `is_main_result: false`, in the order of the cell's output, before the main result.",
            profile: &profiles::ENGINE,
            tags: [],
            endpoints: ["e2b_code_execute"],
            codes: [],
            run: |ctx| async move {
                let (front, made) = Front::with_sandbox(&ctx).await?;
                let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
                let code = format!(
                    "import base64\nclass Rich:\n    def __repr__(self): return 'Rich()'\n    def _repr_html_(self): return '<b>rich</b>'\n    def _repr_png_(self): return base64.b64decode('{png}')\n\
                     class Bundle:\n    def _repr_mimebundle_(self, include=None, exclude=None): return {{'text/plain': 'b', 'text/markdown': '*b*', 'application/x-thing': 1}}\n\
                     display(Bundle())\nprint('between')\nRich()"
                );
                let lines = execute(&front, &made, json!({"code": code})).await?;
                ensure!(of(&lines, "error").is_empty(), "{lines:?}");
                let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).filter(|k| *k == "result" || *k == "stdout").collect();
                ensure!(kinds == ["result", "stdout", "result"], "results in the order of the output: {lines:?}");
                let results = of(&lines, "result");
                let shown = json!({"type": "result", "text": "b", "markdown": "*b*", "extra": {"application/x-thing": 1}, "is_main_result": false});
                ensure!(*results[0] == shown, "display(Bundle()): {}", results[0]);
                let main = json!({"type": "result", "text": "Rich()", "html": "<b>rich</b>", "png": png, "is_main_result": true});
                ensure!(*results[1] == main, "Rich(): {}", results[1]);
                front.kill(&made).await?;
                Ok(())
            },
        },
    ]
}
