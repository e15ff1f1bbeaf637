//! Helpers: preconfigured commands, JSON line parsing, process control.

use assert_cmd::Command;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Variables that would make a test depend on the developer's machine.
const SCRUB: &[&str] = &[
    "RT_FAKE_SCRIPT",
    "RT_FAKE_SEED",
    "RT_FAKE_REQUIRE_KEY",
    "RT_FAKE_MCP_HANDSHAKE",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "ANTHROPIC_API_KEY",
    "CODEX_HOME",
];

pub fn cmd(bin: &str, state: &Path, cwd: &Path) -> Command {
    let mut c = Command::cargo_bin(bin).expect("binary built");
    for v in SCRUB {
        c.env_remove(v);
    }
    c.env("RT_FAKE_STATE_DIR", state)
        .env("RT_FAKE_FIXED_CLOCK", "1")
        .env("IS_SANDBOX", "1")
        .current_dir(cwd)
        .timeout(Duration::from_secs(60));
    c
}

/// `rt-one exec --json --skip-git-repo-check -C <cwd>` plus `args`.
pub fn one(state: &Path, cwd: &Path, args: &[&str]) -> Command {
    let mut c = cmd("rt-one", state, cwd);
    c.args(["exec", "--json", "--skip-git-repo-check", "-C"])
        .arg(cwd)
        .args(args);
    c
}

/// `rt-two -p --output-format stream-json --verbose` plus `args`.
pub fn two(state: &Path, cwd: &Path, args: &[&str]) -> Command {
    let mut c = cmd("rt-two", state, cwd);
    c.args(["-p", "--output-format", "stream-json", "--verbose"])
        .args(args);
    c
}

/// Parses stdout as JSON lines; every line must parse.
/// A state directory and a working directory for one fake, and how to start it there.
pub struct Env {
    pub state: tempfile::TempDir,
    pub work: tempfile::TempDir,
    name: &'static str,
    launch: fn(&Path, &Path, &[&str]) -> Command,
}

impl Env {
    pub fn new(name: &'static str, launch: fn(&Path, &Path, &[&str]) -> Command) -> Env {
        Env {
            state: tempfile::TempDir::new().expect("tmp"),
            work: tempfile::TempDir::new().expect("tmp"),
            name,
            launch,
        }
    }

    pub fn run(&self, args: &[&str]) -> std::process::Output {
        (self.launch)(self.state.path(), self.work.path(), args)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", self.name))
    }

    /// The JSON lines of a run that must succeed.
    pub fn ok(&self, args: &[&str]) -> Vec<Value> {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{} failed: {}",
            self.name,
            stderr_text(&out)
        );
        lines(&out.stdout)
    }
}

pub fn lines(stdout: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("line is not JSON ({e}): {l}")))
        .collect()
}

/// Like [`lines`] but returns the non-JSON lines separately.
pub fn split_lines(stdout: &[u8]) -> (Vec<Value>, Vec<String>) {
    let mut json = Vec::new();
    let mut other = Vec::new();
    for l in String::from_utf8_lossy(stdout).lines() {
        match serde_json::from_str(l) {
            Ok(v) => json.push(v),
            Err(_) => other.push(l.to_string()),
        }
    }
    (json, other)
}

pub fn of_type<'a>(lines: &'a [Value], ty: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == ty).collect()
}

/// Items of `item.*` events with the given item type.
pub fn items<'a>(lines: &'a [Value], event: &str, item_type: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == event && l["item"]["type"] == item_type)
        .map(|l| &l["item"])
        .collect()
}

pub fn stderr_text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A spawned fake whose stdout lines arrive on a channel with arrival times.
pub struct Live {
    pub child: Child,
    pub rx: mpsc::Receiver<(Instant, String)>,
}

pub fn spawn(mut command: std::process::Command) -> Live {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    let mut child = command.spawn().expect("spawn fake");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    Live { child, rx }
}

/// Converts an assert_cmd command into a std one for spawning.
pub fn std_cmd(bin: &str, state: &Path, cwd: &Path, args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin(bin));
    for v in SCRUB {
        c.env_remove(v);
    }
    c.env("RT_FAKE_STATE_DIR", state)
        .env("RT_FAKE_FIXED_CLOCK", "1")
        .env("IS_SANDBOX", "1")
        .current_dir(cwd)
        .args(args);
    c
}

impl Live {
    /// Waits for a line satisfying `pred`, returning all lines seen so far
    /// with their arrival times.
    pub fn wait_for(&self, pred: impl Fn(&str) -> bool) -> Vec<(Instant, String)> {
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok((at, line)) = self.rx.recv_timeout(Duration::from_millis(100)) {
                let hit = pred(&line);
                seen.push((at, line));
                if hit {
                    return seen;
                }
            }
        }
        panic!("line not seen within 30s; got {seen:?}");
    }

    pub fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let ok = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(ok.success(), "kill -TERM failed");
        self.wait(Duration::from_secs(10))
            .expect("fake did not exit on SIGTERM")
    }

    pub fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn write_script(dir: &Path, value: &Value) -> std::path::PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, value.to_string()).expect("write script");
    path
}
