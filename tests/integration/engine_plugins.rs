//! `exec` providers through a real engine (the built `svc` binary): the example plugin
//! `svc-plugin-dir` serving sandboxes, files and commands over plugin protocol version 1,
//! and every fault of `svc-plugin-broken` (linked under the fault's name) survived: the
//! engine keeps serving, the call gets a typed 5xx within the idle limit, or the provider
//! record shows the error. The plugin binaries are built beside `svc` (`cargo build
//! --workspace --bins`).

use crate::engine_cli::Fixture;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use svc::wire::{CONNECTION_HEADER, Connection, Descriptor};

/// The idle limit the engines of these tests use.
const TIMEOUT_MS: u64 = 1500;

fn bin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_svc"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn plugin_bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --workspace --bins`",
        path.display()
    );
    path
}

/// A running engine of the fixture's folder, and how to talk to it.
struct Engine {
    child: Child,
    descriptor: Descriptor,
    http: reqwest::Client,
}

impl Engine {
    fn start(fx: &Fixture, plugins: &str) -> Engine {
        let mut child = fx
            .svc(["provider", "engine", "serve", "--port", "0"])
            .env("SVC_ENGINE_PLUGINS", plugins)
            .env("SVC_ENGINE_PLUGIN_TIMEOUT_MS", TIMEOUT_MS.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("engine listening"), "{line:?}");
        Engine {
            child,
            descriptor: fx.engine(),
            http: reqwest::Client::new(),
        }
    }

    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        provider: &str,
    ) -> reqwest::RequestBuilder {
        let conn = Connection {
            provider: Some(provider.into()),
            ..Connection::default()
        };
        self.request_as(method, path, &conn)
    }

    fn request_as(
        &self,
        method: reqwest::Method,
        path: &str,
        conn: &Connection,
    ) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.descriptor.base_url()))
            .bearer_auth(&self.descriptor.token)
            .header(CONNECTION_HEADER, conn.header_value())
    }

    async fn send(&self, rb: reqwest::RequestBuilder) -> (u16, Value) {
        let resp = rb.send().await.unwrap();
        let status = resp.status().as_u16();
        let body = resp.bytes().await.unwrap();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str, provider: &str) -> (u16, Value) {
        self.send(self.request(reqwest::Method::GET, path, provider))
            .await
    }

    async fn post(&self, path: &str, provider: &str, body: Value) -> (u16, Value) {
        self.send(
            self.request(reqwest::Method::POST, path, provider)
                .json(&body),
        )
        .await
    }

    async fn record(&self, id: &str) -> Value {
        let (status, body) = self.get("/providers", "local").await;
        assert_eq!(status, 200, "{body}");
        body["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no provider {id}: {body}"))
    }

    /// The engine still serves: its health, and the builtin provider.
    async fn still_serves(&self) {
        assert_eq!(self.get("/health", "local").await.0, 200);
        let (status, body) = self.get("/sandboxes", "local").await;
        assert_eq!(status, 200, "{body}");
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn the_example_plugin_serves_sandboxes_files_and_commands() {
    let fx = Fixture::new();
    let engine = Engine::start(&fx, &plugin_bin("svc-plugin-dir").display().to_string());
    let record = engine.record("dir").await;
    assert_eq!(record["kind"], "exec");
    assert_eq!(record["trust"], "environment");
    assert!(record["error"].is_null(), "{record}");
    assert_eq!(
        record["features"],
        json!(["sandboxes", "timeout", "commands", "files"])
    );

    let (status, made) = engine
        .post(
            "/sandboxes",
            "dir",
            json!({"timeout": 120, "envs": {"GREETING": "hi"}}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["provider"], "dir");
    let id = made["sandbox_id"].as_str().unwrap().to_owned();
    let sb = |rest: &str| format!("/sandboxes/{id}{rest}");

    let (status, ran) = engine
        .post(
            &sb("/commands/run"),
            "dir",
            json!({"cmd": "echo $GREETING; echo err >&2; exit 3"}),
        )
        .await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(
        (
            ran["stdout"].as_str(),
            ran["stderr"].as_str(),
            ran["exit_code"].as_i64()
        ),
        (Some("hi\n"), Some("err\n"), Some(3))
    );

    let bytes: Vec<u8> = (0..200 * 1024u32).map(|i| (i % 251) as u8).collect();
    let put = engine
        .request(
            reqwest::Method::PUT,
            &sb("/files/content?path=d/blob.bin"),
            "dir",
        )
        .body(bytes.clone());
    let (status, entry) = engine.send(put).await;
    assert_eq!(status, 200, "{entry}");
    assert_eq!(
        (entry["name"].as_str(), entry["size"].as_u64()),
        (Some("blob.bin"), Some(bytes.len() as u64))
    );
    let back = engine
        .request(
            reqwest::Method::GET,
            &sb("/files/content?path=d/blob.bin"),
            "dir",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(back.status(), 200);
    assert_eq!(back.bytes().await.unwrap().as_ref(), bytes.as_slice());
    let (status, shown) = engine.get(&sb("/files/list?path=d"), "dir").await;
    assert_eq!(status, 200);
    assert_eq!(shown["entries"][0]["name"], "blob.bin");
    for (path, expected) in [
        ("../../etc/passwd", (400, "E4005")),
        ("nothing", (404, "E2004")),
    ] {
        let (status, body) = engine
            .get(&sb(&format!("/files/info?path={path}")), "dir")
            .await;
        assert_eq!((status, code(&body)), expected, "{path}: {body}");
    }

    let stream = engine
        .request(reqwest::Method::POST, &sb("/commands/stream"), "dir")
        .json(&json!({"cmd": "echo one; echo two >&2"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let text = stream.text().await.unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(names.first(), Some(&"start"), "{text}");
    assert!(names.ends_with(&["exit", "end"]), "{text}");
    assert!(
        text.contains(r#"{"data":"one\n"}"#) && text.contains(r#"{"data":"two\n"}"#),
        "{text}"
    );

    let someone_else = Connection {
        provider: Some("dir".into()),
        api_key: Some("someone else".into()),
        ..Connection::default()
    };
    let other = engine.request_as(reqwest::Method::GET, &sb(""), &someone_else);
    let (status, body) = engine.send(other).await;
    assert_eq!(
        (status, code(&body)),
        (404, "E2009"),
        "another account's sandbox is not there"
    );

    let (status, killed) = engine
        .send(engine.request(reqwest::Method::DELETE, &sb(""), "dir"))
        .await;
    assert_eq!(
        (status, killed["status"].as_str()),
        (200, Some("stopped")),
        "{killed}"
    );
    let (status, body) = engine.get(&sb(""), "dir").await;
    assert_eq!((status, code(&body)), (404, "E2009"));
    engine.still_serves().await;
}

/// Links the broken plugin into `folder` under each fault's name.
fn broken_plugins(folder: &Path, faults: &[&str]) {
    std::fs::create_dir_all(folder).unwrap();
    let binary = plugin_bin("svc-plugin-broken");
    for fault in faults {
        std::os::unix::fs::symlink(&binary, folder.join(format!("broken-{fault}"))).unwrap();
    }
}

#[tokio::test]
async fn every_fault_of_the_broken_plugin_is_survived() {
    let fx = Fixture::new();
    broken_plugins(
        &fx.state_dir().join("plugins"),
        &[
            "crash", "garbage", "hang", "silent", "liar", "stray", "mangled", "exit",
        ],
    );
    let began = Instant::now();
    let engine = Engine::start(&fx, "");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "a silent plugin delays the start by its hello wait, no more"
    );
    engine.still_serves().await;

    // Those that never handshook are listed by their file name, with what went wrong.
    for (id, expected) in [
        ("broken-silent", "did not answer the hello within 1500 ms"),
        ("broken-liar", "speaks plugin protocol 2"),
        ("broken-exit", "exited before its hello (status 4)"),
    ] {
        let record = engine.record(id).await;
        assert_eq!(
            (record["kind"].as_str(), record["trust"].as_str()),
            (Some("exec"), Some("user"))
        );
        let error = record["error"].as_str().unwrap_or_default();
        assert!(error.contains(expected), "{id}: {record}");
        let (status, body) = engine.post("/sandboxes", id, json!({})).await;
        assert_eq!((status, code(&body)), (500, "E9001"), "{id}: {body}");
    }

    // Those that handshook fail the call, typed and in time; the engine goes on.
    for (id, expected_code, in_record) in [
        (
            "broken-crash",
            "E9001",
            Some("exited in the middle of a message (status 3)"),
        ),
        ("broken-garbage", "E9001", Some("not JSON")),
        ("broken-stray", "E9001", Some("which the engine never made")),
        ("broken-mangled", "E9001", None),
        ("broken-hang", "E9002", None),
    ] {
        assert!(engine.record(id).await["error"].is_null(), "{id} handshook");
        let asked = Instant::now();
        let (status, body) = engine.post("/sandboxes", id, json!({"timeout": 60})).await;
        assert_eq!((status, code(&body)), (500, expected_code), "{id}: {body}");
        assert!(
            asked.elapsed() < Duration::from_millis(TIMEOUT_MS + 2000),
            "{id}: answered after {:?}",
            asked.elapsed()
        );
        let record = engine.record(id).await;
        match in_record {
            Some(expected) => {
                let error = record["error"].as_str().unwrap_or_default();
                assert!(error.contains(expected), "{id}: {record}");
                let (status, body) = engine.post("/sandboxes", id, json!({})).await;
                assert_eq!(
                    (status, code(&body)),
                    (500, "E9001"),
                    "{id} stays failed until its restart: {body}"
                );
            }
            None => assert!(
                record["error"].is_null(),
                "{id}: only the call failed: {record}"
            ),
        }
        engine.still_serves().await;
    }
}
