use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PATH: (&str, &str) = ("PATH", "/usr/local/bin:/usr/bin:/bin");

async fn read_all(pipe: Option<pipe::Receiver>) -> String {
    let mut text = String::new();
    pipe.expect("piped")
        .read_to_string(&mut text)
        .await
        .unwrap();
    text
}

fn sh(line: &str) -> Command {
    let mut command = Command::new("sh");
    command
        .args(["-c", line])
        .envs([PATH])
        .stdout(Io::Piped)
        .stderr(Io::Piped);
    command
}

#[tokio::test]
async fn a_child_runs_with_its_streams_and_ends_with_its_status() {
    let mut command = sh("read line; echo \"out $line\"; echo err >&2; exit 3");
    command.stdin(Io::Piped);
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"in\n").await.unwrap();
    drop(stdin);
    assert_eq!(read_all(child.stdout.take()).await, "out in\n");
    assert_eq!(read_all(child.stderr.take()).await, "err\n");
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(3));
    // Reaped once; asked again, the same answer.
    assert_eq!(child.wait().await.unwrap().code(), Some(3));
}

#[tokio::test]
async fn the_environment_is_exactly_the_one_given() {
    let mut command = Command::new("/usr/bin/env");
    command
        .envs([("ONLY", "this")])
        .stdout(Io::Piped)
        .stderr(Io::Piped);
    let mut child = command.spawn().unwrap();
    assert_eq!(read_all(child.stdout.take()).await, "ONLY=this\n");
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn a_bare_name_is_looked_for_in_the_childs_path_and_a_missing_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("only-here");
    std::fs::write(&program, "#!/bin/sh\necho found\n").unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&program).unwrap().permissions(),
        0o755,
    );
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!("/nowhere:{}", dir.path().display());
    let mut command = Command::new("only-here");
    command.envs([("PATH", path.as_str())]).stdout(Io::Piped);
    let mut child = command.spawn().unwrap();
    assert_eq!(read_all(child.stdout.take()).await, "found\n");
    assert!(child.wait().await.unwrap().success());

    let error = Command::new("only-here").envs([PATH]).spawn().unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
}

#[tokio::test]
async fn a_file_that_is_no_program_runs_as_a_shell_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script");
    std::fs::write(&script, "echo \"script $1\"\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut command = Command::new(&script);
    command.args(["arg"]).envs([PATH]).stdout(Io::Piped);
    let mut child = command.spawn().unwrap();
    assert_eq!(read_all(child.stdout.take()).await, "script arg\n");
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn a_failing_step_fails_the_spawn_and_leaves_no_child() {
    let mut command = sh("echo never");
    command.current_dir("/no/such/dir");
    let error = command.spawn().unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
    let mut command = Command::new("/usr/bin/true");
    command.args(["a\0b"]);
    assert_eq!(
        command.spawn().unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
}

#[tokio::test]
async fn the_child_works_in_its_directory_and_leads_its_own_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = sh("pwd; ps -o pgid= -p $$");
    command.current_dir(dir.path()).process_group();
    let mut child = command.spawn().unwrap();
    let pid = child.id();
    let out = read_all(child.stdout.take()).await;
    let mut lines = out.lines();
    assert_eq!(
        lines.next().map(std::path::PathBuf::from),
        Some(dir.path().canonicalize().unwrap())
    );
    assert_eq!(lines.next().map(str::trim), Some(pid.to_string().as_str()));
    assert!(child.wait().await.unwrap().success());
}

/// The parent ignores SIGPIPE (as every Rust program does) and blocks nothing here, but the
/// clone ran with every signal blocked: the program starts with none blocked and SIGPIPE
/// at its default.
#[tokio::test]
async fn the_program_starts_with_no_signal_blocked_and_sigpipe_at_its_default() {
    let mut command = Command::new("grep");
    command
        .args(["-E", "^Sig(Blk|Ign)", "/proc/self/status"])
        .envs([PATH])
        .stdout(Io::Piped);
    let mut child = command.spawn().unwrap();
    let out = read_all(child.stdout.take()).await;
    assert!(child.wait().await.unwrap().success());
    let mask = |name: &str| {
        let line = out.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    assert_eq!(mask("SigBlk:"), 0, "{out}");
    assert_eq!(mask("SigIgn:") & (1 << (libc_sigpipe() - 1)), 0, "{out}");
}

fn libc_sigpipe() -> i32 {
    nix::libc::SIGPIPE
}

/// A child that shares the parent's memory changes its ids for itself alone: the parent's
/// threads keep theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_changes_its_ids_leaves_the_parents_threads_as_they_were() {
    let before = thread_ids();
    let mut command = Command::new("/usr/bin/id");
    command.args(["-u"]).ids(65534, 65534).stdout(Io::Piped);
    let mut child = command.spawn().unwrap();
    let uid = read_all(child.stdout.take()).await;
    assert!(child.wait().await.unwrap().success());
    if rustix::process::getuid().is_root() {
        assert_eq!(uid.trim(), "65534");
    }
    assert_eq!(thread_ids(), before);
}

/// The `Uid:` and `Gid:` lines of every thread of this process.
fn thread_ids() -> Vec<String> {
    let mut ids = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let status =
            std::fs::read_to_string(task.unwrap().path().join("status")).unwrap_or_default();
        ids.extend(
            status
                .lines()
                .filter(|l| {
                    l.starts_with("Uid:") || l.starts_with("Gid:") || l.starts_with("Groups:")
                })
                .map(str::to_owned),
        );
    }
    ids.sort();
    ids.dedup();
    ids
}

#[tokio::test]
async fn a_child_dropped_unreaped_is_killed_and_reaped() {
    let child = sh("sleep 100").spawn().unwrap();
    let pid = child.id();
    drop(child);
    let stat = format!("/proc/{pid}/stat");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::path::Path::new(&stat).exists() {
        assert!(std::time::Instant::now() < deadline, "{pid} still there");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spawns_at_once_on_several_threads_never_share_a_stack() {
    // Many spawns at once, on several threads: were two children given one stack, one
    // would write over the other's frames and start the wrong program or none.
    let spawns = (0..48).map(|n| {
        tokio::spawn(async move {
            let mut child = sh(&format!("echo {n}")).spawn().unwrap();
            let out = read_all(child.stdout.take()).await;
            assert!(child.wait().await.unwrap().success());
            out
        })
    });
    let outs = futures::future::join_all(spawns).await;
    for (n, out) in outs.into_iter().enumerate() {
        assert_eq!(out.unwrap(), format!("{n}\n"));
    }
    // A kept stack serves a child whose step fails, and the next child after it.
    let mut failing = sh("echo never");
    failing.current_dir("/no/such/directory");
    assert!(failing.spawn().is_err());
    let mut child = sh("echo after").spawn().unwrap();
    assert_eq!(read_all(child.stdout.take()).await, "after\n");
}

/// The CPUs `pid` may run on (0: this thread).
fn cpus(pid: i32) -> Vec<usize> {
    use nix::sched::{CpuSet, sched_getaffinity};
    let set = sched_getaffinity(nix::unistd::Pid::from_raw(pid)).unwrap();
    (0..CpuSet::count())
        .filter(|cpu| set.is_set(*cpu).unwrap_or(false))
        .collect()
}

/// The child is kept off its parent's CPU only until it has exec'd: a child left with
/// fewer CPUs, or a server thread left on one, would be slower for its whole life.
#[tokio::test]
async fn parent_and_child_have_all_of_the_servers_cpus_once_the_child_runs() {
    let before = cpus(0);
    let mut command = sh("cat");
    command.stdin(Io::Piped).apart();
    let mut child = command.spawn().unwrap();
    assert_eq!(cpus(0), before, "the spawning thread kept fewer CPUs");
    assert_eq!(
        cpus(child.id() as i32),
        before,
        "the child kept fewer CPUs than the server has"
    );
    drop(child.stdin.take());
    assert!(child.wait().await.unwrap().success());
}

/// The attack on the placement: a program that starts another at once, before its spawner
/// has run again. What it starts must have every CPU the server has, which only the
/// child's own give-back before its exec ensures (the spawner's would come too late).
#[tokio::test]
async fn what_a_child_starts_at_once_has_all_of_the_servers_cpus() {
    let before = cpus(0);
    let mut command = sh("grep Cpus_allowed_list /proc/self/status");
    command.apart();
    let mut child = command.spawn().unwrap();
    let seen = read_all(child.stdout.take()).await;
    assert!(child.wait().await.unwrap().success());
    let list = seen
        .trim()
        .rsplit('\t')
        .next()
        .unwrap_or_default()
        .to_owned();
    let expected = before
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    // The kernel writes runs as `a-b`: compared as the CPUs they name.
    let named: Vec<usize> = list
        .split(',')
        .flat_map(|run| match run.split_once('-') {
            Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<usize>>(),
            None => vec![run.parse().unwrap()],
        })
        .collect();
    assert_eq!(
        named, before,
        "what the child started ran on {list}, not {expected}"
    );
}
