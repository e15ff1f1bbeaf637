//! POST /code/run and GET /code/languages: runs, contexts that keep state, the allowed
//! languages, time limits, output that is not UTF-8, the guards.

use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::{Context as _, ensure};
use base64::Engine as _;
use serde_json::{Value, json};

async fn run(ctx: &Ctx, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/code/run", body)).await
}

/// A run's answer, `duration_ms` checked to be a whole number (the snapshot redacts it).
fn shaped(body: &Value) -> anyhow::Result<Value> {
    ensure!(
        body["duration_ms"].is_u64(),
        "duration_ms is a whole number: {body}"
    );
    Ok(body.clone())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "dev_tools/code/001",
            spec: "code_run: `POST /code/run {code, language}` runs the snippet and answers `{stdout, stderr, exit_code, duration_ms, timed_out}`, for python3, bash and sh; without `context_id` nothing carries over to the next run.",
            profile: &profiles::DEV_TOOLS,
            tags: [],
            endpoints: ["code_run"],
            codes: [],
            run: |ctx| async move {
                let resp = run(&ctx, &json!({"language": "python3", "code": "import sys\nx = 6 * 7\nprint(x)\nprint('note', file=sys.stderr)"})).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["stdout"] == "42\n" && body["stderr"] == "note\n" && body["exit_code"] == 0 && body["timed_out"] == false, "{body}");
                ctx.snapshot("dev_tools__code__run", &shaped(&body)?)?;
                for (language, code) in [("bash", "echo out; echo err >&2; exit 3"), ("sh", "echo out; echo err >&2; exit 3")] {
                    let body = run(&ctx, &json!({"language": language, "code": code})).await?.json()?;
                    ensure!(body["stdout"] == "out\n" && body["stderr"] == "err\n" && body["exit_code"] == 3, "{language}: {body}");
                }
                let body = run(&ctx, &json!({"language": "python3", "code": "print('x' in globals())"})).await?.json()?;
                ensure!(body["stdout"] == "False\n", "no state without a context: {body}");
                Ok(())
            },
        },
        case! {
            id: "dev_tools/code/002",
            spec: "code_run: a `context_id` keeps interpreter state between runs of the same language: a variable set in one run is readable in the next; another context id does not see it.",
            profile: &profiles::DEV_TOOLS,
            tags: [],
            endpoints: ["code_run"],
            codes: [],
            run: |ctx| async move {
                for (language, set, read) in [
                    ("python3", "counter = 41", "counter += 1\nprint(counter)"),
                    ("bash", "counter=41", "counter=$((counter + 1)); echo $counter"),
                    ("sh", "counter=41", "counter=$((counter + 1)); echo $counter"),
                ] {
                    let first = run(&ctx, &json!({"language": language, "code": set, "context_id": "conformance-ctx"})).await?;
                    first.expect_status(200)?;
                    ensure!(first.json()?["exit_code"] == 0, "{language}: {}", first.text());
                    let second = run(&ctx, &json!({"language": language, "code": read, "context_id": "conformance-ctx"})).await?.json()?;
                    ensure!(second["stdout"] == "42\n", "{language}: state kept: {second}");
                    let other = run(&ctx, &json!({"language": language, "code": read, "context_id": "another-ctx"})).await?.json()?;
                    ensure!(other["stdout"] != "42\n", "{language}: another context: {other}");
                    if language == "python3" {
                        ctx.snapshot("dev_tools__code__context", &shaped(&second)?)?;
                    }
                }
                let failed = run(&ctx, &json!({"language": "python3", "code": "raise ValueError('boom')", "context_id": "conformance-ctx"})).await?.json()?;
                ensure!(failed["exit_code"] == 1 && failed["stderr"].as_str().is_some_and(|e| e.contains("ValueError: boom")), "{failed}");
                let kept = run(&ctx, &json!({"language": "python3", "code": "print(counter)", "context_id": "conformance-ctx"})).await?.json()?;
                ensure!(kept["stdout"] == "42\n", "an error keeps the state: {kept}");
                Ok(())
            },
        },
        case! {
            id: "dev_tools/code/003",
            spec: "code_run: a language not in `params.languages` (configured by `dev_tools.languages`) is 403 `language_not_allowed`, an unknown one too; `/capabilities` lists the configured languages under `params`.",
            profile: &profiles::DEV_TOOLS,
            tags: [],
            endpoints: ["code_run", "capabilities"],
            codes: ["language_not_allowed"],
            run: |ctx| async move {
                for language in ["node", "ruby", "Python3"] {
                    let resp = run(&ctx, &json!({"language": language, "code": "1"})).await?;
                    let err = resp.expect_error(403, "language_not_allowed").with_context(|| language.to_owned())?;
                    ensure!(err["param"] == "language", "{err}");
                }
                let resp = run(&ctx, &json!({"language": "node", "code": "1"})).await?;
                ctx.snapshot("dev_tools__code__language_not_allowed", &resp.json()?)?;
                let caps = ctx.send(ctx.get("/capabilities")).await?.json()?;
                let params = &caps["endpoints"]["code_run"]["params"];
                ensure!(*params == json!({"languages": ["python3", "bash", "sh"]}), "{params}");
                Ok(())
            },
        },
        case! {
            id: "dev_tools/code/004",
            spec: "code_run: a run past `timeout` is stopped with `timed_out: true` and `exit_code` null, its output so far kept; output that is not UTF-8 comes as `stdout_b64` beside the lossy text.",
            profile: &profiles::DEV_TOOLS,
            tags: [],
            endpoints: ["code_run"],
            codes: [],
            run: |ctx| async move {
                for context in [None, Some("slow-ctx")] {
                    let started = std::time::Instant::now();
                    let mut body = json!({"language": "python3", "code": "import time\nprint('before', flush=True)\ntime.sleep(60)", "timeout": 3});
                    if let Some(id) = context {
                        body["context_id"] = json!(id);
                    }
                    let answer = run(&ctx, &body).await?.json()?;
                    ensure!(answer["timed_out"] == true && answer["exit_code"].is_null() && answer["stdout"] == "before\n", "{context:?}: {answer}");
                    ensure!(started.elapsed() < std::time::Duration::from_secs(10), "answered in time");
                }
                let answer = run(&ctx, &json!({"language": "bash", "code": "printf 'a\\377b'"})).await?.json()?;
                let bytes = base64::engine::general_purpose::STANDARD.decode(answer["stdout_b64"].as_str().unwrap_or_default())?;
                ensure!(bytes == b"a\xffb", "{answer}");
                Ok(())
            },
        },
        case! {
            id: "dev_tools/code/005",
            spec: "code_run: the variable guards judge `env` (`PATH` is 403 `env_var_denied`, a malformed name 400 `env_invalid`), and bad bodies are 400 `invalid_request`: no `code` or `language`, a `timeout` out of range, a malformed `context_id`, an unknown member.",
            profile: &profiles::DEV_TOOLS,
            tags: [],
            endpoints: ["code_run"],
            codes: ["env_var_denied", "env_invalid", "invalid_request"],
            run: |ctx| async move {
                for (body, status, code) in [
                    (json!({"language": "python3", "code": "1", "env": {"PATH": "/tmp"}}), 403, "env_var_denied"),
                    (json!({"language": "python3", "code": "1", "env": {"PYTHONPATH": "/tmp"}}), 403, "env_var_denied"),
                    (json!({"language": "python3", "code": "1", "env": {"A=B": "1"}}), 400, "env_invalid"),
                    (json!({"language": "python3"}), 400, "invalid_request"),
                    (json!({"code": "1"}), 400, "invalid_request"),
                    (json!({"language": "python3", "code": "1", "timeout": 0}), 400, "invalid_request"),
                    (json!({"language": "python3", "code": "1", "timeout": 3601}), 400, "invalid_request"),
                    (json!({"language": "python3", "code": "1", "context_id": "has space"}), 400, "invalid_request"),
                    (json!({"language": "python3", "code": "1", "cwd": "/"}), 400, "invalid_request"),
                ] {
                    run(&ctx, &body).await?.expect_error(status, code).with_context(|| body.to_string())?;
                }
                let resp = run(&ctx, &json!({"language": "python3", "code": "1", "env": {"PATH": "/tmp"}})).await?;
                ctx.snapshot("dev_tools__code__env_var_denied", &resp.json()?)?;
                let answer = run(&ctx, &json!({"language": "python3", "code": "import os; print(os.environ['APP_COLOR'])", "env": {"APP_COLOR": "teal"}})).await?.json()?;
                ensure!(answer["stdout"] == "teal\n", "the caller's env reaches the run: {answer}");
                Ok(())
            },
        },
        case! {
            id: "dev_tools/languages/001",
            spec: "code_languages: `GET /code/languages` answers `{languages: [{name, version, installed, allowed}]}` for python3, bash, sh and node; `allowed` follows `dev_tools.languages`.",
            profile: &profiles::DEV_TOOLS,
            tags: [],
            endpoints: ["code_languages"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.get("/code/languages")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let list = body["languages"].as_array().cloned().unwrap_or_default();
                let names: Vec<&str> = list.iter().filter_map(|l| l["name"].as_str()).collect();
                ensure!(names == ["python3", "bash", "sh", "node"], "{body}");
                let mut shapes = Vec::new();
                for l in &list {
                    ensure!(l["allowed"] == (l["name"] != "node"), "{l}");
                    ensure!(l["installed"].is_boolean() && (l["version"].is_string() || l["version"].is_null()), "{l}");
                    if l["name"] == "python3" {
                        ensure!(l["installed"] == true && l["version"].as_str().is_some_and(|v| v.starts_with("Python 3")), "{l}");
                    }
                    shapes.push(json!({"name": l["name"], "allowed": l["allowed"], "version": if l["version"].is_null() { "null" } else { "[version]" }}));
                }
                ctx.snapshot("dev_tools__languages", &json!(shapes))?;
                Ok(())
            },
        },
    ]
}
