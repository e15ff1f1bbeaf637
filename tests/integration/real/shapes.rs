//! Keeping the fakes honest: for each scenario both the fake and the real CLI run the same
//! script, started with the argv our adapters build, and their JSONL outputs must have the
//! same shape: the order of event (and item) types, and every field name with its value's
//! type. A CLI upgrade that changes its format fails here with a readable diff, and
//! `just real-drift` collects these diffs per scenario (`SVC_SHAPES_REPORT`).

use super::outline::{Change, diff, difference, outline, report};
use super::sim::{ModelSim, Reply};
use super::{launch, real_bin};
use conformance::mcp_mock::McpMock;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use svc::server::agents::adapters::{Adapter, McpServer, RtOne, RtTwo, TurnRequest};

/// The fakes, built by `cargo build --workspace --bins` beside the test binary's target.
fn fake_bin() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_svc"));
    exe.parent().unwrap().to_path_buf()
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
    // Not under the temp dir: see `scratch`.
    let dir = super::scratch();
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
        problems.push(difference(
            Change::Reordered,
            "order of events",
            format!("\n  fake: {fake_order:?}\n  real: {real_order:?}"),
        ));
    }
    for (k, real_shape) in &real_shapes {
        match fake_shapes.get(k) {
            Some(fake_shape) => diff(k, fake_shape, real_shape, &mut problems),
            None => problems.push(difference(
                Change::Added,
                k,
                "only the real CLI prints it".into(),
            )),
        }
    }
    for k in fake_shapes.keys().filter(|k| !real_shapes.contains_key(*k)) {
        problems.push(difference(
            Change::Removed,
            k,
            "only the fake prints it".into(),
        ));
    }
    report(&problems);
    let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(
        problems.is_empty(),
        "{runtime} `{prompt}`: the fake and the real CLI differ:\n{}\n--- fake stdout\n{}\n--- real stdout\n{}",
        listed.join("\n"),
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
