//! No zombies and no orphans, ever (issue 12, Done when 2): generated sequences of start,
//! stdin, signal, kill, shells and open streams against a real server, ended by SIGTERM to
//! the server; then no process the server started is left. Every child carries a marker
//! variable, and `/proc/*/environ` is scanned for it: children of children, processes that
//! ignore TERM, whatever a shell left in its group and what left the group with `setsid`
//! are all found that way.

use proptest::prelude::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// `sleep` run directly.
    Sleep,
    /// A shell with two children in its group.
    Tree,
    /// A shell and a child that both ignore TERM.
    Stubborn,
    /// `cat`, waiting on its stdin.
    Reader,
    /// A shell whose child leaves the group and the session (`os.setsid()`), as a daemon
    /// does: a group kill misses it, only the server's tree tracking ends it.
    Escaper,
}

impl Kind {
    fn body(self) -> Value {
        match self {
            Kind::Sleep => json!({"cmd": "sleep", "args": ["30"]}),
            Kind::Tree => json!({"cmd": "sleep 30 & sleep 30 & wait"}),
            Kind::Stubborn => json!({"cmd": "trap '' TERM; (trap '' TERM; sleep 30) & wait"}),
            Kind::Reader => json!({"cmd": "cat", "args": []}),
            Kind::Escaper => json!({
                "cmd": "python3 -c 'import os,time; os.setsid(); time.sleep(30)' & sleep 30 & wait"
            }),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Start(Kind),
    Stdin(usize, bool),
    Signal(usize, i32),
    Kill(usize),
    /// A blocking shell cut by its time limit.
    Shell(Kind),
    /// A streamed shell left open.
    Stream(Kind),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Sleep),
        Just(Kind::Tree),
        Just(Kind::Stubborn),
        Just(Kind::Reader),
        Just(Kind::Escaper)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => kind().prop_map(Op::Start),
        1 => (0..4usize, any::<bool>()).prop_map(|(i, close)| Op::Stdin(i, close)),
        1 => (0..4usize, prop_oneof![Just(15), Just(9)]).prop_map(|(i, s)| Op::Signal(i, s)),
        1 => (0..4usize).prop_map(Op::Kill),
        1 => kind().prop_map(Op::Shell),
        1 => kind().prop_map(Op::Stream),
    ]
}

struct Server {
    child: Child,
    port: u16,
}

fn spawn_server() -> Server {
    let (child, line) = super::cli::spawn_server(&["--terminal-port", "0"]);
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .expect(&line);
    Server { child, port }
}

/// One request on a fresh connection; the status and the JSON body (null when none).
fn call(port: u16, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = body.to_string();
    write!(
        tcp,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    let _ = tcp.read_to_string(&mut reply);
    let status = reply
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {reply:?}"));
    let json = reply
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b.trim()).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

/// Opens a streamed shell and reads until its first event; the socket stays open.
fn open_stream(port: u16, body: &Value) -> TcpStream {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = body.to_string();
    write!(
        tcp,
        "POST /shell/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut buf = [0u8; 4096];
    let n = tcp.read(&mut buf).unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    tcp
}

/// Pids of live processes whose environment holds `ORPHAN_MARK=<mark>`.
fn marked(mark: &str) -> Vec<u32> {
    let needle = format!("ORPHAN_MARK={mark}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mark = uuid::Uuid::new_v4().simple().to_string();
    let mut server = spawn_server();
    let port = server.port;
    let with_mark = |mut body: Value| {
        body["env"] = json!({ "ORPHAN_MARK": mark });
        body["cwd"] = json!(std::env::temp_dir());
        body
    };
    let mut pids: Vec<u32> = Vec::new();
    let mut streams = Vec::new();
    for op in ops {
        match op {
            Op::Start(kind) => {
                let (status, record) = call(port, "POST", "/processes", &with_mark(kind.body()));
                prop_assert_eq!(status, 200, "{}", record);
                pids.push(record["pid"].as_u64().unwrap() as u32);
            }
            Op::Stdin(i, close) => {
                if let Some(pid) = pids.get(*i) {
                    let body = json!({"data": "x\n", "close": close});
                    let (status, _) = call(port, "POST", &format!("/processes/{pid}/stdin"), &body);
                    prop_assert!([200, 409].contains(&status), "stdin: {}", status);
                }
            }
            Op::Signal(i, signal) => {
                if let Some(pid) = pids.get(*i) {
                    let path = format!("/processes/{pid}/signal");
                    let (status, _) = call(port, "POST", &path, &json!({ "signal": signal }));
                    prop_assert!([200, 409].contains(&status), "signal: {}", status);
                }
            }
            Op::Kill(i) => {
                if let Some(pid) = pids.get(*i) {
                    let (status, record) =
                        call(port, "DELETE", &format!("/processes/{pid}"), &json!(null));
                    prop_assert_eq!(status, 200);
                    prop_assert_eq!(&record["status"], "exited");
                }
            }
            Op::Shell(kind) => {
                let mut body = with_mark(kind.body());
                body["timeout"] = json!(0.3);
                let (status, result) = call(port, "POST", "/shell", &body);
                prop_assert_eq!(status, 200, "{}", result);
                // `cat` gets a closed stdin from a shell and ends at once; the rest run on.
                let cut = !matches!(kind, Kind::Reader);
                prop_assert_eq!(&result["timed_out"], cut, "{}", result);
            }
            Op::Stream(kind) => streams.push(open_stream(port, &with_mark(kind.body()))),
        }
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.child.try_wait().unwrap().is_none() {
        prop_assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(streams);
    // The server waited for every child it ended; give the kernel a moment to tear down.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = marked(&mark);
        if left.is_empty() {
            return Ok(());
        }
        prop_assert!(
            Instant::now() < deadline,
            "left behind by the server after {:?}: {:?}",
            ops,
            left
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn no_child_outlives_the_server_whatever_was_done_to_them() {
    let config = ProptestConfig {
        cases: 8,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(ops in prop::collection::vec(op(), 1..8))| {
        run(&ops)?;
    });
}
