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
