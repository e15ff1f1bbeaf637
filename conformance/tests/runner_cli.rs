//! The `svc-conformance` binary against the tiny Python fixture server.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_svc-conformance");
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_server.py");

fn runner() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(BIN);
    cmd.env_remove("INSTA_OUTPUT")
        .timeout(std::time::Duration::from_secs(120));
    cmd
}

fn fixture_cmd() -> String {
    format!("python3 {FIXTURE} --port {{port}}")
}

fn stdout_of(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stdout).into_owned()
}

fn stderr_of(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stderr).into_owned()
}

/// `N passed, N failed, N skipped` as numbers, from the last line.
fn final_counts(out: &str) -> (usize, usize, usize) {
    let last = out.lines().last().unwrap_or_default();
    let nums: Vec<usize> = last
        .split(", ")
        .zip(["passed", "failed", "skipped"])
        .map(|(part, word)| {
            let (n, w) = part.split_once(' ').unwrap_or_default();
            assert_eq!(w, word, "bad final line {last:?}");
            n.parse()
                .unwrap_or_else(|_| panic!("bad final line {last:?}"))
        })
        .collect();
    assert_eq!(nums.len(), 3, "bad final line {last:?}");
    (nums[0], nums[1], nums[2])
}

fn listed_ids() -> Vec<String> {
    let a = runner().arg("--list").assert().success();
    stdout_of(&a).lines().map(str::to_string).collect()
}

/// The fixture only serves what the health cases need; the real suite needs a real server.
const FIXTURE_CASES: &str = "core/health/";

fn fixture_ids() -> Vec<String> {
    let a = runner()
        .args(["--list", "--filter", FIXTURE_CASES])
        .assert()
        .success();
    stdout_of(&a).lines().map(str::to_string).collect()
}

/// A fixture server this test owns, killed on drop.
struct Fixture {
    child: Child,
    url: String,
}

impl Fixture {
    fn start() -> Fixture {
        let mut child = Command::new("python3")
            .args([FIXTURE, "--port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("listening line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .expect("listening line")
            .to_string();
        Fixture { child, url }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn list_prints_ids() {
    let ids = listed_ids();
    assert!(ids.iter().any(|id| id == "core/health/001"), "{ids:?}");
    let a = runner()
        .args(["--list", "--filter", "core/health/001"])
        .assert()
        .success();
    assert_eq!(stdout_of(&a).trim(), "core/health/001");
}

#[test]
fn base_url_runs_profile_free_cases_and_skips_the_rest() {
    let fixture = Fixture::start();
    let a = runner()
        .args(["--base-url", &fixture.url, "--filter", FIXTURE_CASES])
        .assert()
        .success();
    let out = stdout_of(&a);
    assert!(out.contains("PASS  core/health/001  "), "{out}");
    let (passed, failed, skipped) = final_counts(&out);
    assert_eq!(failed, 0, "{out}");
    assert_eq!(passed + skipped, fixture_ids().len(), "{out}");
    assert!(
        skipped > 0,
        "the DEFAULT-profile health case needs a launched server: {out}"
    );
    {
        assert!(out.contains("skipped: needs profile "), "{out}");
        assert!(
            out.contains("; launch the server with --server-cmd"),
            "{out}"
        );
    }
    assert!(out.contains("group  ") && out.contains("\ntotal "), "{out}");
}

#[test]
fn server_cmd_launches_per_profile() {
    let a = runner()
        .args(["--server-cmd", &fixture_cmd(), "--filter", FIXTURE_CASES])
        .assert()
        .success();
    let out = stdout_of(&a);
    assert!(out.contains("PASS  core/health/001  "), "{out}");
    assert!(out.contains("PASS  core/health/002  "), "{out}");
    let (_, failed, _) = final_counts(&out);
    assert_eq!(failed, 0, "{out}");
}

#[test]
fn failing_cases_exit_1_with_their_message() {
    let a = runner()
        .args([
            "--server-cmd",
            &fixture_cmd(),
            "--filter",
            "core/health/001",
        ])
        .env("FIXTURE_HEALTH_STATUS", "503")
        .assert()
        .code(1);
    let out = stdout_of(&a);
    assert!(out.contains("FAIL  core/health/001  "), "{out}");
    assert!(out.contains("expected status 200, got 503"), "{out}");
    assert_eq!(final_counts(&out), (0, 1, 0));
}

#[test]
fn server_that_exits_at_once_fails_cleanly() {
    let a = runner()
        .args([
            "--server-cmd",
            "echo 'no config for you' >&2; exit 7 # {port}",
        ])
        .assert()
        .code(1);
    let out = stdout_of(&a);
    assert!(out.contains("exited (exit status: 7)"), "{out}");
    assert!(out.contains("| no config for you"), "{out}");
    // Every case fails, but those that need what this command lacks (the terminal port) are
    // skipped before the server is asked for.
    let (passed, failed, skipped) = final_counts(&out);
    assert_eq!((passed, failed + skipped), (0, listed_ids().len()), "{out}");
    assert!(failed > 0, "{out}");
}

#[test]
fn json_format_and_report_file() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let a = runner()
        .args([
            "--server-cmd",
            &fixture_cmd(),
            "--filter",
            FIXTURE_CASES,
            "--format",
            "json",
            "--report",
        ])
        .arg(&report)
        .assert()
        .success();
    let stdout: Value = serde_json::from_str(&stdout_of(&a)).expect("stdout is JSON");
    let file: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(stdout, file);
    let n = fixture_ids().len();
    assert_eq!(file["totals"]["total"], n);
    assert_eq!(file["totals"]["fail"], 0);
    assert_eq!(
        file["groups"]["core"]["total"].as_u64().map(|t| t > 0),
        Some(true)
    );
    let first = &file["cases"][0];
    for key in ["id", "group", "status", "message", "duration_ms"] {
        assert!(first.get(key).is_some(), "missing {key}: {first}");
    }
    let (passed, failed, skipped) = final_counts(&stderr_of(&a));
    assert_eq!((passed + skipped, failed), (n, 0));
}

#[test]
fn summary_file_is_compared_and_updated() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.txt");
    let args = [
        "--server-cmd",
        &fixture_cmd(),
        "--filter",
        "core/health/001",
        "--summary",
    ];
    runner()
        .args(args)
        .arg(&summary)
        .arg("--update-summary")
        .assert()
        .success();
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("group  pass  fail  skip  total\ncore      1"),
        "{text}"
    );
    runner().args(args).arg(&summary).assert().success();
    std::fs::write(&summary, text.replace("core      1", "core      2")).unwrap();
    let a = runner().args(args).arg(&summary).assert().code(1);
    assert!(
        stderr_of(&a).contains("the per-group summary differs"),
        "{}",
        stderr_of(&a)
    );
}

#[test]
fn usage_errors_exit_2() {
    runner().assert().code(2);
    runner()
        .args(["--server-cmd", "svc serve"])
        .assert()
        .code(2);
    runner()
        .args([
            "--server-cmd",
            "x {port}",
            "--base-url",
            "http://127.0.0.1:1",
        ])
        .assert()
        .code(2);
    runner()
        .args(["--base-url", "127.0.0.1:1"])
        .assert()
        .code(2);
    runner()
        .args(["--format", "xml", "--list"])
        .assert()
        .code(2);
}

#[test]
fn engine_cases_skip_without_an_engine() {
    let a = runner()
        .args([
            "--server-cmd",
            &fixture_cmd(),
            "--filter",
            "engine/health/001",
        ])
        .assert()
        .success();
    let out = stdout_of(&a);
    assert!(
        out.contains(
            "skipped: no engine to test; give --engine-cmd CMD or --engine-url URL --engine-token TOKEN"
        ),
        "{out}"
    );
    assert_eq!(final_counts(&out), (0, 0, 1));
}

#[test]
fn engine_that_exits_at_once_fails_its_cases_with_its_output() {
    let a = runner()
        .args([
            "--engine-cmd",
            "echo 'no state for you' >&2; exit 5",
            "--filter",
            "engine/health/001",
        ])
        .assert()
        .code(1);
    let out = stdout_of(&a);
    assert!(out.contains("exited (exit status: 5)"), "{out}");
    assert!(out.contains("| no state for you"), "{out}");
    assert_eq!(final_counts(&out), (0, 1, 0));
}

#[test]
fn engine_url_needs_its_token() {
    runner()
        .args(["--engine-url", "http://127.0.0.1:9", "--filter", "engine/"])
        .assert()
        .code(2);
}
