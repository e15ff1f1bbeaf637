//! Commands (run and stream) and a sandbox's processes.

use super::Client;
use super::error::{ApiError, ClientResult};
use super::events::{EventStream, typed};
use super::types::{CommandEvent, ProcessRecord, items};
use crate::error::engine::Code;
use crate::wire::{self, ALLOWED_SIGNALS, CommandBody, SignalBody, StdinBody};
use base64::Engine as _;
use reqwest::Method;
use serde_json::Value;

/// Refuses any other signal before anything is sent, with the engine's own error for it.
pub(crate) fn check_signal(signal: i32) -> ClientResult<()> {
    if ALLOWED_SIGNALS.contains(&signal) {
        Ok(())
    } else {
        Err(ApiError::from_code(
            Code::InvalidArgument,
            format!("signal {signal} is not allowed: only 15 (SIGTERM) and 9 (SIGKILL) are"),
        )
        .into())
    }
}

impl Client {
    /// `POST .../commands/run`: runs to completion.
    pub async fn run(&self, id: &str, body: &CommandBody) -> ClientResult<super::CommandResult> {
        let answer: wire::CommandResult = self
            .post(&["sandboxes", id, "commands", "run"], body)
            .await?;
        super::CommandResult::from_wire(answer)
    }

    /// `POST .../commands/stream`: the command's events as they happen; the stream ends
    /// after the engine's `end`.
    pub async fn stream(
        &self,
        id: &str,
        body: &CommandBody,
    ) -> ClientResult<EventStream<CommandEvent>> {
        let response = self
            .send(&|c, e| {
                Ok(c.request(
                    e,
                    Method::POST,
                    &["sandboxes", id, "commands", "stream"],
                    &[],
                )?
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .json(body))
            })
            .await?;
        Ok(typed(response, CommandEvent::parse))
    }

    /// `GET .../processes`.
    pub async fn processes(&self, id: &str) -> ClientResult<Vec<ProcessRecord>> {
        let value: Value = self.get(&["sandboxes", id, "processes"], &[]).await?;
        items(value, "processes")
    }

    /// `POST .../processes/:pid/signal`: 15 or 9; any other number is refused here, before
    /// anything is sent.
    pub async fn signal(&self, id: &str, pid: u32, signal: i32) -> ClientResult<()> {
        check_signal(signal)?;
        let pid = pid.to_string();
        let body = SignalBody { signal };
        self.send_post(&["sandboxes", id, "processes", &pid, "signal"], &body)
            .await?;
        Ok(())
    }

    /// `POST .../processes/:pid/stdin`: bytes (sent as `data` when UTF-8, else `data_b64`),
    /// and `close` to close it after them.
    pub async fn write_stdin(
        &self,
        id: &str,
        pid: u32,
        data: &[u8],
        close: bool,
    ) -> ClientResult<()> {
        let pid = pid.to_string();
        let body = match std::str::from_utf8(data) {
            Ok(text) => StdinBody {
                data: (!text.is_empty()).then(|| text.to_owned()),
                data_b64: None,
                close,
            },
            Err(_) => StdinBody {
                data: None,
                data_b64: Some(base64::engine::general_purpose::STANDARD.encode(data)),
                close,
            },
        };
        self.send_post(&["sandboxes", id, "processes", &pid, "stdin"], &body)
            .await?;
        Ok(())
    }

    /// `DELETE .../processes/:pid`.
    pub async fn kill_process(&self, id: &str, pid: u32) -> ClientResult<()> {
        let pid = pid.to_string();
        self.delete(&["sandboxes", id, "processes", &pid], &[])
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_term_and_kill_pass() {
        assert!(check_signal(15).is_ok());
        assert!(check_signal(9).is_ok());
        for refused in [0, 1, 2, 3, 19, -9, 64, i32::MAX] {
            let e = check_signal(refused).unwrap_err();
            let e = e.api().unwrap();
            assert_eq!(e.status, 400);
            assert_eq!(e.type_, "InvalidArgumentError");
            assert!(e.message.contains(&refused.to_string()));
        }
    }

    /// A refused signal never reaches the network: the client has no engine at all here,
    /// and answers the refusal, not a start failure.
    #[tokio::test]
    async fn a_refused_signal_sends_nothing() {
        let dir = std::env::temp_dir().join(format!("svc-client-signal-{}", std::process::id()));
        let client = Client::new(super::super::ClientOptions {
            state_dir: dir,
            autostart: false,
            ..Default::default()
        })
        .unwrap();
        let e = client.signal("sb_x", 1, 2).await.unwrap_err();
        assert_eq!(e.api().unwrap().code, "E4001");
        assert!(client.descriptor().is_none());
    }
}
