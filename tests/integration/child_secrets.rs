//! No child can read the server's credentials (issue 30, item 1), written as the attack: a
//! `/shell` reads the server's environment, descriptors and memory under `/proc/$PPID`, and
//! its config file. Before the fix `tr '\0' '\n' </proc/$PPID/environ` printed
//! `SVC_SERVER_TOKEN`.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "child-secrets-token-5d1e";

/// A server on port 0 with `SVC_SERVER_TOKEN` set, as user `uid` when given; its port.
/// Another user runs a copy of the binary in a folder anyone may enter: the checkout's own
/// folders may be closed to it (a CI machine's work folder often is).
fn serve(
    uid: Option<u32>,
    config: Option<&std::path::Path>,
) -> (Child, u16, Option<tempfile::TempDir>) {
    let (program, copy) = match uid {
        Some(_) => {
            let dir = tempfile::tempdir().unwrap();
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            let program = dir.path().join("svc");
            std::fs::copy(assert_cmd::cargo::cargo_bin("svc"), &program).unwrap();
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
            (program, Some(dir))
        }
        None => (assert_cmd::cargo::cargo_bin("svc"), None),
    };
    let mut command = serve_command(program);
    if let Some(config) = config {
        command.args(["--config", &config.display().to_string()]);
    }
    if let Some(uid) = uid {
        use std::os::unix::process::CommandExt;
        command.uid(uid).gid(uid);
    }
    let mut child = command.spawn().unwrap();
    let port = read_port(&mut child);
    (child, port, copy)
}

/// `program serve` on any free ports with `SVC_SERVER_TOKEN` set, in `/`, its first line
/// of stdout piped (see [`read_port`]).
pub(crate) fn serve_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    command
        .args(["serve", "--port", "0", "--terminal-port", "0"])
        .env("SVC_SERVER_TOKEN", TOKEN)
        .env_remove("SVC_CONFIG")
        .current_dir("/")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

/// The port a starting `svc serve` prints on its first line.
pub(crate) fn read_port(child: &mut Child) -> u16 {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"))
}

/// `body` POSTed to `path` as the server identity: the answer's JSON (a 200 or 201).
fn post(port: u16, path: &str, body: &Value) -> Value {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = body.to_string();
    write!(
        tcp,
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    let _ = tcp.read_to_string(&mut reply);
    let (head, body) = reply.split_once("\r\n\r\n").expect(&reply);
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.1 201"),
        "{reply}"
    );
    serde_json::from_str(body.trim()).expect(body)
}

/// A terminal's shell, as root sees it from outside: its pid.
fn terminal_shell(port: u16) -> u32 {
    let record = post(port, "/pty", &json!({"cwd": "/"}));
    record["pid"].as_u64().expect("a pid") as u32
}

/// `cmd` through `/shell` as the server identity: its stdout, stderr and exit code.
pub(crate) fn shell(port: u16, cmd: &str) -> (String, String, i64) {
    let body = post(port, "/shell", &json!({"cmd": cmd, "cwd": "/"}));
    (
        body["stdout"].as_str().unwrap_or_default().to_owned(),
        body["stderr"].as_str().unwrap_or_default().to_owned(),
        body["exit_code"].as_i64().unwrap_or(-1),
    )
}

/// Every way into the server under `/proc` is refused, and the token shows nowhere.
fn cannot_read_the_server(port: u16, server: u32) {
    let (stdout, _, _) = shell(port, "echo $PPID");
    assert_eq!(
        stdout.trim(),
        server.to_string(),
        "the shell's parent is the server"
    );
    for attack in [
        "tr '\\0' '\\n' </proc/$PPID/environ",
        "ls /proc/$PPID/fd",
        "head -c 64 /proc/$PPID/mem",
        "cat /proc/$PPID/maps",
    ] {
        let (stdout, stderr, code) = shell(port, attack);
        assert_ne!(code, 0, "`{attack}` succeeded: {stdout}");
        assert!(
            !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
            "`{attack}` showed the token"
        );
    }
}

pub(crate) fn stop(mut server: Child) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = server.wait();
}

/// The server and its children share a user that is not root (as root, the test runs the
/// server as `nobody`): the server is not dumpable, so `/proc/<server>` refuses them.
#[test]
fn a_child_of_the_servers_own_user_cannot_read_the_server() {
    let as_nobody = nix::unistd::geteuid().is_root().then_some(65534);
    let (server, port, _copy) = serve(as_nobody, None);
    let (stdout, _, _) = shell(port, "id -u");
    assert_ne!(stdout.trim(), "0", "the server under test is not root");
    cannot_read_the_server(port, server.id());
    stop(server);
}

/// A root server's children run as `process.run_as` and read neither the server nor its
/// config file. Needs root: only root starts children as another user.
#[test]
fn children_of_a_root_server_run_as_process_run_as() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("not root: `process.run_as` needs a root server, not tried here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Open to anyone: the file's own mode is what must keep it from the children.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.path().join("template.yaml");
    std::fs::write(
        &config,
        "identities:\n  - {id: ci, token: file-token-77a1, scopes: [\"*\"]}\nprocess:\n  run_as: nobody\n",
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    // A config file its children could read is refused before anything starts.
    let refused = Command::new(assert_cmd::cargo::cargo_bin("svc"))
        .args(["check-config", "--config", &config.display().to_string()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr).into_owned()
        + &String::from_utf8_lossy(&refused.stdout);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("chmod 600"), "{said}");

    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (server, port, _copy) = serve(None, Some(&config));
    let (stdout, _, _) = shell(port, "id -u; echo $HOME");
    assert_eq!(stdout, "65534\n/nonexistent\n");
    cannot_read_the_server(port, server.id());
    let (stdout, _, code) = shell(port, &format!("cat {}", config.display()));
    assert!(code != 0 && !stdout.contains("file-token"), "{stdout}");
    // A terminal's shell runs as that user too.
    let status = std::fs::read_to_string(format!("/proc/{}/status", terminal_shell(port))).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert_eq!(uid.split_whitespace().nth(1), Some("65534"), "{uid}");
    stop(server);
}

/// A server of an ordinary user with identity tokens written in its config file: its
/// children run as that user too, yet see the file empty and cannot uncover it (as root, the
/// test runs the server as `nobody`). Before, `cat FILE` printed the token.
#[test]
fn children_of_an_ordinary_server_cannot_read_its_config_file() {
    let as_nobody = nix::unistd::geteuid().is_root().then_some(65534);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.path().join("template.yaml");
    std::fs::write(
        &config,
        "identities:\n  - {id: ci, token: file-token-3b9e, scopes: [\"*\"]}\n",
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    if let Some(uid) = as_nobody {
        let id = Some(nix::unistd::Uid::from_raw(uid));
        nix::unistd::chown(&config, id, Some(nix::unistd::Gid::from_raw(uid))).unwrap();
    }
    let (server, port, _copy) = serve(as_nobody, Some(&config));
    let (stdout, _, _) = shell(port, "id -u");
    assert_ne!(stdout.trim(), "0", "the server under test is not root");
    let file = config.display();
    let dir = dir.path().display();
    for attack in [
        format!("cat {file}"),
        format!("cat {dir}/./template.yaml"),
        format!("umount {file}; cat {file}"),
        format!("unshare -Urm sh -c 'umount {file}; cat {file}'"),
        format!("unshare -Urm sh -c 'mount --bind {dir} /mnt && cat /mnt/template.yaml'"),
        format!("unshare -Urm sh -c 'mount --rbind {dir} /mnt && cat /mnt/template.yaml'"),
        format!("cat /proc/$PPID/root{file}"),
    ] {
        let (stdout, stderr, _) = shell(port, &attack);
        assert!(
            !stdout.contains("file-token") && !stderr.contains("file-token"),
            "`{attack}` showed the token: {stdout}"
        );
    }
    // The cover is there: the file the server read shows empty to its child.
    let (stdout, _, code) = shell(port, &format!("wc -c < {file}"));
    assert_eq!(
        (stdout.trim(), code),
        ("0", 0),
        "the child sees the file empty"
    );
    // So does a terminal's shell: its root, seen from outside, holds the cover.
    let seen = std::fs::read(format!("/proc/{}/root{file}", terminal_shell(port))).unwrap();
    assert!(seen.is_empty(), "{}", String::from_utf8_lossy(&seen));
    cannot_read_the_server(port, server.id());
    stop(server);
}

/// A root server without `process.run_as` has root children, which may read its
/// `/proc/<pid>/environ` whatever the dumpable flag says: the token it read from
/// `SVC_SERVER_TOKEN` is no longer there (its bytes were overwritten at start). Before, the
/// read printed it. Needs root: an ordinary server's children cannot read the file at all.
#[test]
fn a_root_child_finds_no_token_in_the_servers_environment_block() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("not root: only a root child may read the server's environment, not tried");
        return;
    }
    let (server, port, _copy) = serve(None, None);
    let (stdout, _, code) = shell(port, "tr '\\0' '\\n' </proc/$PPID/environ");
    assert_eq!(code, 0, "a root child reads the block");
    assert!(
        stdout.contains("SVC_SERVER_TOKEN="),
        "the name stays: {stdout}"
    );
    assert!(!stdout.contains(TOKEN), "the token is there: {stdout}");
    // The server still knows its token (the shell above was authorised by it).
    stop(server);
}
