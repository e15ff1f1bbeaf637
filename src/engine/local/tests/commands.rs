//! Commands run and streamed, background processes, stdin, signals.

use super::*;
use crate::wire::CommandBody;
use serde_json::json;
use std::collections::BTreeMap;

fn shell(line: &str) -> CommandBody {
    CommandBody {
        cmd: line.into(),
        ..CommandBody::default()
    }
}

#[tokio::test]
async fn a_run_answers_output_and_exit_code_in_the_sandbox_s_own_environment() {
    let f = fixture();
    let (record, sandbox) = sandbox_with(
        &f,
        CreateSandbox {
            envs: Some(BTreeMap::from([("GREETING".into(), "hi".into())])),
            ..CreateSandbox::default()
        },
    )
    .await;
    let out = sandbox
        .run(shell("echo $GREETING; echo oops >&2; exit 3"))
        .await
        .unwrap();
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice()),
        (&b"hi\n"[..], &b"oops\n"[..])
    );
    assert_eq!((out.exit_code, out.timed_out), (3, false));
    assert!(out.pid > 1);

    // The engine's own environment never reaches a sandbox (cargo sets these for tests).
    let out = sandbox
        .run(shell(
            "echo \"[$CARGO_MANIFEST_DIR][$SVC_SANDBOX_ID]\"; pwd; echo $HOME",
        ))
        .await
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let home = f
        .dir
        .path()
        .join("sandboxes")
        .join(&record.sandbox_id)
        .join("root");
    let home = home.canonicalize().unwrap().display().to_string();
    assert_eq!(text, format!("[][{}]\n{home}\n{home}\n", record.sandbox_id));

    // A program with arguments runs without a shell; the command's env is added.
    let out = sandbox
        .run(CommandBody {
            cmd: "printf".into(),
            args: Some(vec!["%s|%s".into(), "$GREETING".into(), "a b".into()]),
            env: Some(BTreeMap::from([("GREETING".into(), "over".into())])),
            ..CommandBody::default()
        })
        .await
        .unwrap();
    assert_eq!(out.stdout, b"$GREETING|a b");
    let out = sandbox
        .run(shell("printf '%s' \"$GREETING\""))
        .await
        .unwrap();
    assert_eq!(out.stdout, b"hi", "a command's env is its own");
    let missing = sandbox
        .run(CommandBody {
            cmd: "no-such-program".into(),
            args: Some(vec![]),
            ..CommandBody::default()
        })
        .await;
    assert_eq!(code_of(missing), Code::InvalidArgument);
    let out = sandbox
        .run(CommandBody {
            stdin: Some("piped\n".into()),
            ..shell("cat")
        })
        .await
        .unwrap();
    assert_eq!(out.stdout, b"piped\n");
    end(&sandbox).await;
}

#[tokio::test]
async fn cwd_user_and_timeout() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    sandbox.run(shell("mkdir -p sub/dir")).await.unwrap();
    let out = sandbox
        .run(CommandBody {
            cwd: Some("sub/dir".into()),
            ..shell("pwd")
        })
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .trim_end()
            .ends_with("/root/sub/dir")
    );
    for (cwd, code) in [
        ("../", Code::PathNotAllowed),
        ("/tmp", Code::PathNotAllowed),
        ("missing", Code::FileNotFound),
    ] {
        let result = sandbox
            .run(CommandBody {
                cwd: Some(cwd.into()),
                ..shell("pwd")
            })
            .await;
        assert_eq!(code_of(result), code, "{cwd}");
    }
    let me = super::super::env::user_name();
    let ok = sandbox
        .run(CommandBody {
            user: Some(me.to_owned()),
            ..shell("true")
        })
        .await
        .unwrap();
    assert_eq!(ok.exit_code, 0);
    let e = sandbox
        .run(CommandBody {
            user: Some("someone-else".into()),
            ..shell("true")
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(e.message.contains(me), "{}", e.message);
    let started = std::time::Instant::now();
    let slow = sandbox
        .run(CommandBody {
            timeout: Some(1),
            ..shell("sleep 30")
        })
        .await
        .unwrap();
    assert!(slow.timed_out);
    assert_eq!(slow.exit_code, 128 + 15);
    assert!(started.elapsed() < Duration::from_secs(10));
    end(&sandbox).await;
}

#[tokio::test]
async fn a_background_process_outlives_its_command_and_is_listed() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let started = std::time::Instant::now();
    let out = sandbox
        .run(shell("sleep 300 & echo started"))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "answered promptly: {:?}",
        started.elapsed()
    );
    assert_eq!(
        (out.stdout.as_slice(), out.exit_code),
        (&b"started\n"[..], 0)
    );
    let listed = sandbox.processes().await.unwrap();
    let sleep = listed
        .iter()
        .find(|p| p.cmd == "sleep 300")
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(
        (sleep.tag.as_str(), sleep.state.as_str()),
        ("background", "sleeping")
    );
    assert_eq!(sleep.pgid, out.pid, "in the command's group");
    assert!(!sleep.stdin_open);
    assert_eq!(marked(&record.sandbox_id), vec![sleep.pid]);
    // A signal ends it, and only it.
    sandbox.signal(sleep.pid, 15).await.unwrap();
    assert!(
        eventually(Duration::from_secs(5), || marked(&record.sandbox_id)
            .is_empty())
        .await
    );
    assert!(sandbox.processes().await.unwrap().is_empty());
    end(&sandbox).await;
}

#[tokio::test]
async fn a_stream_starts_shows_output_in_order_and_exits() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let stream = sandbox
        .stream(shell(
            "echo one; sleep 0.1; echo two >&2; printf '\\377'; exit 3",
        ))
        .await
        .unwrap();
    let all: Vec<_> = events(stream)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let names: Vec<&str> = all.iter().map(|e| e.name).collect();
    assert_eq!(names.first(), Some(&"start"), "{all:?}");
    assert_eq!(names.last(), Some(&"exit"), "{all:?}");
    assert!(all[0].data["pid"].as_u64().unwrap() > 1);
    let stdout: Vec<_> = all.iter().filter(|e| e.name == "stdout").collect();
    assert_eq!(stdout[0].data, json!({"data": "one\n"}));
    assert_eq!(
        stdout.last().unwrap().data["data_b64"],
        "/w==",
        "{stdout:?}"
    );
    let two = all.iter().position(|e| e.name == "stderr").unwrap();
    assert!(two > 1, "stderr after the first stdout: {names:?}");
    assert_eq!(
        all.last().unwrap().data,
        json!({"exit_code": 3, "timed_out": false})
    );
    // A background child holding the pipes does not hold the stream open.
    let started = std::time::Instant::now();
    let stream = sandbox.stream(shell("sleep 300 & echo bye")).await.unwrap();
    let all: Vec<_> = events(stream)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(started.elapsed() < Duration::from_millis(1500));
    assert_eq!(all[1].data, json!({"data": "bye\n"}), "{all:?}");
    assert_eq!(all.last().unwrap().name, "exit");
    end(&sandbox).await;
}

#[tokio::test]
async fn stdin_reaches_a_streamed_command_until_it_is_closed() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let mut stream = sandbox.stream(shell("cat")).await.unwrap();
    let start = stream.next().await.unwrap().unwrap();
    let pid = start.data["pid"].as_u64().unwrap() as u32;
    let listed = sandbox.processes().await.unwrap();
    let cat = listed.iter().find(|p| p.pid == pid).unwrap();
    assert_eq!((cat.tag.as_str(), cat.stdin_open), ("command", true));
    sandbox
        .stdin(pid, b"hello\n".to_vec(), false)
        .await
        .unwrap();
    let echoed = stream.next().await.unwrap().unwrap();
    assert_eq!(
        (echoed.name, echoed.data["data"].as_str()),
        ("stdout", Some("hello\n"))
    );
    sandbox.stdin(pid, Vec::new(), true).await.unwrap();
    let rest: Vec<_> = events(stream)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rest.last().unwrap().data["exit_code"], 0, "{rest:?}");
    let closed = sandbox.stdin(pid, b"late".to_vec(), false).await;
    assert!(matches!(
        code_of(closed),
        Code::ProcessExited | Code::ProcessNotFound
    ));

    // A background process has no stdin to write.
    let out = sandbox.run(shell("sleep 300 & echo $!")).await.unwrap();
    let sleep: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let e = sandbox
        .stdin(sleep, b"x".to_vec(), false)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::ProcessExited);
    assert!(e.message.contains("stdin"), "{}", e.message);
    sandbox.kill_process(sleep).await.unwrap();
    assert!(proc_scan::stat(sleep).is_none_or(|s| s.is_dead()));
    end(&sandbox).await;
}

#[tokio::test]
async fn a_pid_outside_the_sandbox_is_never_signalled() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let (_, other) = sandbox_with(&f, CreateSandbox::default()).await;
    let mut stranger = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let out = other.run(shell("sleep 300 & echo $!")).await.unwrap();
    let neighbour: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    for pid in [stranger.id(), std::process::id(), neighbour, 1, u32::MAX] {
        assert_eq!(
            code_of(sandbox.signal(pid, 9).await),
            Code::ProcessNotFound,
            "{pid}"
        );
        assert_eq!(
            code_of(sandbox.kill_process(pid).await),
            Code::ProcessNotFound
        );
        assert_eq!(
            code_of(sandbox.stdin(pid, b"x".to_vec(), false).await),
            Code::ProcessNotFound
        );
    }
    assert_eq!(
        proc_scan::stat(stranger.id()).map(|s| s.is_dead()),
        Some(false)
    );
    assert_eq!(proc_scan::stat(neighbour).map(|s| s.is_dead()), Some(false));
    stranger.kill().unwrap();
    stranger.wait().unwrap();
    end(&sandbox).await;
    end(&other).await;
}
