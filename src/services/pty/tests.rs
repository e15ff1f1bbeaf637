use super::*;
use std::time::Duration;

const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn spec(env: &[(&str, &str)]) -> Spec {
    Spec {
        shell: "/bin/sh".into(),
        args: Vec::new(),
        through: None,
        enter: None,
        join_cgroup: Vec::new(),
        ptmx_in: None,
        cwd: None,
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        size: Size::default(),
    }
}

fn with_path() -> Spec {
    spec(&[("PATH", PATH)])
}

/// Reads the attachment (replay first) until `needle` shows up; everything read so far.
async fn read_until(attachment: &mut Attachment, needle: &[u8]) -> Vec<u8> {
    let mut seen = std::mem::take(&mut attachment.replay);
    let found = |seen: &[u8], from: usize| {
        seen[from.saturating_sub(needle.len())..]
            .windows(needle.len())
            .any(|w| w == needle)
    };
    tokio::time::timeout(Duration::from_secs(20), async {
        let mut from = 0;
        while !found(&seen, from) {
            from = seen.len();
            match attachment.next().await {
                Some(chunk) => seen.extend_from_slice(&chunk),
                None => break,
            }
        }
    })
    .await
    .expect("output in time");
    assert!(
        found(&seen, 0),
        "{:?} not in {:?}",
        String::from_utf8_lossy(needle),
        String::from_utf8_lossy(&seen)
    );
    seen
}

fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").and_then(|(_, s)| s.chars().next());
    matches!(state, Some(c) if c != 'Z' && c != 'X')
}

async fn gone(pid: u32) {
    for _ in 0..200 {
        if !running(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{pid} still runs");
}

#[tokio::test]
async fn output_made_while_nobody_is_attached_is_replayed() {
    let terminals = Terminals::default();
    let record = terminals.create("me", &with_path()).unwrap();
    assert!(record.id.starts_with("pty_") && record.pid > 0);
    assert_eq!((record.cols, record.rows, record.clients), (80, 24, 0));
    let terminal = terminals.terminal("me", &record.id).unwrap();
    terminal.write(b"echo made-$((40+2))\n").await.unwrap();
    // Give the shell time to answer with nobody attached.
    let mut probe = terminal.attach();
    read_until(&mut probe, b"made-42").await;
    drop(probe);
    let mut late = terminal.attach();
    assert_eq!(terminals.get("me", &record.id).unwrap().clients, 1);
    let seen = read_until(&mut late, b"made-42").await;
    assert!(seen.windows(7).any(|w| w == b"made-42"));
    terminals.shutdown().await;
}

#[tokio::test]
async fn the_shell_gets_exactly_the_environment_given() {
    let terminals = Terminals::default();
    let record = terminals
        .create("me", &spec(&[("ONLY", "this-one")]))
        .unwrap();
    let terminal = terminals.terminal("me", &record.id).unwrap();
    let mut a = terminal.attach();
    terminal
        .write(b"echo \"[$ONLY|${HOME:-nohome}|${CARGO:-nocargo}]\"\n")
        .await
        .unwrap();
    read_until(&mut a, b"[this-one|nohome|nocargo]").await;
    terminals.shutdown().await;
}

#[tokio::test]
async fn two_clients_both_see_the_output_and_bytes_stay_raw() {
    let terminals = Terminals::default();
    let record = terminals.create("me", &with_path()).unwrap();
    let terminal = terminals.terminal("me", &record.id).unwrap();
    let (mut a, mut b) = (terminal.attach(), terminal.attach());
    assert_eq!(terminal.clients(), 2);
    terminal.write(b"printf 'x\\377\\376y'\n").await.unwrap();
    for client in [&mut a, &mut b] {
        read_until(client, b"x\xff\xfey").await;
    }
    terminals.shutdown().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_dropped_while_the_other_keeps_up() {
    let terminals = Terminals::default();
    let record = terminals.create("me", &with_path()).unwrap();
    let terminal = terminals.terminal("me", &record.id).unwrap();
    let stalled = terminal.attach();
    let mut reader = terminal.attach();
    terminal
        .write(b"stty -opost; yes | head -c 20000000; printf '%s-%s\\n' all done\n")
        .await
        .unwrap();
    let seen = read_until(&mut reader, b"all-done").await;
    assert!(seen.len() >= 20_000_000, "{}", seen.len());
    assert_eq!(stalled.end().await, End::Dropped);
    assert_eq!(terminal.clients(), 1);
    terminals.shutdown().await;
}

#[tokio::test]
async fn resize_reaches_the_shell() {
    let terminals = Terminals::default();
    let mut given = with_path();
    given.size = Size::new(100, 30).unwrap();
    let record = terminals.create("me", &given).unwrap();
    assert_eq!((record.cols, record.rows), (100, 30));
    let terminal = terminals.terminal("me", &record.id).unwrap();
    let mut a = terminal.attach();
    terminal.write(b"stty size\n").await.unwrap();
    read_until(&mut a, b"30 100").await;
    let resized = terminals
        .resize("me", &record.id, Size::new(132, 43).unwrap())
        .unwrap();
    assert_eq!((resized.cols, resized.rows), (132, 43));
    terminal.write(b"stty size\n").await.unwrap();
    read_until(&mut a, b"43 132").await;
    terminals.shutdown().await;
}

#[tokio::test]
async fn kill_ends_the_whole_session_and_closes_the_clients() {
    let terminals = Terminals::default();
    let record = terminals.create("me", &with_path()).unwrap();
    let terminal = terminals.terminal("me", &record.id).unwrap();
    let mut a = terminal.attach();
    // A job that ignores the hang-up, in a process group of its own.
    terminal
        .write(b"(trap '' HUP TERM; exec sleep 1000) & printf 'job=%s=%s\\n' $! end\n")
        .await
        .unwrap();
    let seen = read_until(&mut a, b"=end").await;
    let text = String::from_utf8_lossy(&seen);
    let job: u32 = text
        .rsplit("job=")
        .next()
        .and_then(|s| s.split('=').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(running(job));
    let last = tokio::time::timeout(Duration::from_secs(10), terminals.kill("me", &record.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((last.id.as_str(), last.clients), (record.id.as_str(), 0));
    gone(record.pid).await;
    gone(job).await;
    while a.next().await.is_some() {}
    assert!(matches!(a.end().await, End::Exited(_)));
    assert!(matches!(
        terminals.get("me", &record.id),
        Err(Error::NotFound(_))
    ));
}

#[tokio::test]
async fn the_shells_exit_ends_the_output_after_the_last_bytes() {
    let terminals = Terminals::default();
    let record = terminals.create("me", &with_path()).unwrap();
    let terminal = terminals.terminal("me", &record.id).unwrap();
    let mut a = terminal.attach();
    terminal
        .write(b"printf '%s-%s' last words; exit 7\n")
        .await
        .unwrap();
    read_until(&mut a, b"last-words").await;
    while a.next().await.is_some() {}
    assert_eq!(
        a.end().await,
        End::Exited(Some(Exit {
            code: Some(7),
            signal: None
        }))
    );
    assert!(terminals.list("me").is_empty());
    assert!(matches!(terminal.write(b"x").await, Err(Error::Ended)));
}

#[tokio::test]
async fn another_owners_terminal_is_not_there() {
    let terminals = Terminals::default();
    let record = terminals.create("me", &with_path()).unwrap();
    for result in [
        terminals.get("you", &record.id),
        terminals.resize("you", &record.id, Size::default()),
    ] {
        assert!(matches!(result, Err(Error::NotFound(ref id)) if *id == record.id));
    }
    assert!(terminals.list("you").is_empty());
    assert_eq!(terminals.list("me").len(), 1);
    assert!(terminals.kill("you", &record.id).await.is_err());
    terminals.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_every_terminal_and_starts_no_more() {
    let terminals = Terminals::default();
    let pids: Vec<u32> = (0..3)
        .map(|_| terminals.create("me", &with_path()).unwrap().pid)
        .collect();
    tokio::time::timeout(Duration::from_secs(10), terminals.shutdown())
        .await
        .unwrap();
    for pid in pids {
        gone(pid).await;
    }
    assert!(matches!(
        terminals.create("me", &with_path()),
        Err(Error::ShuttingDown)
    ));
}

#[tokio::test]
async fn a_missing_shell_is_a_spawn_error() {
    let terminals = Terminals::default();
    let mut given = with_path();
    given.shell = "/nonexistent/shell".into();
    match terminals.create("me", &given) {
        Err(Error::Spawn { shell, source }) => {
            assert_eq!(shell, "/nonexistent/shell");
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("{:?}", other.map(|r| r.id)),
    }
}

#[test]
fn sizes_are_checked() {
    assert_eq!(
        Size::new(1, 1000).unwrap(),
        Size {
            cols: 1,
            rows: 1000
        }
    );
    for (cols, rows, param) in [
        (0, 24, "cols"),
        (80, 0, "rows"),
        (1001, 24, "cols"),
        (80, 70000, "rows"),
    ] {
        assert!(
            matches!(Size::new(cols, rows), Err(Error::InvalidSize { param: p, .. }) if p == param),
            "{cols}x{rows}"
        );
    }
}
