//! The real Codex CLI and Claude Code driven through `svc` against the scripted model server
//! (`sim`). They need the pinned CLIs, which `.ci/run` installs and `just test-real` puts on
//! PATH as `rt-one` and `rt-two` (in `SVC_REAL_BIN`); `just test` runs them.

/// One `#[tokio::test]` per runtime for a scenario `async fn(&str)`.
macro_rules! on_both {
    ($scenario:ident) => {
        mod $scenario {
            #[tokio::test]
            #[ignore = "needs the pinned real CLIs: run `just test-real`"]
            async fn rt_one() {
                super::$scenario("rt-one").await
            }
            #[tokio::test]
            #[ignore = "needs the pinned real CLIs: run `just test-real`"]
            async fn rt_two() {
                super::$scenario("rt-two").await
            }
        }
    };
}

mod e2e;
mod outline;
mod shapes;
pub mod sim;

use serde_json::{Value, json};
use sim::ModelSim;
use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The directory holding `rt-one` (codex) and `rt-two` (claude).
pub fn real_bin() -> PathBuf {
    let dir = std::env::var_os("SVC_REAL_BIN")
        .map(PathBuf::from)
        .expect("SVC_REAL_BIN is not set: run these tests with `just test-real`");
    for name in ["rt-one", "rt-two"] {
        assert!(
            dir.join(name).exists(),
            "{} has no `{name}`: run `just test-real` (it installs the pinned CLIs)",
            dir.display()
        );
    }
    dir
}

/// What the operator's template gives each real CLI so it talks to the simulator: a model
/// provider for codex (no retries, so an error fails at once; a workspace-write sandbox so
/// it may write files), a base URL and a private HOME for claude. `{runtime: {args, env}}`.
pub fn launch(sim_url: &str, home: &std::path::Path) -> Value {
    let provider = format!(
        "{{name=\"sim\", base_url=\"{sim_url}/v1\", wire_api=\"responses\", env_key=\"SIM_KEY\", request_max_retries=0, stream_max_retries=0}}"
    );
    json!({
        "rt-one": {
            "args": ["-c", "model_provider=sim", "-c", format!("model_providers.sim={provider}"), "-c", "sandbox_mode=\"workspace-write\""],
            "env": {"SIM_KEY": "sim-key", "CODEX_HOME": home.join("codex-home")},
        },
        "rt-two": {
            "args": [],
            "env": {
                "ANTHROPIC_BASE_URL": sim_url, "ANTHROPIC_API_KEY": "sim-key", "DISABLE_TELEMETRY": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0",
                "HOME": home.join("claude-home"),
            },
        },
    })
}

/// `launch` as template.yaml (JSON is YAML flow syntax).
pub fn launch_yaml(sim_url: &str, home: &std::path::Path) -> String {
    let runtimes = launch(sim_url, home);
    format!("server:\n  groups: [agents]\nagents:\n  runtimes: {runtimes}\n")
}

/// A scratch folder for a real CLI's homes and workspace, never under the system's temp
/// dir: codex refuses to set up its helpers under a temp dir, and where bubblewrap is
/// installed codex runs commands in a sandbox with a fresh `/tmp`, where a workspace under
/// `/tmp` is not there (a checkout under `/tmp` failed every codex command this way). So
/// `target/tmp` unless the checkout itself is under the temp dir, else `~/.cache/svc/real-tmp`.
pub fn scratch() -> tempfile::TempDir {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target.starts_with(std::env::temp_dir()) || target.starts_with("/tmp") {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
        home.join(".cache/svc/real-tmp")
    } else {
        target.to_path_buf()
    };
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

/// `svc serve` on a free port with the real CLIs first on PATH.
pub struct Svc {
    pub url: String,
    pub workspace: PathBuf,
    child: Child,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Svc {
    pub async fn start(sim: &ModelSim) -> Svc {
        let dir = scratch();
        let home = dir.path().join("homes");
        std::fs::create_dir_all(home.join("codex-home")).unwrap();
        std::fs::create_dir_all(home.join("claude-home")).unwrap();
        let config = dir.path().join("template.yaml");
        std::fs::write(&config, launch_yaml(&sim.url, &home)).unwrap();
        let workspace = dir.path().join("workspace");
        let path = format!(
            "{}:{}",
            real_bin().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_svc"))
            .args(["serve", "--port", "0", "--config"])
            .arg(&config)
            .env_clear()
            .env("PATH", path)
            .env("HOME", &home)
            .env("SVC_AGENTS_WORKSPACE", &workspace)
            .env("SVC_AGENTS_ALLOW_PRIVATE_URLS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .expect("svc starts");
        let stdout = child.stdout.take().unwrap();
        let url = tokio::task::spawn_blocking(move || {
            let mut lines = std::io::BufReader::new(stdout).lines();
            let url = lines
                .by_ref()
                .map_while(Result::ok)
                .find_map(|l| l.strip_prefix("listening on ").map(str::to_owned))
                .expect("svc prints `listening on`");
            // Keep draining so the server never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            url
        })
        .await
        .unwrap();
        Svc {
            url: url.trim_end_matches('/').to_owned(),
            workspace,
            child,
            http: reqwest::Client::new(),
            _dir: dir,
        }
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut rb = self.http.request(method, format!("{}{path}", self.url));
        if let Some(body) = body {
            rb = rb.json(&body);
        }
        let resp = rb.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
        let (status, v) = self
            .call(reqwest::Method::POST, path, Some(body.clone()))
            .await;
        assert!(
            status == 200 || status == 202,
            "POST {path} {body}: {status} {v}"
        );
        v
    }

    pub async fn get(&self, path: &str) -> Value {
        let (status, v) = self.call(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "GET {path}: {v}");
        v
    }

    /// The session's turns once `n` of them have finished (completed, failed or cancelled).
    pub async fn settle(&self, sid: &str, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let turns = self
                .get(&format!(
                    "/v1/agents/sessions/{sid}/turns?order=asc&limit=100"
                ))
                .await;
            let list = turns["data"].as_array().cloned().unwrap_or_default();
            let done = list
                .iter()
                .filter(|t| {
                    ["completed", "failed", "cancelled"]
                        .contains(&t["status"].as_str().unwrap_or_default())
                })
                .count();
            if done >= n {
                return list;
            }
            assert!(
                Instant::now() < deadline,
                "session {sid}: turns did not finish: {list:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn items(&self, sid: &str) -> Vec<Value> {
        let page = self
            .get(&format!(
                "/v1/agents/sessions/{sid}/items?order=asc&limit=100"
            ))
            .await;
        page["data"].as_array().cloned().unwrap_or_default()
    }

    /// A session on `runtime` with `prompt` as its first input; its id.
    pub async fn session(&self, runtime: &str, agent: Value, prompt: &str) -> String {
        let mut agent = agent;
        agent["model"] = json!(runtime);
        let s = self
            .post(
                "/v1/agents/sessions",
                json!({"agent": agent, "input": prompt}),
            )
            .await;
        s["id"].as_str().unwrap().to_owned()
    }
}

impl Drop for Svc {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Command lines (`/proc/<pid>/cmdline`) of live processes that contain `needle`.
pub fn processes_with(needle: &str) -> Vec<String> {
    conformance::processes::command_lines_containing(needle)
}
