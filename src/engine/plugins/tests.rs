//! The host against small `sh` plugins: the framing, the handshake and its failures, calls
//! matched by id when answered out of order, errors mapped to the table, the idle limit
//! and its cancel, a crash, garbage, the restart, duplicate ids, streams and byte bodies.

use super::discover;
use super::host::{Host, Settings, Source};
use super::protocol::{self, Line};
use crate::engine::provider::Provider;
use crate::error::engine::Code;
use crate::wire::{CommandBody, Connection, Feature, WriteQuery};
use futures::StreamExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const HELLO: &str = r#"read hello
echo '{"type":"hello","protocol":1,"id":"t","name":"Test","version":"1.0","features":["sandboxes","files","commands","terminal","teleport"]}'
"#;

/// Shell lines that set `$id` and `$sid` from the request in `$line`.
const IDS: &str = r#"id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
sid=$(printf '%s' "$line" | sed -n 's/.*"sandbox_id":"\([^"]*\)".*/\1/p')
"#;

const RECORD: &str = r#"{"sandbox_id":"s1","provider":"other","template":"base","status":"running","created_at":"2025-01-01T00:00:00Z","expires_at":"2025-01-01T00:05:00Z","metadata":{},"envs_keys":[],"cpu":null,"memory":null,"disk":null,"secure":true,"limits_enforced":{"timeout":true}}"#;

fn settings() -> Settings {
    Settings {
        idle: Duration::from_millis(800),
        hello_wait: Duration::from_millis(800),
        restart_pause: Duration::from_millis(300),
    }
}

fn script(dir: &Path, name: &str, body: &str) -> Source {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Source {
        path,
        name: name.into(),
        trust: "user",
        problem: None,
    }
}

async fn host(dir: &Path, body: &str) -> Arc<Host> {
    Host::start(script(dir, "plugin", body), dir, settings()).await
}

fn conn() -> Connection {
    Connection {
        provider: Some("t".into()),
        ..Connection::default()
    }
}

async fn connect_error(host: &Host, sandbox: &str) -> crate::error::engine::EngineError {
    match host.connect(&conn(), sandbox).await {
        Ok(_) => panic!("connect answered a handle"),
        Err(e) => e,
    }
}

#[test]
fn lines_are_messages_malformed_calls_or_garbage() {
    assert!(matches!(
        protocol::parse(br#"{"type":"response","id":3,"result":{}}"#),
        Line::Message(_)
    ));
    assert!(matches!(
        protocol::parse(br#"{"type":"reply","id":3}"#),
        Line::Malformed { id: 3, .. }
    ));
    assert!(matches!(protocol::parse(b"hello there"), Line::Garbage(_)));
    assert!(matches!(
        protocol::parse(br#"{"type":"response"}"#),
        Line::Garbage(_)
    ));
    let known = protocol::engine_error(
        "t",
        protocol::PluginError {
            code: "E2004".into(),
            message: "gone".into(),
            suggestion: None,
        },
    );
    assert_eq!(
        (known.code, known.message.as_str()),
        (Code::FileNotFound, "gone")
    );
    let unknown = protocol::engine_error(
        "t",
        protocol::PluginError {
            code: "E7777".into(),
            message: "odd".into(),
            suggestion: None,
        },
    );
    assert_eq!(unknown.code, Code::ProviderFailed);
    assert!(unknown.message.contains("E7777"), "{}", unknown.message);
}

#[tokio::test]
async fn a_hello_makes_the_record_and_features_the_protocol_cannot_carry_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), &format!("{HELLO}while read line; do :; done\n")).await;
    let record = host.record();
    assert_eq!(
        (
            record.id.as_str(),
            record.name.as_str(),
            record.version.as_str()
        ),
        ("t", "Test", "1.0")
    );
    assert_eq!(record.trust, "user");
    assert_eq!(record.error, None);
    assert_eq!(
        record.features,
        vec![Feature::Sandboxes, Feature::Commands, Feature::Files]
    );
    let data = dir.path().join("plugin-data/plugin");
    let mode = std::fs::metadata(&data).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the data folder is private");
}

#[tokio::test]
async fn handshake_failures_are_the_record_error() {
    let cases = [
        (
            "read h; exec sleep 30\n",
            "did not answer the hello within 800 ms",
        ),
        (
            "read h; echo 'not json'\nexec sleep 30\n",
            "its hello is not JSON",
        ),
        (
            "read h; echo '{\"type\":\"hello\",\"protocol\":2,\"id\":\"x\",\"name\":\"x\",\"version\":\"1\"}'\nexec sleep 30\n",
            "protocol 2",
        ),
        (
            "read h; echo '{\"type\":\"response\",\"id\":1}'\nexec sleep 30\n",
            "is not a hello",
        ),
        (
            "read h; echo '{\"type\":\"hello\",\"protocol\":1,\"id\":\"a b\",\"name\":\"x\",\"version\":\"1\"}'\nexec sleep 30\n",
            "not a provider id",
        ),
        ("exit 7\n", "exited before its hello (status 7)"),
    ];
    for (body, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let began = Instant::now();
        let host = host(dir.path(), body).await;
        assert!(began.elapsed() < Duration::from_secs(3), "{body}");
        let record = host.record();
        assert_eq!(record.id, "plugin", "listed by its file name");
        let error = record.error.unwrap_or_default();
        assert!(error.contains(expected), "{body}: {error}");
        let refused = connect_error(&host, "s1").await;
        assert_eq!(refused.code, Code::ProviderFailed, "{body}");
    }
}

#[tokio::test]
async fn calls_answered_out_of_order_get_their_own_answers_and_known_codes_keep_their_row() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        r#"{HELLO}read line
{IDS}first=$id; first_sid=$sid
read line
{IDS}echo "{{\"type\":\"response\",\"id\":$id,\"error\":{{\"code\":\"E2009\",\"message\":\"no $sid\"}}}}"
echo "{{\"type\":\"response\",\"id\":$first,\"error\":{{\"code\":\"E9999\",\"message\":\"no $first_sid\"}}}}"
while read line; do :; done
"#
    );
    let host = host(dir.path(), &body).await;
    let (a, b) = tokio::join!(connect_error(&host, "aaa"), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        connect_error(&host, "bbb").await
    });
    assert_eq!(
        a.code,
        Code::ProviderFailed,
        "an unknown code is the plugin's failure"
    );
    assert!(
        a.message.contains("E9999") && a.message.contains("no aaa"),
        "{}",
        a.message
    );
    assert_eq!(b.code, Code::SandboxNotFound);
    assert_eq!(b.message, "no bbb");
    assert_eq!(host.record().error, None, "the plugin still serves");
}

#[tokio::test]
async fn a_call_without_an_answer_times_out_with_e9002_and_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received");
    let body = format!(
        "{HELLO}while read line; do echo \"$line\" >> {}; done\n",
        log.display()
    );
    let host = host(dir.path(), &body).await;
    let began = Instant::now();
    let error = connect_error(&host, "s1").await;
    assert_eq!(error.code, Code::ProviderTimeout, "{}", error.message);
    assert!(began.elapsed() < Duration::from_secs(3));
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let seen = std::fs::read_to_string(&log).unwrap_or_default();
        if seen.contains(r#"{"type":"cancel","id":1}"#) {
            assert!(seen.contains(r#""op":"sandboxes_connect""#), "{seen}");
            assert!(
                seen.contains(r#""sandbox_id":"s1""#) && seen.contains(r#""account":""#),
                "{seen}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "no cancel was sent: {seen}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        host.record().error,
        None,
        "a slow plugin is not a failed one"
    );
}

#[tokio::test]
async fn garbage_and_a_crash_fail_the_call_and_become_the_record_error_until_a_restart() {
    let cases = [
        ("read line; echo 'surprise'\nexec sleep 30\n", "not JSON"),
        (
            "read line; printf '{\"type\":\"resp'; exit 3\n",
            "in the middle of a message (status 3)",
        ),
        (
            "read line; echo '{\"type\":\"response\",\"id\":99,\"result\":null}'\nexec sleep 30\n",
            "call 99, which the engine never made",
        ),
    ];
    for (after_hello, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let host = host(dir.path(), &format!("{HELLO}{after_hello}")).await;
        let error = connect_error(&host, "s1").await;
        assert_eq!(error.code, Code::ProviderFailed, "{after_hello}");
        assert!(
            error.message.contains(expected),
            "{after_hello}: {}",
            error.message
        );
        let record_error = host.record().error.unwrap_or_default();
        assert!(record_error.contains(expected), "{record_error}");
        // After the pause the next look starts it again; its hello clears the error.
        tokio::time::sleep(Duration::from_millis(350)).await;
        assert!(
            host.record()
                .error
                .unwrap_or_default()
                .contains("started again")
        );
        let deadline = Instant::now() + Duration::from_secs(3);
        while host.record().error.is_some() {
            assert!(
                Instant::now() < deadline,
                "not restarted: {:?}",
                host.record().error
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn a_malformed_answer_fails_only_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        r#"{HELLO}while read line; do
{IDS}echo "{{\"type\":\"reply\",\"id\":$id}}"
done
"#
    );
    let host = host(dir.path(), &body).await;
    for _ in 0..2 {
        let error = connect_error(&host, "s1").await;
        assert_eq!(error.code, Code::ProviderFailed);
        assert!(
            error.message.contains("not protocol 1"),
            "{}",
            error.message
        );
    }
    assert_eq!(host.record().error, None);
}

#[tokio::test]
async fn the_first_plugin_keeps_an_id_and_local_is_never_a_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let same = |id: &str| {
        format!(
            "read h\necho '{{\"type\":\"hello\",\"protocol\":1,\"id\":\"{id}\",\"name\":\"n\",\"version\":\"1\"}}'\nwhile read line; do :; done\n"
        )
    };
    let sources = vec![
        script(dir.path(), "first", &same("twin")),
        script(dir.path(), "second", &same("twin")),
        script(dir.path(), "impostor", &same("local")),
    ];
    let hosts = super::start_all(sources, dir.path(), settings()).await;
    let records: Vec<_> = hosts.iter().map(|h| h.record()).collect();
    assert_eq!(records[0].id, "twin");
    assert_eq!(records[0].error, None);
    assert_eq!(records[1].id, "second");
    assert!(
        records[1]
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("`twin` is already taken")
    );
    assert_eq!(records[2].id, "impostor");
    assert!(
        records[2]
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("`local`")
    );
}

#[test]
fn discovery_takes_executables_of_the_folder_then_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("plugins");
    std::fs::create_dir(&folder).unwrap();
    script(&folder, "b-plugin", "exit 0\n");
    script(&folder, "a-plugin", "exit 0\n");
    script(&folder, ".hidden", "exit 0\n");
    std::fs::write(folder.join("README"), "not a plugin").unwrap();
    // A link under another name is another plugin; the same path named twice is one.
    std::os::unix::fs::symlink(folder.join("a-plugin"), folder.join("z-link")).unwrap();
    let extra = tempfile::tempdir().unwrap();
    script(extra.path(), "c-plugin", "exit 0\n");
    let variable = std::env::join_paths([
        extra.path().join("c-plugin"),
        dir.path().join("missing"),
        dir.path().join("plugins/../plugins/a-plugin"),
    ])
    .unwrap();
    let found = discover::sources(dir.path(), Some(&variable));
    let names: Vec<(&str, &str)> = found.iter().map(|s| (s.name.as_str(), s.trust)).collect();
    assert_eq!(
        names,
        [
            ("a-plugin", "user"),
            ("b-plugin", "user"),
            ("z-link", "user"),
            ("c-plugin", "environment"),
            ("missing", "environment")
        ]
    );
    assert!(
        found[4]
            .problem
            .as_deref()
            .unwrap_or_default()
            .contains("does not exist")
    );
}

#[tokio::test]
async fn streams_byte_reads_and_chunked_writes() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        r#"{HELLO}while read line; do
{IDS}case "$line" in
*'"op":"sandboxes_connect"'*) echo "{{\"type\":\"response\",\"id\":$id,\"result\":"'{RECORD}'"}}" ;;
*'"op":"commands_stream"'*)
  echo "{{\"type\":\"event\",\"id\":$id,\"name\":\"start\",\"data\":{{\"pid\":7}}}}"
  echo "{{\"type\":\"event\",\"id\":$id,\"name\":\"stdout\",\"data\":{{\"data_b64\":\"aMM=\"}}}}"
  echo "{{\"type\":\"alive\",\"id\":$id}}"
  echo "{{\"type\":\"event\",\"id\":$id,\"name\":\"stdout\",\"data\":{{\"data_b64\":\"qWxsbw==\"}}}}"
  echo "{{\"type\":\"event\",\"id\":$id,\"name\":\"exit\",\"data\":{{\"exit_code\":0,\"timed_out\":false}}}}"
  echo "{{\"type\":\"response\",\"id\":$id,\"result\":null}}" ;;
*'"op":"files_read"'*)
  echo "{{\"type\":\"response\",\"id\":$id,\"result\":{{\"size\":5}}}}"
  echo "{{\"type\":\"chunk\",\"id\":$id,\"data\":\"aGVs\"}}"
  echo "{{\"type\":\"chunk\",\"id\":$id,\"data\":\"bG8=\"}}"
  echo "{{\"type\":\"chunk\",\"id\":$id,\"last\":true}}" ;;
*'"op":"files_write"'*)
  n=0
  while read chunk; do
    case "$chunk" in *'"last":true'*) break ;; *) n=$((n+1)) ;; esac
  done
  # The entry info of the written file, its size the count of chunks received.
  echo "{{\"type\":\"response\",\"id\":$id,\"result\":{{\"name\":\"f\",\"path\":\"/f\",\"type\":\"file\",\"size\":$n,\"mode\":\"0644\",\"modified_at\":\"2024-01-01T00:00:00Z\"}}}}" ;;
esac
done
"#
    );
    let host = host(dir.path(), &body).await;
    let sandbox = host.connect(&conn(), "s1").await.unwrap();
    assert_eq!(
        sandbox.info().await.err().map(|e| e.code),
        Some(Code::ProviderTimeout),
        "info is not answered by this script"
    );
    let events: Vec<_> = sandbox
        .stream(CommandBody {
            cmd: "x".into(),
            ..CommandBody::default()
        })
        .await
        .unwrap()
        .collect()
        .await;
    let events: Vec<_> = events.into_iter().map(Result::unwrap).collect();
    let names: Vec<_> = events.iter().map(|e| e.name).collect();
    assert_eq!(names, ["start", "stdout", "stdout", "exit"]);
    // The character cut between two events arrives whole.
    assert_eq!(events[1].data, serde_json::json!({"data": "h"}));
    assert_eq!(events[2].data, serde_json::json!({"data": "éllo"}));

    let read = sandbox.read_file("f").await.unwrap();
    assert_eq!(read.size, 5);
    let bytes: Vec<u8> = read
        .body
        .into_stream()
        .map(|b| b.unwrap().to_vec())
        .concat()
        .await;
    assert_eq!(bytes, b"hello");

    let big = bytes::Bytes::from(vec![7u8; 150 * 1024]);
    let body: crate::engine::provider::ByteStream = Box::pin(futures::stream::iter([
        Ok::<_, std::io::Error>(big.slice(..100_000)),
        Ok(big.slice(100_000..)),
    ]));
    let written = sandbox
        .write_file(WriteQuery::default(), body)
        .await
        .unwrap();
    assert_eq!(written.size, 3, "150 KiB go as chunks of at most 64 KiB");
}

#[tokio::test]
async fn a_cancel_behind_a_full_queue_waits_its_turn_rather_than_be_lost() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received");
    // Answers the connect, then reads nothing for 2 s (longer than the idle limit), then
    // records every line.
    let body = format!(
        r#"{HELLO}read line
{IDS}echo "{{\"type\":\"response\",\"id\":$id,\"result\":"'{RECORD}'"}}"
sleep 2
while read line; do echo "$line" >> {}; done
"#,
        log.display()
    );
    let host = host(dir.path(), &body).await;
    let sandbox = host.connect(&conn(), "s1").await.unwrap();
    // A body of 200 chunks: the pipe and the queue fill, the write times out, and its
    // cancel finds the queue full.
    let chunk = bytes::Bytes::from(vec![7u8; 64 * 1024]);
    let body: crate::engine::provider::ByteStream = Box::pin(futures::stream::iter(
        (0..200).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
    ));
    let error = sandbox
        .write_file(WriteQuery::default(), body)
        .await
        .unwrap_err();
    assert_eq!(error.code, Code::ProviderTimeout, "{}", error.message);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = std::fs::read_to_string(&log).unwrap_or_default();
        if seen.contains(r#"{"type":"cancel","id":2}"#) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the write's cancel never reached the plugin ({} bytes seen)",
            seen.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An entry line for the `files_list` plugin below: `{name, path, type, size}` as given.
fn entry_json(name: &str, path: &str, type_: &str, size: i64) -> String {
    format!(
        r#"{{\"name\":\"{name}\",\"path\":\"{path}\",\"type\":\"{type_}\",\"size\":{size},\"mode\":\"0644\",\"modified_at\":\"2024-01-01T00:00:00Z\"}}"#
    )
}

#[tokio::test]
async fn file_entries_a_plugin_answers_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    // The requested path picks the answer: one entry each, good or broken.
    let answers = [
        ("good", entry_json("a.txt", "/w/a.txt", "file", 3)),
        (
            "escape",
            entry_json("../../etc/passwd", "/w/../../etc/passwd", "file", 3),
        ),
        ("nested", entry_json("a/b", "/w/a/b", "file", 3)),
        ("dot", entry_json("..", "/w/..", "dir", 0)),
        ("negative", entry_json("a.txt", "/w/a.txt", "file", -5)),
        ("kind", entry_json("a.txt", "/w/a.txt", "socketish", 3)),
        ("elsewhere", entry_json("a.txt", "/w/b.txt", "file", 3)),
    ];
    let cases: String = answers
        .iter()
        .map(|(path, entry)| {
            format!(
                "*'\"path\":\"{path}\"'*) echo \"{{\\\"type\\\":\\\"response\\\",\\\"id\\\":$id,\\\"result\\\":{{\\\"entries\\\":[{entry}]}}}}\" ;;\n"
            )
        })
        .collect();
    let body = format!(
        r#"{HELLO}while read line; do
{IDS}case "$line" in
*'"op":"sandboxes_connect"'*) echo "{{\"type\":\"response\",\"id\":$id,\"result\":"'{RECORD}'"}}" ;;
{cases}esac
done
"#
    );
    let host = host(dir.path(), &body).await;
    let sandbox = host.connect(&conn(), "s1").await.unwrap();
    let good = sandbox.list_files("good", 1).await.unwrap();
    assert_eq!(good.len(), 1);
    assert_eq!(good[0].name, "a.txt");
    for (path, _) in &answers[1..] {
        let error = sandbox.list_files(path, 1).await.unwrap_err();
        assert_eq!(
            error.code,
            Code::ProviderFailed,
            "{path}: {}",
            error.message
        );
        assert!(
            error.message.contains("files_list"),
            "{path}: {}",
            error.message
        );
    }
    assert_eq!(
        host.record().error,
        None,
        "a bad answer fails its call only"
    );
}
