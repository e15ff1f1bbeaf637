//! The command line as a user meets it: exit status, stdout and stderr snapshotted
//! together (uv's style), with temp paths filtered.

use assert_cmd::Command;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn svc() -> Command {
    let mut cmd = Command::cargo_bin("svc").unwrap();
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd
}

/// `exit: N`, then stdout, then stderr, as one snapshot-able text.
fn transcript(output: &std::process::Output) -> String {
    format!(
        "exit: {}\n----- stdout -----\n{}----- stderr -----\n{}",
        output
            .status
            .code()
            .map_or("signal".into(), |c| c.to_string()),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

macro_rules! snapshot {
    ($name:expr, $value:expr, $dir:expr) => {
        insta::with_settings!({filters => vec![(regex_escape($dir), "[TEMP]")]}, {
            insta::assert_snapshot!($name, $value);
        })
    };
    ($name:expr, $value:expr) => {
        insta::assert_snapshot!($name, $value)
    };
}

fn regex_escape(text: &str) -> &'static str {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    Box::leak(out.into_boxed_str())
}

#[test]
fn help_is_complete() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["check-config", "--help"],
        &["endpoints", "--help"],
        &["errors", "--help"],
    ] {
        let output = svc().args(args).output().unwrap();
        assert!(output.status.success());
        snapshot!(
            format!("help_{}", args.join("_").replace("--", "")),
            transcript(&output)
        );
    }
}

#[test]
fn bad_config_file_names_the_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("template.yaml");
    std::fs::write(&path, "server:\n  groups: [agents]\n  audit: sometimes\n").unwrap();
    let output = svc()
        .args(["serve", "--port", "0", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    snapshot!(
        "bad_config_value",
        transcript(&output),
        dir.path().to_str().unwrap()
    );

    std::fs::write(&path, "server:\n  endpoints:\n    shel: false\n").unwrap();
    let output = svc()
        .args(["check-config", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    snapshot!(
        "bad_config_endpoint",
        transcript(&output),
        dir.path().to_str().unwrap()
    );

    let output = svc()
        .args(["serve", "--config", "/nonexistent/template.yaml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    snapshot!("missing_config_file", transcript(&output));
}

#[test]
fn bad_environment_value_names_the_variable() {
    let output = svc()
        .env("SVC_SERVER_ENABLED_GROUPS", "agents,gpu")
        .args(["serve", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    snapshot!("bad_env_value", transcript(&output));
}

#[test]
fn check_config_reports_warnings() {
    let output = svc()
        .env("SVC_SERVER_TOKNE", "x")
        .arg("check-config")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("SVC_SERVER_TOKNE is not a known variable"),
        "{text}"
    );
}

#[test]
fn unknown_group_flag_is_a_usage_error() {
    let output = svc()
        .args(["serve", "--enable-group", "gpu"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown group `gpu`"));
}

/// `svc serve --port 0` with `extra` arguments, none of the caller's configuration; the child
/// and its `listening on` line.
pub(crate) fn spawn_server(extra: &[&str]) -> (Child, String) {
    let bin = assert_cmd::cargo::cargo_bin("svc");
    let mut child = std::process::Command::new(bin)
        .args(["serve", "--port", "0"])
        .args(extra)
        .env_remove("SVC_SERVER_TOKEN")
        .env_remove("SVC_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_prints_one_line_and_stops_cleanly_on_sigterm_and_sigint() {
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let (mut child, line) = spawn_server(&[]);
        let url = line.trim().strip_prefix("listening on ").expect(&line);
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
        assert_ne!(port, 0);
        // The server answers on the announced port.
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        use std::io::{Read, Write};
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        let status = wait_exit(&mut child);
        assert!(status.success(), "{signal:?}: {status:?}");
        let mut rest = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut rest)
            .unwrap();
        assert_eq!(rest, "", "exactly one line on stdout");
    }
}

#[test]
fn a_busy_port_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let output = svc()
        .args(["serve", "--port", &port, "--terminal-port", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
}
