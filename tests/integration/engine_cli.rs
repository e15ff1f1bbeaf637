//! The engine and sandbox commands as a user meets them, through the built `svc` binary:
//! `provider engine serve|status|stop` (one engine however many start, the descriptor's
//! mode, the idle exit), and `sandbox create|exec|cp` on the client that starts an engine
//! when none answers. Every test has its own state folder and stops what it started.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use svc::client::pid_alive;
use svc::wire::Descriptor;

/// A state folder of its own, and the cleanup of everything started in it: its sandboxes
/// killed, its engine stopped (killed if it will not stop), any other engine of the folder
/// (a racing start) killed.
pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn state_dir(&self) -> &Path {
        self.dir.path()
    }

    /// `svc` with only PATH, HOME and this state folder from the environment.
    pub fn svc<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = Command::new(svc_bin());
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env(
                "HOME",
                std::env::var("HOME").unwrap_or_else(|_| "/tmp".into()),
            )
            .env("SVC_STATE_DIR", self.state_dir())
            .args(args);
        cmd
    }

    pub fn run<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.svc(args).stdin(Stdio::null()).output().unwrap()
    }

    /// Runs and insists on exit 0; answers stdout.
    pub fn ok<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let out = self.run(args);
        assert!(out.status.success(), "{}", transcript(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn descriptor(&self) -> Option<Descriptor> {
        Descriptor::read(self.state_dir())
    }

    /// The descriptor of the running engine, insisting there is one.
    pub fn engine(&self) -> Descriptor {
        let d = self.descriptor().expect("an engine descriptor");
        assert!(
            pid_alive(d.pid),
            "the descriptor's engine {} is gone",
            d.pid
        );
        d
    }

    /// `svc sandbox create`: the id of line 1.
    pub fn create(&self) -> String {
        let stdout = self.ok(["sandbox", "create"]);
        stdout.lines().next().unwrap().to_owned()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(d) = self.descriptor().filter(|d| pid_alive(d.pid)) {
            if let Ok(out) = self.svc(["sandbox", "list", "--json"]).output()
                && let Ok(list) = serde_json::from_slice::<serde_json::Value>(&out.stdout)
            {
                for s in list["sandboxes"].as_array().into_iter().flatten() {
                    if let Some(id) = s["sandbox_id"].as_str() {
                        let _ = self.svc(["sandbox", "kill", id]).output();
                    }
                }
            }
            let _ = self.svc(["provider", "engine", "stop"]).output();
            if pid_alive(d.pid) {
                sigkill(d.pid);
            }
        }
        for pid in engines_of(self.state_dir()) {
            sigkill(pid);
        }
    }
}

pub(crate) fn svc_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_svc"))
}

pub(crate) fn transcript(out: &Output) -> String {
    format!(
        "exit: {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub(crate) fn sigkill(pid: u32) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if let Ok(raw) = i32::try_from(pid)
        && raw > 0
    {
        let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
    }
}

/// Waits until `pid` is gone; false when it outlived `limit`.
pub(crate) fn wait_gone(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while pid_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// The live engine processes serving `dir`: `svc provider engine serve` with
/// `SVC_STATE_DIR=dir` in their environment.
pub(crate) fn engines_of(dir: &Path) -> Vec<u32> {
    let wanted = format!("SVC_STATE_DIR={}", dir.display());
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !contains(&cmdline, b"provider\0engine\0serve") {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) && pid_alive(pid) {
            pids.push(pid);
        }
    }
    pids
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Waits until exactly one engine serves `dir` (the losers of a race exit once the
/// winner's descriptor is there); answers it.
pub(crate) fn the_one_engine(dir: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let engines = engines_of(dir);
        if engines.len() == 1 {
            return engines[0];
        }
        assert!(
            Instant::now() < deadline,
            "engines of the folder: {engines:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A started `serve`, and its first line of stdout.
fn serve(fx: &Fixture, extra: &[&str]) -> (Child, String) {
    let mut child = fx
        .svc(["provider", "engine", "serve"].iter().chain(extra))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

/// `engine listening on http://127.0.0.1:PORT (pid N)` → (port, pid).
fn parse_ready(line: &str) -> (u16, u32) {
    let rest = line
        .strip_prefix("engine listening on http://127.0.0.1:")
        .unwrap_or_else(|| panic!("not a ready line: {line:?}"));
    let (port, rest) = rest.split_once(" (pid ").unwrap();
    let pid = rest.trim_end().trim_end_matches(')');
    (port.parse().unwrap(), pid.parse().unwrap())
}

fn wait_child(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn engine_status_exits_1_when_none_runs_and_never_starts_one() {
    let fx = Fixture::new();
    let out = fx.run(["provider", "engine", "status"]);
    assert_eq!(out.status.code(), Some(1), "{}", transcript(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no engine is running"),
        "{}",
        transcript(&out)
    );
    let out = fx.run(["provider", "engine", "stop"]);
    assert_eq!(out.status.code(), Some(0), "{}", transcript(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no engine was running"));
    assert!(fx.descriptor().is_none());
    assert!(engines_of(fx.state_dir()).is_empty());
}

#[test]
fn engine_serve_writes_a_private_descriptor_and_stops_on_request() {
    let fx = Fixture::new();
    let (mut child, line) = serve(&fx, &[]);
    let (port, pid) = parse_ready(&line);
    assert_eq!(pid, child.id());
    let d = fx.engine();
    assert_eq!((d.port, d.pid), (port, pid));
    assert_eq!(d.protocol, "svc-engine/1");
    assert_eq!(d.host, "127.0.0.1");
    let mode = std::fs::metadata(fx.state_dir().join("engine.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "descriptor mode {mode:o}");

    let status = fx.ok(["provider", "engine", "status"]);
    assert!(status.contains(&format!("pid       {pid}")), "{status}");
    assert!(status.contains(&format!("port      {port}")), "{status}");
    let json: serde_json::Value =
        serde_json::from_str(&fx.ok(["provider", "engine", "status", "--json"])).unwrap();
    assert_eq!(json["pid"], pid);
    assert_eq!(json["protocol"], "svc-engine/1");

    // A second serve finds this one and exits 0 at once.
    let (mut second, line) = serve(&fx, &[]);
    assert_eq!(
        line.trim_end(),
        format!("an engine is already running (pid {pid}, port {port})")
    );
    assert!(
        wait_child(&mut second, Duration::from_secs(10))
            .unwrap()
            .success()
    );

    let stop = fx.ok(["provider", "engine", "stop"]);
    assert!(
        stop.contains(&format!("engine stopped (pid {pid}")),
        "{stop}"
    );
    let status = wait_child(&mut child, Duration::from_secs(10)).expect("the engine exits");
    assert!(status.success());
    assert!(
        fx.descriptor().is_none(),
        "the descriptor goes with the engine"
    );
}

#[test]
fn engine_ten_racing_serves_leave_one_engine_and_one_descriptor() {
    let fx = Fixture::new();
    let children: Vec<Child> = (0..10)
        .map(|_| {
            fx.svc(["provider", "engine", "serve"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let readers: Vec<_> = children
        .into_iter()
        .map(|mut child| {
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
                (child, line)
            })
        })
        .collect();
    let mut results: Vec<(Child, String)> =
        readers.into_iter().map(|r| r.join().unwrap()).collect();
    let ready: Vec<_> = results
        .iter()
        .filter(|(_, line)| line.starts_with("engine listening"))
        .collect();
    assert_eq!(
        ready.len(),
        1,
        "{:?}",
        results.iter().map(|r| &r.1).collect::<Vec<_>>()
    );
    let (_, winner_pid) = parse_ready(&ready[0].1);
    for (child, line) in &mut results {
        if child.id() == winner_pid {
            continue;
        }
        assert!(
            line.starts_with(&format!("an engine is already running (pid {winner_pid},")),
            "{line:?}"
        );
        assert!(
            wait_child(child, Duration::from_secs(10))
                .unwrap()
                .success()
        );
    }
    assert_eq!(the_one_engine(fx.state_dir()), winner_pid);
    assert_eq!(fx.engine().pid, winner_pid);
    let stray: Vec<_> = std::fs::read_dir(fx.state_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("engine.json") && n != "engine.json")
        .collect();
    assert!(stray.is_empty(), "left behind: {stray:?}");
    fx.ok(["provider", "engine", "stop"]);
    for (child, _) in &mut results {
        assert!(wait_child(child, Duration::from_secs(10)).is_some());
    }
}

#[test]
fn engine_ten_racing_clients_leave_one_engine() {
    let fx = Fixture::new();
    let children: Vec<Child> = (0..10)
        .map(|_| {
            fx.svc(["sandbox", "list", "--json"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", transcript(&out));
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(list["sandboxes"].is_array());
    }
    let pid = the_one_engine(fx.state_dir());
    assert_eq!(fx.engine().pid, pid);
}

#[test]
fn engine_exits_after_its_idle_timeout() {
    let fx = Fixture::new();
    let (mut child, line) = serve(&fx, &["--idle-timeout", "1"]);
    let (_, pid) = parse_ready(&line);
    let started = Instant::now();
    let status =
        wait_child(&mut child, Duration::from_secs(15)).expect("the engine exits when idle");
    assert!(status.success());
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert!(!pid_alive(pid));
    assert!(fx.descriptor().is_none());
    let mut rest = String::new();
    child.stdout.take().map(|mut s| s.read_to_string(&mut rest));
}

#[test]
fn engine_client_survives_a_stop_and_a_kill() {
    let fx = Fixture::new();
    fx.ok(["sandbox", "list"]);
    let first = fx.engine();
    fx.ok(["provider", "engine", "stop"]);
    assert!(!pid_alive(first.pid));

    // The next command starts a new engine.
    fx.ok(["sandbox", "list"]);
    let second = fx.engine();
    assert_ne!(second.pid, first.pid);
    assert_ne!(second.token, first.token);

    // Killed without a word: its descriptor stays behind, stale.
    sigkill(second.pid);
    assert!(wait_gone(second.pid, Duration::from_secs(10)));
    fx.ok(["sandbox", "list"]);
    let third = fx.engine();
    assert_ne!(third.pid, second.pid);
    assert_eq!(the_one_engine(fx.state_dir()), third.pid);
}

#[test]
fn engine_sandbox_create_prints_the_id_alone_on_line_one() {
    let fx = Fixture::new();
    let out = fx.ok(["sandbox", "create", "--metadata", "purpose=test"]);
    let mut lines = out.lines();
    let id = lines.next().unwrap();
    assert!(!id.is_empty() && !id.contains(char::is_whitespace), "{out}");
    assert!(lines.next().is_some(), "a summary follows: {out}");

    let info: serde_json::Value =
        serde_json::from_str(&fx.ok(["sandbox", "info", id, "--json"])).unwrap();
    assert_eq!(info["sandbox_id"], id);
    assert_eq!(info["metadata"]["purpose"], "test");
    assert!(fx.ok(["sandbox", "list"]).contains(id));

    let json: serde_json::Value =
        serde_json::from_str(&fx.ok(["sandbox", "create", "--json", "--env", "A=1"])).unwrap();
    assert_eq!(json["envs_keys"], serde_json::json!(["A"]));
    let second = json["sandbox_id"].as_str().unwrap();
    let listed: serde_json::Value =
        serde_json::from_str(&fx.ok(["sandbox", "list", "--json"])).unwrap();
    assert_eq!(listed["sandboxes"].as_array().unwrap().len(), 2);

    fx.ok(["sandbox", "kill", second]);
    let out = fx.run(["sandbox", "info", "sb_does_not_exist"]);
    assert_eq!(out.status.code(), Some(1), "{}", transcript(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("E2009"),
        "{}",
        transcript(&out)
    );
}

#[test]
fn engine_sandbox_exec_exits_with_the_commands_code() {
    let fx = Fixture::new();
    let id = fx.create();
    let code = |args: &[&str]| {
        let out = fx.run(["sandbox", "exec", &id].iter().chain(args));
        (out.status.code(), out)
    };
    assert_eq!(code(&["--shell", "exit 7"]).0, Some(7));
    assert_eq!(code(&["--", "sh", "-c", "exit 3"]).0, Some(3));
    assert_eq!(code(&["--", "true"]).0, Some(0));
    let (status, out) = code(&["--shell", "echo out; echo err >&2"]);
    assert_eq!(status, Some(0), "{}", transcript(&out));
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
    // Words are arguments, never a shell line.
    let (_, out) = code(&["--", "printf", "%s|", "a b", "$HOME"]);
    assert_eq!(out.stdout, b"a b|$HOME|");
    let (status, out) = code(&["--env", "GREETING=hi", "--shell", "printf %s \"$GREETING\""]);
    assert_eq!((status, out.stdout.as_slice()), (Some(0), &b"hi"[..]));
    // Bytes exact, not UTF-8 included.
    let (_, out) = code(&["--", "printf", "\\377\\000x"]);
    assert_eq!(out.stdout, b"\xff\x00x");
    let (status, out) = code(&["--timeout", "1", "--", "sleep", "30"]);
    assert_eq!(status, Some(124), "{}", transcript(&out));
    let out = fx.run(["sandbox", "exec", "sb_does_not_exist", "--", "true"]);
    assert_eq!(out.status.code(), Some(125), "{}", transcript(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("E2009"));
}

/// As `ssh` and `docker exec` do: the shell's exit code is `svc`'s (stdin a pipe here, so
/// no raw mode; its end leaves the shell to exit by itself).
#[test]
fn engine_sandbox_terminal_exits_with_the_shells_code() {
    let fx = Fixture::new();
    let id = fx.create();
    for (line, want) in [("exit 3\n", 3), ("echo hi-$((6*7)); exit\n", 0)] {
        let mut child = fx
            .svc(["sandbox", "terminal", &id, "--shell", "/bin/sh"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        let status = wait_child(&mut child, Duration::from_secs(30));
        if status.is_none() {
            sigkill(child.id());
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(want),
            "{line:?}: {}",
            transcript(&out)
        );
        if want == 0 {
            assert!(String::from_utf8_lossy(&out.stdout).contains("hi-42"));
        }
    }
}

#[test]
fn engine_sandbox_exec_streams_output_as_it_comes() {
    let fx = Fixture::new();
    let id = fx.create();
    let mut child = fx
        .svc([
            "sandbox",
            "exec",
            &id,
            "--shell",
            "echo first; sleep 3; echo second",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let first_at = Instant::now();
    assert_eq!(line, "first\n");
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "second\n");
    assert!(
        first_at.elapsed() >= Duration::from_secs(2),
        "the first line came only with the second"
    );
    assert!(child.wait().unwrap().success());
}

#[test]
fn engine_sandbox_cp_round_trips_bytes_exactly() {
    let fx = Fixture::new();
    let id = fx.create();
    let local = tempfile::tempdir().unwrap();
    // Every byte value, not UTF-8, over a few chunks of the upload.
    let bytes: Vec<u8> = (0..(600 * 1024 + 7))
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let src = local.path().join("data.bin");
    std::fs::write(&src, &bytes).unwrap();

    fx.ok([
        "sandbox".as_ref(),
        "cp".as_ref(),
        src.as_os_str(),
        format!("{id}:data.bin").as_ref(),
    ]);
    let back = local.path().join("back.bin");
    fx.ok([
        "sandbox".as_ref(),
        "cp".as_ref(),
        format!("{id}:data.bin").as_ref(),
        back.as_os_str(),
    ]);
    assert!(std::fs::read(&back).unwrap() == bytes, "download differs");

    // Into a sandbox directory, and out into a local one: the file keeps its name.
    fx.ok(["sandbox", "exec", &id, "--", "mkdir", "sub"]);
    fx.ok([
        "sandbox".as_ref(),
        "cp".as_ref(),
        src.as_os_str(),
        format!("{id}:sub").as_ref(),
    ]);
    let out_dir = local.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    fx.ok([
        "sandbox".as_ref(),
        "cp".as_ref(),
        format!("{id}:sub/data.bin").as_ref(),
        out_dir.as_os_str(),
    ]);
    assert!(std::fs::read(out_dir.join("data.bin")).unwrap() == bytes);
    let leftovers: Vec<_> = std::fs::read_dir(&out_dir).unwrap().flatten().collect();
    assert_eq!(leftovers.len(), 1, "no temp file stays behind");

    // `-`: stdin in, stdout out.
    let mut child = fx
        .svc(["sandbox", "cp", "-", &format!("{id}:piped.bin")])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    assert!(child.wait().unwrap().success());
    let out = fx.run(["sandbox", "cp", &format!("{id}:piped.bin"), "-"]);
    assert!(out.status.success(), "{}", transcript(&out));
    assert!(out.stdout == bytes, "stdout differs");

    // A missing file is the engine's typed error; two local sides are refused.
    let out = fx.run(["sandbox", "cp", &format!("{id}:missing.bin"), "-"]);
    assert_eq!(out.status.code(), Some(1), "{}", transcript(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("E2004"),
        "{}",
        transcript(&out)
    );
    let out = fx.run(["sandbox", "cp", "a", "b"]);
    assert_eq!(out.status.code(), Some(1), "{}", transcript(&out));
}
