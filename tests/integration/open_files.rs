//! The open-files limit: `svc serve` and the engine raise their soft limit to the hard one
//! at start (an engine holds three descriptors per sandbox), and their children get back
//! the soft limit the process started with (a program written for `select` fails past
//! descriptor 1,023).

use crate::child_secrets::{read_port, serve_command, shell, stop};
use crate::engine_cli::{Fixture, the_one_engine};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use std::process::{Command, Stdio};

/// A soft limit below every hard limit a test machine has.
const STARTED_WITH: u64 = 256;

/// Starts `command` with a soft open-files limit of [`STARTED_WITH`], its hard one
/// unchanged.
fn started_low(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: one system call between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(|| {
            let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
            setrlimit(Resource::RLIMIT_NOFILE, STARTED_WITH, hard)?;
            Ok(())
        });
    }
}

/// The soft open-files limit of process `pid`, from `/proc/<pid>/limits`.
fn soft_limit_of(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect(&limits);
    line.split_whitespace().nth(3).unwrap().parse().expect(line)
}

fn hard_limit() -> u64 {
    getrlimit(Resource::RLIMIT_NOFILE).unwrap().1
}

#[test]
fn the_server_raises_its_limit_and_its_children_get_the_one_it_started_with() {
    let hard = hard_limit();
    assert!(hard > STARTED_WITH, "this machine's hard limit is {hard}");
    let mut command = serve_command(assert_cmd::cargo::cargo_bin("svc"));
    started_low(&mut command);
    let mut server = Stopped(Some(command.spawn().unwrap()));
    let child = server.0.as_mut().unwrap();
    let port = read_port(child);
    assert_eq!(soft_limit_of(child.id()), hard, "the server's own limit");
    let (stdout, stderr, code) = shell(port, "ulimit -n");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout.trim(),
        STARTED_WITH.to_string(),
        "a /shell child's limit"
    );
}

/// A server stopped however the test ends, a failed assertion included.
struct Stopped(Option<std::process::Child>);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(server) = self.0.take() {
            stop(server);
        }
    }
}

#[test]
fn the_engine_raises_its_limit_and_a_sandboxs_commands_get_the_one_it_started_with() {
    let hard = hard_limit();
    let fx = Fixture::new();
    // The engine the client starts inherits the client's limit.
    let mut create = fx.svc(["sandbox", "create"]);
    started_low(&mut create);
    let out = create.stdin(Stdio::null()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout).unwrap();
    let id = id.lines().next().unwrap();
    let engine = the_one_engine(fx.state_dir());
    assert_eq!(soft_limit_of(engine), hard, "the engine's own limit");
    let limit = fx.ok(["sandbox", "exec", id, "--shell", "ulimit -n"]);
    assert_eq!(
        limit.trim(),
        STARTED_WITH.to_string(),
        "a sandbox command's limit"
    );
}
