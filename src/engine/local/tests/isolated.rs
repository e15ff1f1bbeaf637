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

#[tokio::test]
async fn an_isolated_sandbox_has_one_tree_for_commands_and_files() {
    if let Support::Unavailable(why) = namespaces::support().await {
        eprintln!("no namespaces on this machine, not tried: {why}");
        return;
    }
    let f = fixture();
    let record = f
        .provider
        .create(
            &conn("a"),
            CreateSandbox {
                isolation: Some(Isolation::Namespaces),
                ..CreateSandbox::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(record.isolation, Some(Isolation::Namespaces));
    let sandbox = f
        .provider
        .connect(&conn("a"), &record.sandbox_id)
        .await
        .unwrap();
    let made = sandbox
        .mkdir(MkdirBody {
            path: "/tmp/made/deep".into(),
            parents: Some(true),
        })
        .await
        .unwrap();
    assert_eq!(made.path, "/tmp/made/deep");
    let out = sandbox
        .run(shell(
            "pwd; id -un; touch /tmp/made/deep/f && echo writable",
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
    let on_host = || {
        crate::services::proc_scan::pids()
            .into_iter()
            .filter(|pid| crate::services::proc_scan::cmdline(*pid) == format!("sleep {word}"))
            .filter(|pid| crate::services::proc_scan::stat(*pid).is_some_and(|s| !s.is_dead()))
            .collect::<Vec<u32>>()
    };
    assert!(!on_host().is_empty(), "the sleep runs on the host");
    sandbox.kill().await.unwrap();
    assert_eq!(on_host(), Vec::<u32>::new(), "outlived its sandbox");
}
