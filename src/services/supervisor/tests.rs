use super::*;
use std::time::Duration;

fn sh(script: &str, timeout_ms: u64) -> Spec {
    Spec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: None,
        env: vec![("GREETING".into(), "hi".into())],
        limits: Limits {
            timeout: Some(Duration::from_millis(timeout_ms)),
            output_bytes: 8,
            ..Limits::default()
        },
        ..Spec::default()
    }
}

fn script(script: &str) -> Spec {
    Spec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        ..Spec::default()
    }
}

/// The state letter of `/proc/<pid>/stat`, `None` when there is no such process.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ").and_then(|(_, s)| s.chars().next())
}

/// Gone, or at most a zombie of init (never running).
fn assert_not_running(pid: u32) {
    let state = proc_state(pid);
    assert!(
        matches!(state, None | Some('Z') | Some('X')),
        "{pid}: {state:?}"
    );
}

/// Reads the pid a script wrote to `path`, waiting for it to appear.
async fn read_pid(path: &std::path::Path) -> u32 {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pid in {}", path.display());
}

#[tokio::test]
async fn captures_output_exit_code_and_env() {
    let out = run(&sh("echo $GREETING; echo oops >&2; exit 3", 5000))
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.stdout.text(), "hi\n");
    assert_eq!(out.stderr.text(), "oops\n");
    assert!(!out.timed_out);
}

#[tokio::test]
async fn the_server_environment_is_not_inherited() {
    let out = run(&Spec {
        limits: Limits::default(),
        ..sh("echo \"[$HOME][$CARGO]\"", 5000)
    })
    .await
    .unwrap();
    assert_eq!(out.stdout.text(), "[][]\n");
}

#[tokio::test]
async fn output_is_capped_not_blocked() {
    let out = run(&sh("head -c 200000 /dev/zero", 5000)).await.unwrap();
    assert_eq!(out.stdout.bytes.len(), 8);
    assert!(out.stdout.truncated);
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test]
async fn a_capped_run_keeps_the_first_bytes() {
    let out = run(&sh("echo 0123456789abcdef", 5000)).await.unwrap();
    assert_eq!(out.stdout.text(), "01234567");
    assert!(out.stdout.truncated);
}

#[tokio::test]
async fn streaming_lines_arrive_while_the_child_runs_and_stop_ends_the_group() {
    let spec = script("echo warn >&2; echo one; echo two; sleep 30 & wait");
    let mut child = Streaming::spawn(&spec).unwrap();
    assert_eq!(
        child.next_line().await.map(|l| l.text).as_deref(),
        Some("one")
    );
    assert_eq!(
        child.next_line().await.map(|l| l.text).as_deref(),
        Some("two")
    );
    let status = child.stop().await.unwrap();
    assert_eq!(signal_of(status), Some(15));
    assert_eq!(
        child.next_line().await,
        None,
        "stdout closed with the group"
    );
    assert_eq!(child.stderr_tail(), "warn");
}

/// The turn reads lines in a `select!` beside its stop and its deadline, so a read may be
/// dropped half-way through a line: the part already read is kept for the next one.
#[tokio::test]
async fn a_line_read_half_way_and_dropped_is_whole_at_the_next_read() {
    let spec = script("printf hel; sleep 0.3; printf 'lo\\n'; echo next");
    let mut child = Streaming::spawn(&spec).unwrap();
    let mut dropped = 0;
    let line = loop {
        match tokio::time::timeout(Duration::from_millis(20), child.next_line()).await {
            Ok(line) => break line,
            Err(_) => dropped += 1,
        }
    };
    assert!(
        dropped > 0,
        "a read was dropped while the line was half read"
    );
    assert_eq!(line.map(|l| l.text).as_deref(), Some("hello"));
    assert_eq!(
        child.next_line().await.map(|l| l.text).as_deref(),
        Some("next")
    );
    assert_eq!(child.next_line().await, None);
}

#[tokio::test]
async fn streaming_reads_stdin_and_huge_lines() {
    let spec = Spec {
        stdin: Some("from stdin\n".to_owned()).into(),
        ..script("cat; head -c 3000000 /dev/zero | tr '\\0' x; echo")
    };
    let mut child = Streaming::spawn(&spec).unwrap();
    assert_eq!(
        child.next_line().await.map(|l| l.text).as_deref(),
        Some("from stdin")
    );
    let long = child.next_line().await.unwrap();
    assert_eq!((long.text.len(), long.cut), (3_000_000, false));
    assert_eq!(child.next_line().await, None);
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn a_line_over_the_limit_is_cut_marked_and_the_next_line_still_arrives() {
    let spec = Spec {
        limits: Limits {
            max_line_bytes: 1024,
            ..Limits::default()
        },
        ..script("head -c 5000 /dev/zero | tr '\\0' x; echo; echo after")
    };
    let mut child = Streaming::spawn(&spec).unwrap();
    let cut = child.next_line().await.unwrap();
    assert_eq!((cut.text.len(), cut.cut), (1024, true));
    assert_eq!(
        child.next_line().await.map(|l| (l.text, l.cut)),
        Some(("after".into(), false))
    );
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn the_stderr_tail_is_the_last_bytes() {
    let spec = Spec {
        limits: Limits {
            output_bytes: STDERR_TAIL_BYTES,
            ..Limits::default()
        },
        ..script("head -c 20000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last words >&2")
    };
    let mut child = Streaming::spawn(&spec).unwrap();
    assert_eq!(child.next_line().await, None);
    assert!(child.wait().await.unwrap().success());
    let tail = child.stderr_tail();
    assert!(
        tail.ends_with("x\nlast words"),
        "{}",
        &tail[tail.len() - 20..]
    );
    assert_eq!(
        tail.len(),
        STDERR_TAIL_BYTES - 1,
        "trimmed of its last newline only"
    );
}

#[tokio::test]
async fn timeout_stops_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("grandchild.pid");
    let script = format!("sleep 30 & echo $! > {}; wait", marker.display());
    let out = run(&sh(&script, 300)).await.unwrap();
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(15));
    let pid = read_pid(&marker).await;
    // The grandchild was in the group: it is gone (or a zombie of init, never running).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_not_running(pid);
}

// Rings.

#[test]
fn a_ring_keeps_the_newest_bytes_and_replays_from_an_offset() {
    let mut ring = ring::Ring::new(8, Retention::Newest);
    ring.write(b"0123");
    assert_eq!(ring.read_from(0).bytes, b"0123");
    ring.write(b"456789");
    let all = ring.read_from(0);
    assert_eq!(
        (all.offset, all.bytes.as_slice(), all.dropped, all.total),
        (2, &b"23456789"[..], 2, 10)
    );
    let since = ring.read_from(5);
    assert_eq!(
        (since.offset, since.bytes.as_slice(), since.dropped),
        (5, &b"56789"[..], 0)
    );
    let none = ring.read_from(10);
    assert!(none.bytes.is_empty() && none.dropped == 0 && !none.closed);
    ring.write(b"abcdefghijklmnop");
    let big = ring.read_from(3);
    assert_eq!(
        (big.offset, big.bytes.as_slice(), big.dropped),
        (18, &b"ijklmnop"[..], 15)
    );
    assert!(!big.truncated());
    ring.close();
    assert!(ring.read_from(26).closed);
    assert_eq!(ring.tail(3), b"nop");
}

#[test]
fn a_first_bytes_ring_counts_what_it_drops() {
    let mut ring = ring::Ring::new(4, Retention::First);
    ring.write(b"0123456789");
    let all = ring.read_from(0);
    assert_eq!((all.bytes.as_slice(), all.total), (&b"0123"[..], 10));
    assert!(all.truncated());
    assert_eq!(ring.read_from(2).bytes, b"23");
    assert!(ring.read_from(7).bytes.is_empty());
}

#[tokio::test]
async fn a_process_ring_is_bounded_with_a_dropped_count() {
    let registry = Registry::default();
    let spec = Spec {
        limits: Limits {
            output_bytes: 1000,
            ..Limits::default()
        },
        ..script("head -c 100000 /dev/zero | tr '\\0' a; printf end")
    };
    let record = registry.start("alice", &spec, "test").unwrap();
    registry.process("alice", record.pid).unwrap().wait().await;
    let out = registry.output("alice", record.pid).unwrap();
    assert_eq!(out.stdout.total, 100_003);
    assert_eq!(out.stdout.bytes.len(), 1000);
    assert_eq!(out.stdout.dropped, 99_003);
    assert!(out.stdout.bytes.ends_with(b"aaend"));
    assert!(out.stdout.closed);
    let handle = registry.process("alice", record.pid).unwrap();
    let since = handle.output(Stream::Stdout, 99_999);
    assert_eq!(
        (since.offset, since.bytes.as_slice(), since.dropped),
        (99_999, &b"aend"[..], 0)
    );
}

#[tokio::test]
async fn stdout_and_stderr_are_kept_apart_and_in_order() {
    let registry = Registry::default();
    let spec = script("echo o1; echo e1 >&2; echo o2; echo e2 >&2; echo o3");
    let record = registry.start("alice", &spec, "test").unwrap();
    registry.process("alice", record.pid).unwrap().wait().await;
    let out = registry.output("alice", record.pid).unwrap();
    assert_eq!(out.stdout.bytes, b"o1\no2\no3\n");
    assert_eq!(out.stderr.bytes, b"e1\ne2\n");
}

#[tokio::test]
async fn non_utf8_output_survives_byte_exact() {
    let registry = Registry::default();
    let spec = script("printf '\\377\\376\\000\\200ok'; printf '\\300\\001' >&2");
    let record = registry.start("alice", &spec, "test").unwrap();
    registry.process("alice", record.pid).unwrap().wait().await;
    let out = registry.output("alice", record.pid).unwrap();
    assert_eq!(out.stdout.bytes, [0xff, 0xfe, 0x00, 0x80, b'o', b'k']);
    assert_eq!(out.stderr.bytes, [0xc0, 0x01]);
    let run = run(&script("printf '\\377\\000\\376'")).await.unwrap();
    assert_eq!(run.stdout.bytes, [0xff, 0x00, 0xfe]);
}

#[tokio::test]
async fn a_reader_follows_the_output_as_it_arrives() {
    let registry = Registry::default();
    let spec = script("for i in 1 2 3; do echo $i; echo err$i >&2; sleep 0.05; done; exit 4");
    let record = registry.start("alice", &spec, "test").unwrap();
    let handle = registry.process("alice", record.pid).unwrap();
    let mut changed = handle.subscribe();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut wakeups = 0;
    let exit = loop {
        let o = handle.output(Stream::Stdout, out.len() as u64);
        let e = handle.output(Stream::Stderr, err.len() as u64);
        assert_eq!((o.dropped, e.dropped), (0, 0));
        out.extend(o.bytes);
        err.extend(e.bytes);
        if let Some(exit) = handle.exit() {
            break exit;
        }
        changed.changed().await.unwrap();
        wakeups += 1;
    };
    assert_eq!(out, b"1\n2\n3\n");
    assert_eq!(err, b"err1\nerr2\nerr3\n");
    assert_eq!(exit.code(), Some(4));
    assert!(wakeups >= 3, "woken as output arrived ({wakeups})");
}

// Stdin.

#[tokio::test]
async fn stdin_is_a_stream_written_while_the_child_runs() {
    let registry = Registry::default();
    let spec = Spec {
        program: "cat".into(),
        stdin: Stdin::Stream,
        ..Spec::default()
    };
    let record = registry.start("alice", &spec, "test").unwrap();
    let pid = record.pid;
    registry
        .stdin("alice", pid, b"first\n", false)
        .await
        .unwrap();
    registry
        .stdin("alice", pid, b"second\n", false)
        .await
        .unwrap();
    assert_eq!(registry.get("alice", pid).unwrap().status, Status::Running);
    registry.stdin("alice", pid, b"", true).await.unwrap();
    assert!(matches!(
        registry.stdin("alice", pid, b"late", false).await,
        Err(Error::StdinClosed | Error::Exited)
    ));
    let exit = registry.process("alice", pid).unwrap().wait().await;
    assert_eq!(exit.code(), Some(0));
    assert_eq!(
        registry.output("alice", pid).unwrap().stdout.bytes,
        b"first\nsecond\n"
    );
    assert!(matches!(
        registry.stdin("alice", pid, b"after exit", false).await,
        Err(Error::Exited)
    ));
}

#[tokio::test]
async fn stdin_closed_on_request_is_a_typed_error_while_running() {
    let registry = Registry::default();
    let spec = Spec {
        stdin: Stdin::Stream,
        ..script("cat; sleep 30")
    };
    let pid = registry.start("alice", &spec, "test").unwrap().pid;
    registry.stdin("alice", pid, b"x", true).await.unwrap();
    assert!(matches!(
        registry.stdin("alice", pid, b"y", false).await,
        Err(Error::StdinClosed)
    ));
    // Without a stream, stdin is closed from the start.
    let closed = registry
        .start("alice", &script("sleep 30"), "test")
        .unwrap()
        .pid;
    assert!(matches!(
        registry.stdin("alice", closed, b"y", false).await,
        Err(Error::StdinClosed)
    ));
    registry.shutdown().await;
}

// The registry.

#[tokio::test]
async fn another_owners_pid_is_indistinguishable_from_a_missing_one() {
    let registry = Registry::default();
    let spec = Spec {
        stdin: Stdin::Stream,
        ..script("sleep 30")
    };
    let pid = registry.start("alice", &spec, "test").unwrap().pid;
    assert_eq!(registry.list("alice").len(), 1);
    assert!(registry.list("bob").is_empty());
    assert!(matches!(registry.get("bob", pid), Err(Error::NotFound)));
    assert!(matches!(registry.get("bob", 1), Err(Error::NotFound)));
    assert!(matches!(registry.output("bob", pid), Err(Error::NotFound)));
    assert!(matches!(registry.process("bob", pid), Err(Error::NotFound)));
    assert!(matches!(
        registry.signal("bob", pid, Signal::Kill),
        Err(Error::NotFound)
    ));
    assert!(matches!(
        registry.stdin("bob", pid, b"x", true).await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        registry.kill("bob", pid).await,
        Err(Error::NotFound)
    ));
    assert_eq!(registry.get("alice", pid).unwrap().status, Status::Running);
    let record = registry.kill("alice", pid).await.unwrap();
    assert_eq!((record.status, record.signal), (Status::Exited, Some(15)));
}

#[tokio::test]
async fn an_exited_process_stays_listed_with_its_record_and_output() {
    let registry = Registry::default();
    let mut spec = script("echo done; exit 7");
    spec.cwd = Some(std::env::temp_dir());
    let started = registry.start("alice", &spec, "job").unwrap();
    assert_eq!(started.status, Status::Running);
    assert_eq!((started.cmd.as_str(), started.tag.as_str()), ("sh", "job"));
    registry.process("alice", started.pid).unwrap().wait().await;
    let listed = registry.list("alice");
    assert_eq!(listed.len(), 1);
    let record = &listed[0];
    assert_eq!(record, &registry.get("alice", started.pid).unwrap());
    assert_eq!(
        (record.status, record.exit_code, record.signal),
        (Status::Exited, Some(7), None)
    );
    assert_eq!(
        record.args,
        Some(vec!["-c".to_owned(), "echo done; exit 7".to_owned()])
    );
    assert_eq!(record.cwd, Some(std::env::temp_dir()));
    assert!(record.ended_at.unwrap() >= record.started_at);
    assert_eq!(
        registry.output("alice", started.pid).unwrap().stdout.bytes,
        b"done\n"
    );
    // Signals go to running processes only; kill is a no-op.
    assert!(matches!(
        registry.signal("alice", started.pid, Signal::Term),
        Err(Error::Exited)
    ));
    assert_eq!(&registry.kill("alice", started.pid).await.unwrap(), record);
}

#[tokio::test]
async fn exited_processes_are_kept_in_bounded_numbers_per_owner() {
    let registry = Registry::new(RegistryConfig {
        keep_exited: 2,
        ..RegistryConfig::default()
    });
    let mut pids = Vec::new();
    for _ in 0..4 {
        let pid = registry.start("alice", &script("true"), "t").unwrap().pid;
        registry.process("alice", pid).unwrap().wait().await;
        pids.push(pid);
    }
    let bob = registry.start("bob", &script("true"), "t").unwrap().pid;
    registry.process("bob", bob).unwrap().wait().await;
    let kept: Vec<u32> = registry.list("alice").iter().map(|r| r.pid).collect();
    assert_eq!(kept, pids[2..].to_vec(), "the newest exits are kept");
    assert!(matches!(
        registry.get("alice", pids[0]),
        Err(Error::NotFound)
    ));
    assert_eq!(
        registry.list("bob").len(),
        1,
        "one owner's exits never evict another's"
    );
    // Kept for a while only.
    let brief = Registry::new(RegistryConfig {
        keep_exited_for: Duration::from_millis(50),
        ..RegistryConfig::default()
    });
    let pid = brief.start("alice", &script("true"), "t").unwrap().pid;
    brief.process("alice", pid).unwrap().wait().await;
    assert_eq!(brief.list("alice").len(), 1);
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(brief.list("alice").is_empty());
}

#[tokio::test]
async fn signals_15_and_9_work_and_others_are_refused() {
    let registry = Registry::default();
    for (number, signal) in [(15, Signal::Term), (9, Signal::Kill)] {
        let pid = registry
            .start("alice", &script("sleep 30"), "t")
            .unwrap()
            .pid;
        let signal_of_number = Signal::try_from(number).unwrap();
        assert_eq!((signal_of_number, signal.number()), (signal, number));
        registry.signal("alice", pid, signal_of_number).unwrap();
        let exit = registry.process("alice", pid).unwrap().wait().await;
        assert_eq!(exit.signal(), Some(number));
        assert_eq!(registry.get("alice", pid).unwrap().signal, Some(number));
    }
    for number in [0, 1, 2, 3, 10, 19, 64, -9] {
        assert!(
            matches!(Signal::try_from(number), Err(Error::UnsupportedSignal(n)) if n == number)
        );
    }
}

#[tokio::test]
async fn kill_leaves_no_process_of_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("grandchild.pid");
    let registry = Registry::default();
    // The shell ignores TERM: KILL after the grace period ends it.
    let spec = Spec {
        limits: Limits {
            grace: Duration::from_millis(200),
            ..Limits::default()
        },
        ..script(&format!(
            "trap '' TERM; sleep 30 & echo $! > {}; while :; do sleep 1; done",
            marker.display()
        ))
    };
    let pid = registry.start("alice", &spec, "t").unwrap().pid;
    let grandchild = read_pid(&marker).await;
    assert_eq!(proc_state(grandchild).map(|s| s != 'Z'), Some(true));
    let started = std::time::Instant::now();
    let record = registry.kill("alice", pid).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!((record.status, record.signal), (Status::Exited, Some(9)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_not_running(grandchild);
    assert_eq!(proc_state(pid), None, "the leader was reaped");
}

#[tokio::test]
async fn the_spec_timeout_applies_to_registry_processes() {
    let registry = Registry::default();
    let spec = Spec {
        limits: Limits {
            timeout: Some(Duration::from_millis(100)),
            ..Limits::default()
        },
        ..script("sleep 30")
    };
    let pid = registry.start("alice", &spec, "t").unwrap().pid;
    let exit = registry.process("alice", pid).unwrap().wait().await;
    assert!(exit.timed_out);
    assert_eq!(exit.signal(), Some(15));
}

#[tokio::test]
async fn shutdown_ends_every_process_and_starts_no_more() {
    let registry = Registry::default();
    let mut pids = Vec::new();
    for owner in ["alice", "bob", "carol"] {
        pids.push((
            owner,
            registry.start(owner, &script("sleep 30"), "t").unwrap().pid,
        ));
    }
    registry.shutdown().await;
    for (owner, pid) in pids {
        assert_eq!(registry.get(owner, pid).unwrap().status, Status::Exited);
        assert_eq!(proc_state(pid), None);
    }
    assert!(matches!(
        registry.start("alice", &script("true"), "t"),
        Err(Error::ShuttingDown)
    ));
}

#[tokio::test]
async fn a_dropped_registry_kills_its_processes() {
    let registry = Registry::default();
    let pid = registry
        .start("alice", &script("sleep 30"), "t")
        .unwrap()
        .pid;
    let handle = registry.process("alice", pid).unwrap();
    drop(registry);
    let exit = handle.wait().await;
    assert_eq!(exit.signal(), Some(9));
}

#[tokio::test]
async fn no_zombie_is_left_after_reaping() {
    let registry = Registry::default();
    let mut pids = Vec::new();
    for script_text in ["true", "exit 3", "kill -9 $$", "sleep 30 & exec sleep 0"] {
        pids.push(
            registry
                .start("alice", &script(script_text), "t")
                .unwrap()
                .pid,
        );
    }
    for &pid in &pids {
        registry.process("alice", pid).unwrap().wait().await;
        assert_eq!(proc_state(pid), None, "{pid} was reaped");
    }
    let streaming = Streaming::spawn(&script("echo hi")).unwrap();
    let pid = streaming.pid();
    let mut streaming = streaming;
    assert!(streaming.wait().await.unwrap().success());
    assert_ne!(proc_state(pid), Some('Z'));
    let out = run(&script("exit 0")).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
}

fn leaving(script_text: &str) -> Spec {
    Spec {
        limits: Limits {
            group_end: GroupEnd::Leave,
            ..Limits::default()
        },
        ..script(script_text)
    }
}

#[tokio::test]
async fn a_left_group_keeps_its_background_child_and_the_exit_is_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("background.pid");
    // The background sleep holds stdout and stderr open: without the short drain the
    // exit would wait the full DRAIN (2 s) for their end.
    let spec = leaving(&format!(
        "sleep 30 & echo $! > {}; echo started",
        marker.display()
    ));
    let started = std::time::Instant::now();
    let out = run(&spec).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (out.exit_code, out.stdout.text()),
        (Some(0), "started\n".into())
    );
    let background = read_pid(&marker).await;
    assert!(
        matches!(proc_state(background), Some('S' | 'R')),
        "the background child goes on: {:?}",
        proc_state(background)
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(background as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

#[tokio::test]
async fn the_group_is_killed_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("background.pid");
    let out = run(&script(&format!(
        "sleep 30 & echo $! > {}; echo started",
        marker.display()
    )))
    .await
    .unwrap();
    assert_eq!(out.exit_code, Some(0));
    let background = read_pid(&marker).await;
    for _ in 0..100 {
        if !matches!(proc_state(background), Some('S' | 'R')) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_not_running(background);
}

#[tokio::test]
async fn a_left_group_still_obeys_the_timeout() {
    let spec = Spec {
        limits: Limits {
            timeout: Some(Duration::from_millis(100)),
            group_end: GroupEnd::Leave,
            ..Limits::default()
        },
        ..script("sleep 30")
    };
    let out = run(&spec).await.unwrap();
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(15));
}

#[tokio::test]
async fn a_followed_registry_process_streams_and_takes_stdin() {
    let registry = Registry::default();
    let spec = Spec {
        stdin: Stdin::Stream,
        ..leaving("read line; echo \"got $line\"; echo err >&2")
    };
    let label = Label {
        tag: "command".into(),
        cmd: "read".into(),
        args: None,
    };
    let (record, mut chunks) = registry.start_followed("sb", &spec, label).unwrap();
    let handle = registry.process("sb", record.pid).unwrap();
    assert!(handle.stdin_open());
    registry
        .stdin("sb", record.pid, b"hello\n", true)
        .await
        .unwrap();
    assert!(!handle.stdin_open(), "closed on request");
    let mut out = Vec::new();
    let mut err = Vec::new();
    while let Some(chunk) = chunks.recv().await {
        match chunk.stream {
            Stream::Stdout => out.extend_from_slice(&chunk.bytes),
            Stream::Stderr => err.extend_from_slice(&chunk.bytes),
        }
    }
    assert_eq!(
        (out.as_slice(), err.as_slice()),
        (&b"got hello\n"[..], &b"err\n"[..])
    );
    assert_eq!(handle.wait().await.code(), Some(0));
    assert!(!handle.stdin_open());
    assert_eq!(registry.list("sb").len(), 1);
    assert!(registry.list("other").is_empty());
}
