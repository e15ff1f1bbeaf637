//! Keeping the fakes honest: for each scenario both the fake and the real CLI run the same
//! script, started with the argv our adapters build, and their JSONL outputs must have the
//! same shape: the order of event (and item) types, and every field name with its value's
//! type. A CLI upgrade that changes its format fails here with a readable diff.

use super::sim::{ModelSim, Reply};
use super::{launch, real_bin};
use conformance::mcp_mock::McpMock;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use svc::server::agents::adapters::{Adapter, McpServer, RtOne, RtTwo, TurnRequest};

/// The fakes, built by `cargo build --workspace --bins` beside the test binary's target.
fn fake_bin() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_svc"));
    exe.parent().unwrap().to_path_buf()
}

const KEYED_BY_NAME: &[&str] = &["modelUsage"];

/// Values that are not part of a format: ids, times, counts, texts.
fn shape(value: &Value) -> Value {
    match value {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        // Elements are alike in these formats: the union of their shapes stands for all.
        Value::Array(list) => {
            let mut merged: BTreeMap<String, Value> = BTreeMap::new();
            for v in list {
                let s = shape(v);
                merged.insert(s.to_string(), s);
            }
            Value::Array(merged.into_values().collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    // Maps keyed by a name (model usage per model) have one shape per value.
                    if KEYED_BY_NAME.contains(&k.as_str()) {
                        let values: Map<String, Value> = v
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(_, inner)| ("<name>".to_owned(), shape(inner)))
                            .collect();
                        (k.clone(), Value::Object(values))
                    } else {
                        (k.clone(), shape(v))
                    }
                })
                .collect::<Map<String, Value>>(),
        ),
    }
}

/// A line's kind: its `type` (and `subtype`), and the type of the item or content it carries.
fn kind(line: &Value) -> String {
    let mut parts = vec![line["type"].as_str().unwrap_or("?").to_owned()];
    for key in ["subtype"] {
        if let Some(s) = line[key].as_str() {
            parts.push(s.to_owned());
        }
    }
    if let Some(t) = line["item"]["type"].as_str() {
        parts.push(t.to_owned());
    }
    if let Some(t) = line["event"]["type"].as_str() {
        parts.push(t.to_owned());
        if let Some(d) = line["event"]["delta"]["type"].as_str() {
            parts.push(d.to_owned());
        }
        if let Some(b) = line["event"]["content_block"]["type"].as_str() {
            parts.push(b.to_owned());
        }
    }
    if let Some(content) = line["message"]["content"].as_array() {
        for c in content {
            parts.push(c["type"].as_str().unwrap_or("?").to_owned());
        }
    }
    parts.join("/")
}

/// Lines in order, runs of the same kind collapsed (how many deltas a reply takes is the
/// model's choice), each kind with the union of its shapes.
fn outline(stdout: &str) -> (Vec<String>, BTreeMap<String, Value>) {
    let mut order: Vec<String> = Vec::new();
    let mut shapes: BTreeMap<String, Value> = BTreeMap::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let value: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let k = kind(&value);
        if order.last() != Some(&k) {
            order.push(k.clone());
        }
        let s = shape(&value);
        let entry = shapes.entry(k).or_insert_with(|| s.clone());
        merge(entry, &s);
    }
    (order, shapes)
}

fn merge(into: &mut Value, other: &Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, other) {
        for (k, v) in b {
            match a.get_mut(k) {
                Some(existing) => merge(existing, v),
                None => {
                    a.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// Every difference between two shapes, as `path: fake … real …` lines.
fn diff(path: &str, fake: &Value, real: &Value, out: &mut Vec<String>) {
    match (fake, real) {
        (Value::Object(f), Value::Object(r)) => {
            for (k, v) in r {
                match f.get(k) {
                    Some(fv) => diff(&format!("{path}.{k}"), fv, v, out),
                    None => out.push(format!("{path}.{k}: only the real CLI has it ({v})")),
                }
            }
            for k in f.keys().filter(|k| !r.contains_key(*k)) {
                out.push(format!("{path}.{k}: only the fake has it"));
            }
        }
        (Value::Array(f), Value::Array(r)) if !f.is_empty() && !r.is_empty() => {
            diff(&format!("{path}[]"), &f[0], &r[0], out)
        }
        (Value::Array(_), Value::Array(_)) => {}
        _ if fake != real => out.push(format!("{path}: fake {fake}, real {real}")),
        _ => {}
    }
}

struct Run {
    stdout: String,
    stderr: String,
}

/// Starts `program` with the argv the adapter builds for `request`, in `cwd`.
fn run(
    program: &Path,
    adapter: &dyn Adapter,
    request: &TurnRequest,
    env: &[(String, String)],
) -> Run {
    let launch = adapter.launch(request);
    let mut cmd = std::process::Command::new(program);
    cmd.args(&launch.args).current_dir(&request.cwd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The operator's arguments and variables the real CLI gets in the e2e tests.
fn real_launch(sim: &ModelSim, home: &Path, runtime: &str) -> (Vec<String>, Vec<(String, String)>) {
    let entry = &launch(&sim.url, home)[runtime];
    let text = |v: &Value| {
        v.as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| v.to_string())
    };
    let args = entry["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    let env = entry["env"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), text(v)))
        .collect();
    (args, env)
}

/// One scenario: the fake runs `fake_script`, the real CLI talks to a simulator replaying
/// `real_script`; the outlines must match.
/// A `WriteFile` with an empty `absolute` writes under the real CLI's working directory.
async fn compare(
    runtime: &str,
    prompt: &str,
    fake_script: Value,
    mut real_script: Vec<Reply>,
    mcp_url: Option<String>,
) {
    // Under target/tmp, not /tmp: codex refuses to set up its helpers under a temp dir.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = dir.path().join("homes");
    std::fs::create_dir_all(home.join("codex-home")).unwrap();
    std::fs::create_dir_all(home.join("claude-home")).unwrap();
    let adapter: &'static dyn Adapter = if runtime == "rt-one" { &RtOne } else { &RtTwo };
    let servers: Vec<McpServer> = mcp_url
        .iter()
        .map(|url| McpServer {
            name: "probe".into(),
            url: url.clone(),
            headers_from_env: vec![],
        })
        .collect();
    let request = |cwd: PathBuf, extra_args: Vec<String>| TurnRequest {
        prompt: prompt.to_owned(),
        cwd,
        mcp_servers: servers.clone(),
        extra_args,
        ..TurnRequest::default()
    };

    let fake_cwd = dir.path().join("fake");
    std::fs::create_dir_all(&fake_cwd).unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, fake_script.to_string()).unwrap();
    let fake_env = vec![
        ("RT_FAKE_SCRIPT".to_owned(), script.display().to_string()),
        (
            "RT_FAKE_STATE_DIR".to_owned(),
            dir.path().join("state").display().to_string(),
        ),
    ];
    let fake = run(
        &fake_bin().join(runtime),
        adapter,
        &request(fake_cwd, vec![]),
        &fake_env,
    );

    let real_cwd = dir.path().join("real");
    std::fs::create_dir_all(&real_cwd).unwrap();
    for reply in &mut real_script {
        if let Reply::WriteFile {
            relative, absolute, ..
        } = reply
            && absolute.is_empty()
        {
            *absolute = real_cwd.join(&*relative).display().to_string();
        }
    }
    let sim = ModelSim::start(real_script).await;
    let (args, env) = real_launch(&sim, &home, runtime);
    let real_request = request(real_cwd, args);
    let program = real_bin().join(runtime);
    // The simulator answers on this runtime while the CLI blocks its own thread.
    let real = tokio::task::spawn_blocking(move || run(&program, adapter, &real_request, &env))
        .await
        .unwrap();

    let (fake_order, fake_shapes) = outline(&fake.stdout);
    let (real_order, real_shapes) = outline(&real.stdout);
    // Two runs that printed nothing, or stopped early, would have equal shapes too.
    for (who, order, run) in [("fake", &fake_order, &fake), ("real", &real_order, &real)] {
        let last = order.last().map(String::as_str).unwrap_or_default();
        let terminal = ["turn.completed", "turn.failed", "result/"]
            .iter()
            .any(|t| last.starts_with(t));
        assert!(
            terminal,
            "{runtime} `{prompt}`: the {who} run ended without a terminal line ({order:?})\n--- stdout\n{}\n--- stderr\n{}",
            run.stdout, run.stderr
        );
    }
    let mut problems = Vec::new();
    if fake_order != real_order {
        problems.push(format!(
            "order of events:\n  fake: {fake_order:?}\n  real: {real_order:?}"
        ));
    }
    for (k, real_shape) in &real_shapes {
        match fake_shapes.get(k) {
            Some(fake_shape) => diff(k, fake_shape, real_shape, &mut problems),
            None => problems.push(format!("{k}: only the real CLI prints it")),
        }
    }
    assert!(
        problems.is_empty(),
        "{runtime} `{prompt}`: the fake and the real CLI differ:\n{}\n--- fake stdout\n{}\n--- real stdout\n{}",
        problems.join("\n"),
        fake.stdout,
        real.stdout
    );
}

async fn text_reply(runtime: &str) {
    let reply = "Hello from the scripted model";
    compare(
        runtime,
        "say hello",
        json!([{"text": reply, "deltas": 4}]),
        vec![Reply::streamed(reply, 4, 0)],
        None,
    )
    .await
}
on_both!(text_reply);

async fn shell_command(runtime: &str) {
    compare(
        runtime,
        "run echo",
        json!([{"command": "echo shape-ok", "output": "shape-ok\n", "exit_code": 0}, {"text": "ran it"}]),
        vec![Reply::Shell("echo shape-ok".into()), Reply::text("ran it")],
        None,
    )
    .await
}
on_both!(shell_command);

async fn file_write(runtime: &str) {
    compare(
        runtime,
        "write a note",
        json!([{"file_change": {"path": "note.txt", "content": "shape\n"}}, {"text": "wrote it"}]),
        vec![
            Reply::WriteFile {
                relative: "note.txt".into(),
                absolute: String::new(),
                content: "shape\n".into(),
            },
            Reply::text("wrote it"),
        ],
        None,
    )
    .await
}
on_both!(file_write);

async fn mcp_tool_call(runtime: &str) {
    let mcp = McpMock::start(None).await;
    let url = mcp.url();
    compare(
        runtime,
        "use the probe",
        json!([{"mcp_call": {"server": "probe", "tool": "echo", "arguments": {"text": "hi"}}}, {"text": "the tool answered"}]),
        vec![Reply::Mcp { server: "probe".into(), tool: "echo".into(), arguments: json!({"text": "hi"}) }, Reply::text("the tool answered")],
        Some(url),
    )
    .await
}
on_both!(mcp_tool_call);

async fn reasoning_then_text(runtime: &str) {
    compare(
        runtime,
        "think first",
        json!([{"reasoning": "Weighing the options"}, {"text": "decided"}]),
        vec![Reply::Reasoning {
            summary: "Weighing the options".into(),
            text: "decided".into(),
        }],
        None,
    )
    .await
}
on_both!(reasoning_then_text);

async fn failed_turn(runtime: &str) {
    compare(
        runtime,
        "hello",
        json!([{"fail": "the simulator says no"}]),
        vec![
            Reply::Error {
                status: 401,
                message: "the simulator says no".into()
            };
            3
        ],
        None,
    )
    .await
}
on_both!(failed_turn);
