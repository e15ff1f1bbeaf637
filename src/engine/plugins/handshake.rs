//! The plugin's greeting: the engine's hello out, the plugin's hello back within the wait,
//! checked (JSON, a hello, our protocol, a provider id) before any call is made.

use super::lines::{Read, read_line};
use super::protocol::{self, Hello};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

pub(super) enum Handshake {
    Eof,
    Wrong(String),
}

pub(super) async fn handshake(
    stdin: &mut ChildStdin,
    reader: &mut BufReader<ChildStdout>,
    idle: Duration,
    wait: Duration,
) -> Result<Hello, Handshake> {
    let ms = wait.as_millis();
    let exchange = async {
        let mut line = protocol::hello(idle.as_millis() as u64).to_string();
        line.push('\n');
        // A plugin that exits at once closes the pipe: that is its EOF below, not an error.
        let _ = stdin.write_all(line.as_bytes()).await;
        let mut answer = Vec::new();
        match read_line(reader, &mut answer).await {
            Ok(Read::Line) => Ok(answer),
            Ok(Read::Eof { .. }) => Err(Handshake::Eof),
            Ok(Read::TooLong) => Err(Handshake::Wrong(
                "its hello is longer than a line may be".into(),
            )),
            Err(e) => Err(Handshake::Wrong(format!("cannot read its stdout: {e}"))),
        }
    };
    let line = tokio::time::timeout(wait, exchange)
        .await
        .map_err(|_| Handshake::Wrong(format!("it did not answer the hello within {ms} ms")))??;
    let value: serde_json::Value = serde_json::from_slice(&line).map_err(|e| {
        Handshake::Wrong(format!(
            "its hello is not JSON ({e}): {}",
            protocol::shown(&line)
        ))
    })?;
    if value.get("type").and_then(|t| t.as_str()) != Some("hello") {
        return Err(Handshake::Wrong(format!(
            "its first message is not a hello: {}",
            protocol::shown(&line)
        )));
    }
    let hello: Hello = serde_json::from_value(value).map_err(|e| {
        Handshake::Wrong(format!(
            "its hello is incomplete ({e}): {}",
            protocol::shown(&line)
        ))
    })?;
    if hello.protocol != protocol::PROTOCOL {
        return Err(Handshake::Wrong(format!(
            "it speaks plugin protocol {}, this engine speaks protocol {}",
            hello.protocol,
            protocol::PROTOCOL
        )));
    }
    let good_id = !hello.id.is_empty()
        && hello.id.len() <= 64
        && hello
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !good_id {
        return Err(Handshake::Wrong(format!(
            "its id {:?} is not a provider id (1-64 letters, digits, `-`, `_`, `.`)",
            hello.id
        )));
    }
    Ok(hello)
}
