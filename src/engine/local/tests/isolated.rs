//! An isolated sandbox (`isolation: namespaces`) through the provider: the machine's paths for
//! commands and files alike, `user` and `root`, and an end that leaves no process.
//! Said and skipped where this machine cannot make namespaces.

use super::{conn, fixture};
use crate::engine::provider::Provider;
use crate::error::engine::Code;
use crate::services::namespaces::{self, Support};
use crate::wire::{CommandBody, CreateSandbox, Isolation, MkdirBody};

fn shell(line: &str, user: Option<&str>) -> CommandBody {
    CommandBody {
        cmd: line.into(),
        user: user.map(str::to_owned),
        ..CommandBody::default()
    }
}

/// An isolated sandbox of account `a` and its handle; `None`, said, where this machine
/// cannot make namespaces.
async fn isolated_sandbox(
    f: &super::Fixture,
) -> Option<(
    crate::wire::SandboxRecord,
    std::sync::Arc<dyn crate::engine::provider::Sandbox>,
)> {
    if let Support::Unavailable(why) = namespaces::support().await {
        eprintln!("no namespaces on this machine, not tried: {why}");
        return None;
    }
    let record = f
        .provider
        .create(
            &conn("a"),
            CreateSandbox {
                isolation: Some(Isolation::Namespaces),
                timeout: Some(60),
                ..CreateSandbox::default()
            },
        )
        .await
        .unwrap();
    let sandbox = f
        .provider
        .connect(&conn("a"), &record.sandbox_id)
        .await
        .unwrap();
    Some((record, sandbox))
}

#[tokio::test]
async fn an_isolated_sandbox_has_one_tree_for_commands_and_files() {
    let f = fixture();
    let Some((record, sandbox)) = isolated_sandbox(&f).await else {
        return;
    };
    assert_eq!(record.isolation, Some(Isolation::Namespaces));
    let made = sandbox
        .mkdir(MkdirBody {
            path: "/tmp/made/deep".into(),
            parents: Some(true),
        })
        .await
        .unwrap();
    assert_eq!(made.path, "/tmp/made/deep");
    // Owned as the machine names its owners (what `ls -l` inside says).
    let names = |e: &crate::wire::EntryInfo| (e.owner.clone(), e.group.clone());
    let user = Some("user".to_owned());
    assert_eq!(names(&made), (user.clone(), user.clone()));
    // A file written into new folders: the file and the folders made for it are the user's.
    let body: crate::engine::provider::ByteStream =
        Box::pin(futures::stream::iter([Ok(bytes::Bytes::from_static(b"x"))]));
    let query = crate::wire::WriteQuery {
        path: Some("/tmp/w/x/f.txt".into()),
        ..crate::wire::WriteQuery::default()
    };
    let written = sandbox.write_file(query, body).await.unwrap();
    assert_eq!(names(&written), (user.clone(), user.clone()));
    let folder = sandbox.file_info("/tmp/w").await.unwrap();
    assert_eq!(
        names(&folder),
        (user.clone(), user.clone()),
        "its new folders too"
    );
    let out = sandbox
        .run(shell(
            "pwd; id -un; touch /tmp/made/deep/f /tmp/w/x/g && echo writable",
            None,
        ))
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "/home/user\nuser\nwritable\n",
        "{out:?}"
    );
    let root = sandbox.run(shell("id -u", Some("root"))).await.unwrap();
    assert_eq!(root.stdout, b"0\n");
    sandbox
        .run(shell("touch /tmp/by-root", Some("root")))
        .await
        .unwrap();
    let by_root = sandbox.file_info("/tmp/by-root").await.unwrap();
    let root_name = Some("root".to_owned());
    assert_eq!(names(&by_root), (root_name.clone(), root_name));
    let refused = sandbox.run(shell("id", Some("nobody"))).await.unwrap_err();
    assert_eq!(refused.code, Code::InvalidArgument);
    assert!(refused.message.contains("`user`"), "{}", refused.message);
    let outside = sandbox.file_info("/etc/passwd").await.unwrap_err();
    assert_eq!(outside.code, Code::PathNotAllowed);
    assert!(
        !outside.message.contains("sandboxes/"),
        "{}",
        outside.message
    );
    // Found on the host by a word of its command line: the API's pids are the sandbox's own
    // numbering, not the host's.
    let word = format!("300.{}", std::process::id());
    sandbox
        .run(shell(&format!("sleep {word} >/dev/null 2>&1 &"), None))
        .await
        .unwrap();
    let listed = sandbox.processes().await.unwrap();
    assert!(
        listed.iter().any(|p| p.cmd == format!("sleep {word}")),
        "{listed:?}"
    );
    let line = format!("sleep {word}");
    assert!(!on_host(&line).is_empty(), "the sleep runs on the host");
    sandbox.kill().await.unwrap();
    assert_eq!(on_host(&line), Vec::<u32>::new(), "outlived its sandbox");
}

/// The host's live processes whose command line is `line`.
fn on_host(line: &str) -> Vec<u32> {
    use crate::services::proc_scan;
    proc_scan::pids()
        .into_iter()
        .filter(|pid| proc_scan::cmdline(*pid) == line)
        .filter(|pid| proc_scan::stat(*pid).is_some_and(|s| !s.is_dead()))
        .collect()
}

/// A sandbox whose machine died underneath it (its init killed from outside) is ended, as
/// a kill ends it, and touches no other sandbox. The kernel often gives the dead machine's
/// pid-namespace number to the next machine made (here the second sandbox's); that the
/// number alone never claims another machine's processes is proven without luck by
/// `namespaces::tests::a_dead_machine_owns_nothing_of_the_machine_with_its_number`.
#[tokio::test]
async fn a_sandbox_whose_machine_died_is_ended_and_harms_no_other() {
    if let Support::Unavailable(why) = namespaces::support().await {
        eprintln!("no namespaces on this machine, not tried: {why}");
        return;
    }
    let f = fixture();
    let isolated = || CreateSandbox {
        isolation: Some(Isolation::Namespaces),
        timeout: Some(60),
        ..CreateSandbox::default()
    };
    let first = f.provider.create(&conn("a"), isolated()).await.unwrap();
    let first_handle = f
        .provider
        .connect(&conn("a"), &first.sandbox_id)
        .await
        .unwrap();
    let stored =
        crate::engine::local::store::load(&f.dir.path().join("sandboxes").join(&first.sandbox_id))
            .unwrap();
    let machine = stored.machine.expect("an isolated sandbox has a machine");
    crate::services::proc_scan::signal(machine.pid, nix::sys::signal::Signal::SIGKILL);
    for _ in 0..200 {
        if !machine.alive() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(!machine.alive(), "the first machine's init did not end");

    let second = f.provider.create(&conn("a"), isolated()).await.unwrap();
    let second_handle = f
        .provider
        .connect(&conn("a"), &second.sandbox_id)
        .await
        .unwrap();
    let word = format!("sleep 301.{}", std::process::id());
    second_handle
        .run(shell(&format!("{word} >/dev/null 2>&1 &"), None))
        .await
        .unwrap();
    assert_eq!(on_host(&word).len(), 1, "the second sandbox's sleep runs");

    if let Ok(listed) = first_handle.processes().await {
        assert!(
            listed.iter().all(|p| p.cmd != word),
            "the first sandbox lists the second's process: {listed:?}"
        );
    }
    // Ended by the engine as its init exits (its pidfd), without a kill from anyone.
    let mut answer = first_handle.run(shell("true", None)).await;
    for _ in 0..40 {
        if answer.is_err() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        answer = first_handle.run(shell("true", None)).await;
    }
    let ended = answer.expect_err("a sandbox whose machine died still runs commands");
    assert_eq!(ended.code, Code::SandboxNotFound, "{}", ended.message);
    assert_eq!(
        on_host(&word).len(),
        1,
        "the first sandbox's end killed the second's process"
    );
    let still = second_handle.run(shell("echo alive", None)).await.unwrap();
    assert_eq!(still.stdout, b"alive\n");
    second_handle.kill().await.unwrap();
}

/// Every process of an isolated sandbox is born in its cgroup, never moved there after it
/// started: the machine's init and its keeper, a command's background child, a code
/// context's interpreter and a terminal's shell (each joins between fork and exec; a v1
/// hierarchy by the one thread it has, `tasks`). Said and skipped without cgroups.
#[tokio::test]
async fn every_process_of_an_isolated_sandbox_is_born_in_its_cgroup() {
    if let crate::services::cgroup::Support::Unavailable(why) = crate::services::cgroup::detect() {
        eprintln!("no cgroups for sandboxes on this machine, not tried: {why}");
        return;
    }
    let f = fixture();
    let Some((record, sandbox)) = isolated_sandbox(&f).await else {
        return;
    };
    let word = format!("sleep 303.{}", std::process::id());
    sandbox
        .run(shell(&format!("{word} >/dev/null 2>&1 &"), None))
        .await
        .unwrap();
    let context = sandbox
        .context_create(crate::wire::CreateContext {
            language: Some("bash".into()),
            cwd: None,
        })
        .await
        .unwrap();
    let _terminal = sandbox
        .terminal(&crate::engine::provider::TerminalOpen {
            cols: 80,
            rows: 24,
            shell: "/bin/sh".into(),
            user: None,
            args: Vec::new(),
            env: Default::default(),
            cwd: None,
        })
        .await
        .unwrap();
    let stored =
        crate::engine::local::store::load(&f.dir.path().join("sandboxes").join(&record.sandbox_id))
            .unwrap();
    let machine = stored.machine.expect("a machine");
    let primary = stored.cgroup.expect("a cgroup");
    let members: Vec<u32> = std::fs::read_to_string(primary.join("cgroup.procs"))
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let live = sandbox.host_pids().await.unwrap().unwrap();
    let processes = sandbox.processes().await.unwrap();
    assert!(
        processes.iter().any(|p| p.cmd == word) && processes.iter().any(|p| p.tag == "code"),
        "a background sleep and an interpreter run: {processes:?}"
    );
    assert!(
        processes.iter().any(|p| p.tag == "terminal"),
        "a terminal's shell runs: {processes:?}"
    );
    for pid in live.iter().chain([&machine.pid, &machine.keeper]) {
        assert!(
            members.contains(pid),
            "process {pid} ({}) is not in the sandbox's cgroup {members:?}",
            crate::services::proc_scan::cmdline(*pid)
        );
    }
    sandbox.context_delete(&context.context_id).await.unwrap();
    sandbox.kill().await.unwrap();
    assert_eq!(on_host(&word), Vec::<u32>::new(), "outlived its sandbox");
}
